// SPDX-License-Identifier: Apache-2.0
// K1, K2 and K3 as a devctx user writes them. Each run_* enqueues the kernel and synchronizes,
// so the time measured is the kernel's on the device (data stays on the device between runs).
#include "devctx_rows.hpp"

#include <devctx/devctx.hpp>

#include <cstdlib>
#include <span>

#include "baselines.hpp"

namespace {

constexpr unsigned kReduceBlock = 256;
constexpr unsigned kTile = 16;

// ---- K1: the contract's vector add ---------------------------------------------------------
DEVCTX_KERNEL void vector_add(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = a[i] + b[i];
}

// ---- K2: block reduction, CUDA style (a barrier after the load and after each of 8 steps) ---
DEVCTX_KERNEL void block_reduce(devctx::span<const float> in, devctx::span<float> sums) {
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

// ---- K2: block reduction, block-level form ---------------------------------------------------
DEVCTX_KERNEL void block_reduce_phases(devctx::Block blk, devctx::span<const float> in, devctx::span<float> sums) {
  DEVCTX_SHARED(float, s, kReduceBlock);
  blk.for_each_thread([&](devctx::Thread t) {
    const std::size_t i = blk.global_idx(t).x;
    s[t.x] = i < in.size() ? in[i] : 0.0f;
  });
  for (unsigned stride = kReduceBlock / 2; stride > 0; stride /= 2)
    blk.for_first_threads(stride, [&](devctx::Thread t) { s[t.x] += s[t.x + stride]; });
  blk.single([&] { sums[blk.idx().x] = s[0]; });
}

// ---- K3: tiled matmul, CUDA style (two barriers per tile step) -------------------------------
DEVCTX_KERNEL void matmul_tiled(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                                unsigned n) {
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

// ---- K3: tiled matmul, block-level form --------------------------------------------------------
DEVCTX_KERNEL void matmul_phases(devctx::Block blk, devctx::span<const float> a, devctx::span<const float> b,
                                 devctx::span<float> c, unsigned n) {
  DEVCTX_SHARED(float, as, kTile* kTile);
  DEVCTX_SHARED(float, bs, kTile* kTile);
  auto acc = blk.per_thread<float>(0.0f);
  const std::size_t row0 = std::size_t(blk.idx().y) * kTile, col0 = std::size_t(blk.idx().x) * kTile;
  for (std::size_t k0 = 0; k0 < n; k0 += kTile) {
    blk.for_each_thread([&](devctx::Thread t) {
      const std::size_t row = row0 + t.y, col = col0 + t.x;
      as[t.y * kTile + t.x] = row < n && k0 + t.x < n ? a[row * n + k0 + t.x] : 0.0f;
      bs[t.y * kTile + t.x] = col < n && k0 + t.y < n ? b[(k0 + t.y) * n + col] : 0.0f;
    });
    blk.for_each_thread([&](devctx::Thread t) {
      float sum = acc[t];
      for (unsigned k = 0; k < kTile; ++k) sum += as[t.y * kTile + k] * bs[k * kTile + t.x];
      acc[t] = sum;
    });
  }
  blk.for_each_thread([&](devctx::Thread t) {
    const std::size_t row = row0 + t.y, col = col0 + t.x;
    if (row < n && col < n) c[row * n + col] = acc[t];
  });
}

#include "hand_twins.hpp"

class Runner final : public bench::DevctxRunner {
 public:
  Runner(bench::DevctxForm form, bool checked) : form_(form), ctx_(make_context(checked)) {}

  std::string device_name() const override { return ctx_.name(); }

  void upload_k1(const float* a, const float* b, std::size_t n) override {
    k1_a_ = ctx_.enqueue_create_buffer<float>(n);
    k1_b_ = ctx_.enqueue_create_buffer<float>(n);
    k1_out_ = ctx_.enqueue_create_buffer<float>(n);
    ctx_.enqueue_copy(k1_a_, std::span(a, n));
    ctx_.enqueue_copy(k1_b_, std::span(b, n));
  }
  void run_k1() override {
    const unsigned blocks = unsigned((k1_out_.size() + 255) / 256);
    ctx_.enqueue_function<vector_add>({.grid_dim = blocks, .block_dim = 256}, k1_a_, k1_b_, k1_out_);
    ctx_.synchronize();
  }
  void download_k1(float* out) override { ctx_.enqueue_copy(std::span(out, k1_out_.size()), k1_out_); }

  void upload_k2(const float* in, std::size_t n) override {
    k2_in_ = ctx_.enqueue_create_buffer<float>(n);
    k2_sums_ = ctx_.enqueue_create_buffer<float>(bench::block_count(n));
    ctx_.enqueue_copy(k2_in_, std::span(in, n));
  }
  void run_k2() override {
    const devctx::LaunchConfig cfg{.grid_dim = unsigned(k2_sums_.size()), .block_dim = kReduceBlock};
    if (form_ == bench::DevctxForm::cuda_style)
      ctx_.enqueue_function<block_reduce>(cfg, k2_in_, k2_sums_);
    else if (form_ == bench::DevctxForm::hand_twin)
      ctx_.enqueue_function<block_reduce_hand>(cfg, k2_in_, k2_sums_);
    else
      ctx_.enqueue_function<block_reduce_phases>(cfg, k2_in_, k2_sums_);
    ctx_.synchronize();
  }
  void download_k2(float* sums) override { ctx_.enqueue_copy(std::span(sums, k2_sums_.size()), k2_sums_); }

  void upload_k3(const float* a, const float* b, unsigned n) override {
    const std::size_t count = std::size_t(n) * n;
    k3_n_ = n;
    k3_a_ = ctx_.enqueue_create_buffer<float>(count);
    k3_b_ = ctx_.enqueue_create_buffer<float>(count);
    k3_c_ = ctx_.enqueue_create_buffer<float>(count);
    ctx_.enqueue_copy(k3_a_, std::span(a, count));
    ctx_.enqueue_copy(k3_b_, std::span(b, count));
  }
  void run_k3() override {
    const unsigned tiles = (k3_n_ + kTile - 1) / kTile;
    const devctx::LaunchConfig cfg{.grid_dim = {tiles, tiles}, .block_dim = {kTile, kTile}};
    if (form_ == bench::DevctxForm::cuda_style)
      ctx_.enqueue_function<matmul_tiled>(cfg, k3_a_, k3_b_, k3_c_, k3_n_);
    else if (form_ == bench::DevctxForm::hand_twin)
      ctx_.enqueue_function<matmul_hand>(cfg, k3_a_, k3_b_, k3_c_, k3_n_);
    else
      ctx_.enqueue_function<matmul_phases>(cfg, k3_a_, k3_b_, k3_c_, k3_n_);
    ctx_.synchronize();
  }
  void download_k3(float* c) override { ctx_.enqueue_copy(std::span(c, k3_c_.size()), k3_c_); }

 private:
  bench::DevctxForm form_;
  devctx::DeviceContext ctx_;

  /// The CPU backend - this is the CPU benchmark, also on a machine with a GPU - unless
  /// DEVCTX_DEVICE names a device (DEVCTX_DEVICE=cuda puts the GPU in the table). A checked
  /// runner is always on the CPU (checking mode's backend).
  static devctx::DeviceContext make_context(bool checked) {
    if (checked) return devctx::DeviceContext{devctx::Api::cpu, 0, {.check = true}};
    const char* chosen = std::getenv("DEVCTX_DEVICE");
    if (chosen != nullptr && *chosen != '\0') return devctx::DeviceContext{};
    return devctx::DeviceContext{devctx::Api::cpu};
  }
  devctx::DeviceBuffer<float> k1_a_, k1_b_, k1_out_, k2_in_, k2_sums_, k3_a_, k3_b_, k3_c_;
  unsigned k3_n_ = 0;
};

}  // namespace

std::unique_ptr<bench::DevctxRunner> bench::DevctxRunner::create(DevctxForm form, bool checked) {
  return std::make_unique<Runner>(form, checked);
}
