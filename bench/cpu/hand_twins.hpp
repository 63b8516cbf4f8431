// SPDX-License-Identifier: Apache-2.0
// The CUDA-style K2 and K3 of devctx_rows.cpp with block-level twins written by hand, exactly as
// the fission translator writes them (docs/cpu-backend.md, "Translated kernels"): the benchmark's
// "hand twin" row, which shows what translation reaches whether or not the translator ran on
// devctx_rows.cpp. Included by devctx_rows.cpp inside its anonymous namespace, after kReduceBlock
// and kTile; a header, so the translator leaves these kernels as they are.
#pragma once

// ---- K2 ----
#if !defined(__CUDA_ARCH__)
inline void block_reduce_hand__devctx_twin(devctx::span<const float> in, devctx::span<float> sums) {
  namespace fission = ::devctx::detail::cpu::fission;
  const std::size_t devctx_bx = ::devctx::detail::cpu::tls.block_dim.x;
  DEVCTX_SHARED(float, s, kReduceBlock);
  fission::threads(0, devctx_bx, [&](std::size_t) {
    const unsigned t = devctx::thread_idx().x;
    const std::size_t i = devctx::global_idx().x;
    s[t] = i < in.size() ? in[i] : 0.0f;
  });
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    fission::threads(0, fission::lt_end<unsigned>(stride, devctx_bx), [&](std::size_t) {
      const unsigned t = devctx::thread_idx().x;
      s[t] += s[t + stride];
    });
  }
  const std::size_t devctx_x0 = fission::eq_begin<unsigned>(0, devctx_bx);
  fission::threads(devctx_x0, devctx_x0 + 1, [&](std::size_t) { sums[devctx::block_idx().x] = s[0]; });
}
#endif

DEVCTX_KERNEL void block_reduce_hand(devctx::span<const float> in, devctx::span<float> sums) {
#if !defined(__CUDA_ARCH__)
  if (::devctx::detail::cpu::take_fission_offer(&block_reduce_hand)) [[unlikely]] {
    block_reduce_hand__devctx_twin(in, sums);
    return;
  }
#endif
  DEVCTX_SHARED(float, s, kReduceBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    devctx::barrier();
  }
  if (t == 0) sums[devctx::block_idx().x] = s[0];
}

// ---- K3 ----
#if !defined(__CUDA_ARCH__)
inline void matmul_hand__devctx_twin(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                                     unsigned n) {
  namespace fission = ::devctx::detail::cpu::fission;
  const std::size_t devctx_bx = ::devctx::detail::cpu::tls.block_dim.x;
  DEVCTX_SHARED(float, as, kTile* kTile);
  DEVCTX_SHARED(float, bs, kTile* kTile);
  float* const devctx_pt_acc = fission::per_thread<float>();
  fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
    float acc = 0.0f;
    devctx_pt_acc[devctx_rank] = acc;
  });
  for (unsigned k0 = 0; k0 < n; k0 += kTile) {
    fission::threads(0, devctx_bx, [&](std::size_t) {
      [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
      [[maybe_unused]] const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
      as[ty * kTile + tx] = row < n && k0 + tx < n ? a[std::size_t(row) * n + k0 + tx] : 0.0f;
      bs[ty * kTile + tx] = col < n && k0 + ty < n ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    });
    fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
      [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
      float acc = devctx_pt_acc[devctx_rank];
      for (unsigned k = 0; k < kTile; ++k) acc += as[ty * kTile + k] * bs[k * kTile + tx];
      devctx_pt_acc[devctx_rank] = acc;
    });
  }
  fission::threads(0, devctx_bx, [&](std::size_t devctx_rank) {
    [[maybe_unused]] const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
    [[maybe_unused]] const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
    float acc = devctx_pt_acc[devctx_rank];
    if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
  });
}
#endif

DEVCTX_KERNEL void matmul_hand(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c, unsigned n) {
#if !defined(__CUDA_ARCH__)
  if (::devctx::detail::cpu::take_fission_offer(&matmul_hand)) [[unlikely]] {
    matmul_hand__devctx_twin(a, b, c, n);
    return;
  }
#endif
  DEVCTX_SHARED(float, as, kTile* kTile);
  DEVCTX_SHARED(float, bs, kTile* kTile);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < n; k0 += kTile) {
    as[ty * kTile + tx] = row < n && k0 + tx < n ? a[std::size_t(row) * n + k0 + tx] : 0.0f;
    bs[ty * kTile + tx] = col < n && k0 + ty < n ? b[std::size_t(k0 + ty) * n + col] : 0.0f;
    devctx::barrier();
    for (unsigned k = 0; k < kTile; ++k) acc += as[ty * kTile + k] * bs[k * kTile + tx];
    devctx::barrier();
  }
  if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
}
