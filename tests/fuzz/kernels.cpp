// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/kernels.cpp - the kernels the fuzzers launch: a grid-stride loop, a shared-memory
// reduction with barrier(), a block-level kernel, a warp reduction and a kernel that fails.
// Every kernel linearises its 3-D grid and block so that any launch shape covers the same
// elements; Model::kernel (model.cpp) computes what each must produce.
#include "fuzz/kernels.hpp"

#include <stdexcept>

namespace devctx_fuzz {
namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

DEVCTX_DEVICE inline u64 linear_block() {
  const devctx::Dim3 b = devctx::block_idx(), g = devctx::grid_dim();
  return b.x + u64(g.x) * (b.y + u64(g.y) * b.z);
}

DEVCTX_DEVICE inline u64 thread_rank() {
  const devctx::Dim3 t = devctx::thread_idx(), d = devctx::block_dim();
  return t.x + u64(d.x) * (t.y + u64(d.y) * t.z);
}

DEVCTX_KERNEL void fuzz_scale_add(devctx::span<const u32> in, devctx::span<u32> out, u32 a) {
  const u64 threads = devctx::grid_dim().volume() * devctx::block_dim().volume();
  const u64 n = in.size() < out.size() ? in.size() : out.size();
  for (u64 i = linear_block() * devctx::block_dim().volume() + thread_rank(); i < n; i += threads)
    out[i] = a * in[i] + out[i];
}

DEVCTX_KERNEL void fuzz_block_reduce(devctx::span<const u32> in, devctx::span<u32> out) {
  DEVCTX_SHARED(u32, partial, 1024);
  const u64 per_block = devctx::block_dim().volume();
  const u64 threads = devctx::grid_dim().volume() * per_block;
  const u64 t = thread_rank(), b = linear_block();
  u32 sum = 0;
  for (u64 i = b * per_block + t; i < in.size(); i += threads) sum += in[i];
  partial[t] = sum;
  devctx::barrier();
  // Any block size: pairs (t, t + s) with t a multiple of 2s; every thread reaches every barrier.
  for (u64 s = 1; s < per_block; s *= 2) {
    if (t % (2 * s) == 0 && t + s < per_block) partial[t] += partial[t + s];
    devctx::barrier();
  }
  if (t == 0 && b < out.size()) out[b] = partial[0];
}

DEVCTX_KERNEL void fuzz_block_reverse(devctx::Block blk, devctx::span<const u32> in, devctx::span<u32> out) {
  DEVCTX_SHARED(u32, chunk, 1024);
  const devctx::Dim3 bi = blk.idx(), g = blk.grid();
  const u64 per_block = blk.size();
  const u64 base = (bi.x + u64(g.x) * (bi.y + u64(g.y) * bi.z)) * per_block;
  const u64 m = base < in.size() ? (in.size() - base < per_block ? in.size() - base : per_block) : 0;
  blk.for_each_thread([&](devctx::Thread t) {
    if (t.rank < m) chunk[t.rank] = in[base + t.rank];
  });
  blk.for_each_thread([&](devctx::Thread t) {
    if (t.rank < m && base + t.rank < out.size()) out[base + t.rank] = chunk[m - 1 - t.rank];
  });
}

DEVCTX_KERNEL void fuzz_warp_sum(devctx::span<const u32> in, devctx::span<u32> out) {
  const u64 i = linear_block() * devctx::block_dim().volume() + thread_rank();
  const u32 sum = devctx::warp_sum(i < in.size() ? in[i] : 0u);
  if (devctx::lane_id() == 0 && i / 32 < out.size()) out[i / 32] = sum;
}

DEVCTX_KERNEL void fuzz_fail(u64 bad) {
  const bool with_barrier = (bad >> 32) != 0;
  if (with_barrier) devctx::barrier();
#if !defined(__CUDA_ARCH__)
  if (linear_block() * devctx::block_dim().volume() + thread_rank() == (bad & 0xFFFFFFFFu))
    throw std::runtime_error("fuzz_fail: the planted failure");
#endif
  if (with_barrier) devctx::barrier();
}

template <class In, class Out>
void launch_with(devctx::StreamRef& s, KernelId k, const devctx::LaunchConfig& c, In in, Out out, u64 value) {
  switch (k) {
    case KernelId::scale_add: s.enqueue_function<fuzz_scale_add>(c, in, out, u32(value)); break;
    case KernelId::block_reduce: s.enqueue_function<fuzz_block_reduce>(c, in, out); break;
    case KernelId::block_reverse: s.enqueue_function<fuzz_block_reverse>(c, in, out); break;
    case KernelId::warp_sum: s.enqueue_function<fuzz_warp_sum>(c, in, out); break;
    case KernelId::fail: break;
  }
}

}  // namespace

void launch(devctx::StreamRef& stream, KernelId k, const devctx::LaunchConfig& config, const InArg& in,
            const OutArg& out, std::uint64_t value) {
  std::visit(
      [&](const auto& i, const auto& o) {
        auto in_arg = [&]() -> decltype(auto) {
          if constexpr (std::is_pointer_v<std::decay_t<decltype(i)>>)
            return *i;
          else
            return i;
        };
        auto out_arg = [&]() -> decltype(auto) {
          if constexpr (std::is_pointer_v<std::decay_t<decltype(o)>>)
            return *o;
          else
            return o;
        };
        launch_with<decltype(in_arg()), decltype(out_arg())>(stream, k, config, in_arg(), out_arg(), value);
      },
      in, out);
}

void launch_fail(devctx::StreamRef& stream, const devctx::LaunchConfig& config, std::uint64_t value) {
  stream.enqueue_function<fuzz_fail>(config, value);
}

const char* kernel_function_name(KernelId k) {
  switch (k) {
    case KernelId::scale_add: return "fuzz_scale_add";
    case KernelId::block_reduce: return "fuzz_block_reduce";
    case KernelId::block_reverse: return "fuzz_block_reverse";
    case KernelId::warp_sum: return "fuzz_warp_sum";
    case KernelId::fail: return "fuzz_fail";
  }
  return "?";
}

}  // namespace devctx_fuzz
