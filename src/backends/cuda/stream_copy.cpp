// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/stream_copy.cpp - host copies for staging (stream_copy.hpp).
#include "backends/cuda/stream_copy.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DEVCTX_STREAM_COPY_AVX512 1
#include <immintrin.h>
#endif

namespace devctx::detail::cuda {
namespace {

/// Below this the fence and the unaligned head and tail cost more than the traffic saved.
constexpr std::size_t kMinStreamBytes = 4096;

#if defined(DEVCTX_STREAM_COPY_AVX512)
/// The body: 64-byte loads (any alignment) and 64-byte stores, streaming or not, to a 64-byte
/// aligned `d`, four lines per step, the source prefetched `ahead` bytes ahead with the
/// non-temporal hint when `ahead` is not 0; `bytes` a multiple of 64. Compiled for AVX-512F
/// only, called only where the processor has it.
template <bool Streaming>
__attribute__((target("avx512f"))) void lines_avx512(std::byte* d, const std::byte* s, std::size_t bytes,
                                                     std::size_t ahead) noexcept {
  std::size_t i = 0;
  for (; i + 256 <= bytes; i += 256) {
    if (ahead != 0) {
      // Prefetches never fault: past the end of the source they are dropped.
      const char* p = reinterpret_cast<const char*>(s + i + ahead);
      _mm_prefetch(p, _MM_HINT_NTA);
      _mm_prefetch(p + 64, _MM_HINT_NTA);
      _mm_prefetch(p + 128, _MM_HINT_NTA);
      _mm_prefetch(p + 192, _MM_HINT_NTA);
    }
    const __m512i a = _mm512_loadu_si512(s + i);
    const __m512i b = _mm512_loadu_si512(s + i + 64);
    const __m512i c = _mm512_loadu_si512(s + i + 128);
    const __m512i e = _mm512_loadu_si512(s + i + 192);
    if constexpr (Streaming) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), a);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 64), b);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 128), c);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 192), e);
    } else {
      _mm512_store_si512(d + i, a);
      _mm512_store_si512(d + i + 64, b);
      _mm512_store_si512(d + i + 128, c);
      _mm512_store_si512(d + i + 192, e);
    }
  }
  for (; i < bytes; i += 64) {
    if constexpr (Streaming) _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
    else _mm512_store_si512(d + i, _mm512_loadu_si512(s + i));
  }
  // Streaming stores are weakly ordered: fence them before anything that tells another thread
  // (or, through it, the DMA engine) that the bytes are there.
  if constexpr (Streaming) _mm_sfence();
}
#endif

}  // namespace

bool stream_copy_available() noexcept {
#if defined(DEVCTX_STREAM_COPY_AVX512)
  static const bool available = __builtin_cpu_supports("avx512f") != 0;
  return available;
#else
  return false;
#endif
}

void stream_copy(void* dst, const void* src, std::size_t bytes, HostCopyStyle style) noexcept {
#if defined(DEVCTX_STREAM_COPY_AVX512)
  if ((style.streaming_stores || style.prefetch_bytes != 0) && bytes >= kMinStreamBytes && stream_copy_available()) {
    auto* d = static_cast<std::byte*>(dst);
    const auto* s = static_cast<const std::byte*>(src);
    // Ordinary stores up to the destination's next 64-byte boundary and after its last one.
    const std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(d) & 63)) & 63;
    const std::size_t body = (bytes - head) & ~std::size_t{63};
    std::memcpy(d, s, head);
    if (style.streaming_stores) lines_avx512<true>(d + head, s + head, body, style.prefetch_bytes);
    else lines_avx512<false>(d + head, s + head, body, style.prefetch_bytes);
    std::memcpy(d + head + body, s + head + body, bytes - head - body);
    return;
  }
#endif
  (void)style;
  std::memcpy(dst, src, bytes);
}

}  // namespace devctx::detail::cuda
