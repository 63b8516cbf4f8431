// SPDX-License-Identifier: Apache-2.0
// tests/trace/trace_program.cpp - the scripted program of the trace tests (trace_program.hpp).
// It holds kernels: nvcc compiles it when devctx has CUDA.
#include "trace_program.hpp"

#include <span>

#include "support/test_kernels.hpp"

namespace trace_names {
namespace {
DEVCTX_KERNEL void scoped_kernel(devctx::span<int> x) {
  if (devctx::global_idx().x < x.size()) x[devctx::global_idx().x] = 1;
}
}  // namespace
template <class T>
DEVCTX_KERNEL void templated_kernel(devctx::span<T> x) {
  if (devctx::global_idx().x < x.size()) x[devctx::global_idx().x] = T(3);
}
}  // namespace trace_names

namespace {
DEVCTX_KERNEL void top_scoped_kernel(devctx::span<int> x) {
  if (devctx::global_idx().x < x.size()) x[devctx::global_idx().x] = 2;
}
}  // namespace

namespace devctx_test {

std::vector<std::string> scoped_kernel_names(devctx::DeviceContext& ctx) {
  auto d = ctx.enqueue_create_buffer<int>(64);
  devctx::trace::clear();
  devctx::trace::start();
  ctx.enqueue_function<trace_names::scoped_kernel>({.grid_dim = 1, .block_dim = 64}, d);
  ctx.enqueue_function<top_scoped_kernel>({.grid_dim = 1, .block_dim = 64}, d);
  ctx.enqueue_function<trace_names::templated_kernel<int>>({.grid_dim = 1, .block_dim = 64}, d);
  ctx.synchronize();
  devctx::trace::stop();
  std::vector<std::string> names;
  for (const auto& op : devctx::trace::operations())
    if (op.kind == devctx::trace::Kind::kernel) names.push_back(op.name);
  return names;
}

ProgramResult run_trace_program(devctx::DeviceContext& ctx, std::mt19937_64& rng) {
  using devctx::trace::Direction;
  using devctx::trace::Kind;
  ProgramResult r;
  r.n = std::uniform_int_distribution<std::size_t>(1000, 5000)(rng);
  r.block = 128;
  r.grid = unsigned((r.n + r.block - 1) / r.block);
  const std::uint64_t bytes = r.n * sizeof(std::uint32_t);
  std::uniform_int_distribution<std::uint32_t> value(0, 1u << 20);
  const std::uint32_t add = value(rng), mul = value(rng) | 1u, plus = value(rng), fill = value(rng);
  auto& e = r.expected;

  auto h = ctx.enqueue_create_host_buffer<std::uint32_t>(r.n);
  e.push_back({Kind::allocate, "create_host_buffer", 1, bytes, Direction::none, false, true});
  auto d = ctx.enqueue_create_buffer<std::uint32_t>(r.n);
  e.push_back({Kind::allocate, "create_buffer", 1, bytes});
  auto d2 = ctx.enqueue_create_buffer<std::uint32_t>(r.n);
  e.push_back({Kind::allocate, "create_buffer", 1, bytes});
  std::vector<std::uint32_t> input(r.n), down(r.n, 0xDEADBEEFu), copied(r.n, 0xDEADBEEFu);
  for (auto& x : input) x = value(rng);
  std::vector<std::uint32_t> pinned_input(r.n);
  for (auto& x : pinned_input) x = value(rng);
  ctx.synchronize();
  e.push_back({Kind::synchronize, "synchronize", 1, 0});
  for (std::size_t i = 0; i < r.n; ++i) h[i] = pinned_input[i];

  ctx.enqueue_copy(d, h);
  e.push_back({Kind::copy, "copy HtoD", 1, bytes, Direction::host_to_device, false});
  ctx.enqueue_copy(d2, std::span<const std::uint32_t>(input));
  e.push_back({Kind::copy, "copy HtoD", 1, bytes, Direction::host_to_device, true});
  auto s = ctx.create_stream();
  ctx.enqueue_function<add_kernel>({.grid_dim = r.grid, .block_dim = r.block}, d, add);  // d = pinned_input + add
  e.push_back({Kind::kernel, "add_kernel", 1, 0});
  const auto after_add = ctx.record_event();
  e.push_back({Kind::record_event, "record_event", 1, 0});
  s.enqueue_wait_for(after_add);
  e.push_back({Kind::wait, "wait_for", 2, 0});
  s.enqueue_function<affine_kernel>({.grid_dim = r.grid, .block_dim = r.block}, d, d2, mul, plus);  // d2 = d * mul + plus
  e.push_back({Kind::kernel, "affine_kernel", 2, 0});
  const auto after_affine = s.record_event();
  e.push_back({Kind::record_event, "record_event", 2, 0});
  // Host waits for events: on the track of the stream that recorded the (last) event.
  after_affine.synchronize();
  e.push_back({Kind::synchronize, "Event::synchronize", 2, 0});
  const double kernels_ms = devctx::elapsed_ms(after_add, after_affine);
  e.push_back({Kind::synchronize, "elapsed_ms", 2, 0});
  ctx.enqueue_wait_for(after_affine);
  e.push_back({Kind::wait, "wait_for", 1, 0});
  ctx.enqueue_copy(h, d2);
  e.push_back({Kind::copy, "copy DtoH", 1, bytes, Direction::device_to_host, false});
  ctx.enqueue_copy(std::span<std::uint32_t>(down), d);
  e.push_back({Kind::copy, "copy DtoH", 1, bytes, Direction::device_to_host, true});
  {
    auto d3 = ctx.enqueue_create_buffer<std::uint32_t>(r.n);
    e.push_back({Kind::allocate, "create_buffer", 1, bytes});
    ctx.enqueue_copy(d3, d2);
    e.push_back({Kind::copy, "copy DtoD", 1, bytes, Direction::device_to_device, false});
    ctx.enqueue_memset(d3, fill);
    e.push_back({Kind::fill, "memset", 1, bytes});
    ctx.enqueue_copy(d2, d3);
    e.push_back({Kind::copy, "copy DtoD", 1, bytes, Direction::device_to_device, false});
  }  // d3's memory is freed in stream order
  e.push_back({Kind::free, "free", 1, bytes});
  ctx.synchronize();
  e.push_back({Kind::synchronize, "synchronize", 1, 0});
  ctx.enqueue_copy(std::span<std::uint32_t>(copied), h);
  e.push_back({Kind::copy, "copy HtoH", 1, bytes, Direction::host_to_host, true});
  auto back = ctx.enqueue_create_host_buffer<std::uint32_t>(r.n);
  e.push_back({Kind::allocate, "create_host_buffer", 1, bytes, Direction::none, false, true});
  ctx.enqueue_copy(back, d2);
  e.push_back({Kind::copy, "copy DtoH", 1, bytes, Direction::device_to_host, false});
  ctx.synchronize_device();
  e.push_back({Kind::synchronize, "synchronize_device", 1, 0});

  r.values_ok = kernels_ms >= 0;
  if (!r.values_ok) r.first_bad = "elapsed_ms(after_add, after_affine) = " + std::to_string(kernels_ms);
  auto check = [&](const char* what, std::size_t i, std::uint32_t got, std::uint32_t want) {
    if (got == want || !r.values_ok) return;
    r.values_ok = false;
    r.first_bad = std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(got) + ", expected " +
                  std::to_string(want);
  };
  for (std::size_t i = 0; i < r.n; ++i) {
    const std::uint32_t added = pinned_input[i] + add;
    check("downloaded d", i, down[i], added);
    check("HostBuffer after affine_kernel", i, h[i], added * mul + plus);
    check("host copy of the HostBuffer", i, copied[i], added * mul + plus);
    check("memset buffer copied back", i, back[i], fill);
  }
  // The buffers' memory is freed as they go, in reverse order of declaration: back, d2, d, h.
  e.push_back({Kind::free, "free", 1, bytes, Direction::none, false, true});
  e.push_back({Kind::free, "free", 1, bytes});
  e.push_back({Kind::free, "free", 1, bytes});
  e.push_back({Kind::free, "free", 1, bytes, Direction::none, false, true});
  return r;
}

}  // namespace devctx_test
