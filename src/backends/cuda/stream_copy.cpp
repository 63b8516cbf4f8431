// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/stream_copy.cpp - memcpy with non-temporal stores (stream_copy.hpp).
#include "backends/cuda/stream_copy.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace devctx::detail::cuda {

void stream_copy(void* dst, const void* src, std::size_t bytes) noexcept {
#if defined(__x86_64__)
  // Below this, the fence and the head and tail cost more than the cache traffic saved.
  constexpr std::size_t kMinBytes = 4096;
  if (bytes < kMinBytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  // Up to the destination's next 16-byte boundary with ordinary stores (the streaming stores
  // need it aligned; the loads do not).
  const std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(d) & 15)) & 15;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  // Whole 64-byte runs: four consecutive 16-byte streaming stores fill one write-combining
  // buffer, which goes to memory as one line. SSE2 is part of every x86-64 processor.
  const std::size_t body = bytes & ~std::size_t{63};
  for (std::size_t i = 0; i < body; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  // Streaming stores are weakly ordered: fence them before whatever tells another thread (or
  // the thread that starts the DMA) that the piece is done.
  _mm_sfence();
  std::memcpy(d + body, s + body, bytes - body);
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace devctx::detail::cuda
