// SPDX-License-Identifier: Apache-2.0
// AI example - causal self-attention for one head, the heart of a transformer:
//   out[i] = sum_j p[i][j] * V[j],  p[i] = softmax_j(Q[i] . K[j] / sqrt(d)) over j <= i
// (token i may only look at itself and earlier tokens: "causal").
//
// One block per query token i. The block computes the i+1 scores into shared memory, finds
// their maximum and the sum of their exponentials with tree reductions, then each thread
// produces some of the d outputs. The kernel is written twice:
//   attention_threads: the usual thread-level form, with devctx::barrier() between steps;
//   attention_block:   the block-level form, devctx::Block, where each step is a
//                      blk.for_each_thread(...) phase that ends in a barrier.
// Both give the same results on every backend; on a GPU they run at the same speed, on the
// CPU backend the block-level form runs each phase as a plain loop and is much faster.
//
//   ./06_attention [tokens]    default 512 tokens (at most 1024), head dimension 64
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

constexpr unsigned kMaxTokens = 1024;
constexpr unsigned kDim = 64;       // head dimension d
constexpr unsigned kThreads = 128;  // threads per block (a power of two, for the tree reductions)

// ---- block-level form ----------------------------------------------------------------------
DEVCTX_KERNEL void attention_block(devctx::Block blk, devctx::span<const float> q, devctx::span<const float> k,
                                   devctx::span<const float> v, devctx::span<float> out, float scale) {
  DEVCTX_SHARED(float, scores, kMaxTokens);
  DEVCTX_SHARED(float, red, kThreads);
  // Outside the phases: block-uniform values only (this code runs once per block on the CPU).
  const unsigned i = blk.idx().x;  // the query token
  const unsigned keys = i + 1;     // causal: tokens 0..i
  const unsigned nt = blk.size();

  blk.for_each_thread([&](devctx::Thread t) {  // scores and each thread's running maximum
    float m = -INFINITY;
    for (unsigned j = t.x; j < keys; j += nt) {
      float s = 0.0f;
      for (unsigned c = 0; c < kDim; ++c) s += q[i * kDim + c] * k[j * kDim + c];
      scores[j] = s * scale;
      m = std::fmax(m, scores[j]);
    }
    red[t.x] = m;
  });
  for (unsigned stride = nt / 2; stride > 0; stride /= 2)  // tree reduction: red[0] = max
    blk.for_each_thread([&](devctx::Thread t) {
      if (t.x < stride) red[t.x] = std::fmax(red[t.x], red[t.x + stride]);
    });
  blk.for_each_thread([&](devctx::Thread t) {  // exponentials (nobody writes red[] here)
    for (unsigned j = t.x; j < keys; j += nt) scores[j] = std::exp(scores[j] - red[0]);
  });
  blk.for_each_thread([&](devctx::Thread t) {
    float sum = 0.0f;
    for (unsigned j = t.x; j < keys; j += nt) sum += scores[j];
    red[t.x] = sum;
  });
  for (unsigned stride = nt / 2; stride > 0; stride /= 2)  // red[0] = sum
    blk.for_each_thread([&](devctx::Thread t) {
      if (t.x < stride) red[t.x] += red[t.x + stride];
    });
  blk.for_each_thread([&](devctx::Thread t) {  // weighted sum of the values
    for (unsigned c = t.x; c < kDim; c += nt) {
      float acc = 0.0f;
      for (unsigned j = 0; j < keys; ++j) acc += scores[j] * v[j * kDim + c];
      out[i * kDim + c] = acc / red[0];
    }
  });
}

// ---- thread-level form: the same steps, separated by barriers ------------------------------
DEVCTX_KERNEL void attention_threads(devctx::span<const float> q, devctx::span<const float> k,
                                     devctx::span<const float> v, devctx::span<float> out, float scale) {
  DEVCTX_SHARED(float, scores, kMaxTokens);
  DEVCTX_SHARED(float, red, kThreads);
  const unsigned i = devctx::block_idx().x;
  const unsigned keys = i + 1;
  const unsigned nt = devctx::block_dim().x;
  const unsigned t = devctx::thread_idx().x;

  float m = -INFINITY;
  for (unsigned j = t; j < keys; j += nt) {
    float s = 0.0f;
    for (unsigned c = 0; c < kDim; ++c) s += q[i * kDim + c] * k[j * kDim + c];
    scores[j] = s * scale;
    m = std::fmax(m, scores[j]);
  }
  red[t] = m;
  devctx::barrier();
  for (unsigned stride = nt / 2; stride > 0; stride /= 2) {
    if (t < stride) red[t] = std::fmax(red[t], red[t + stride]);
    devctx::barrier();
  }
  const float max = red[0];
  float sum = 0.0f;
  for (unsigned j = t; j < keys; j += nt) {
    scores[j] = std::exp(scores[j] - max);
    sum += scores[j];
  }
  devctx::barrier();  // everyone has read red[0] before it is overwritten
  red[t] = sum;
  devctx::barrier();
  for (unsigned stride = nt / 2; stride > 0; stride /= 2) {
    if (t < stride) red[t] += red[t + stride];
    devctx::barrier();
  }
  for (unsigned c = t; c < kDim; c += nt) {
    float acc = 0.0f;
    for (unsigned j = 0; j < keys; ++j) acc += scores[j] * v[j * kDim + c];
    out[i * kDim + c] = acc / red[0];
  }
}

int main(int argc, char** argv) try {
  const unsigned tokens = argc > 1 ? unsigned(std::strtoul(argv[1], nullptr, 10)) : 512;
  if (tokens == 0 || tokens > kMaxTokens) {
    std::fprintf(stderr, "tokens must be 1..%u\n", kMaxTokens);
    return 2;
  }
  const std::size_t n = std::size_t(tokens) * kDim;
  const float scale = 1.0f / std::sqrt(float(kDim));

  devctx::DeviceContext ctx;
  std::printf("device: %s:%d  %s\n", devctx::to_string(ctx.api()), ctx.id(), ctx.name().c_str());
  std::printf("causal self-attention: %u tokens, head dimension %u, one block of %u threads per token\n", tokens, kDim,
              kThreads);

  std::vector<float> q(n), k(n), v(n), out_block(n), out_threads(n);
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto* m : {&q, &k, &v})
    for (auto& x : *m) x = dist(rng);

  auto d_q = ctx.enqueue_create_buffer<float>(n);
  auto d_k = ctx.enqueue_create_buffer<float>(n);
  auto d_v = ctx.enqueue_create_buffer<float>(n);
  auto d_out_block = ctx.enqueue_create_buffer<float>(n);
  auto d_out_threads = ctx.enqueue_create_buffer<float>(n);
  ctx.enqueue_copy(d_q, q);
  ctx.enqueue_copy(d_k, k);
  ctx.enqueue_copy(d_v, v);
  const devctx::LaunchConfig cfg{.grid_dim = tokens, .block_dim = kThreads};
  ctx.enqueue_function<attention_block>(cfg, d_q, d_k, d_v, d_out_block, scale);  // warm-up
  const auto e0 = ctx.record_event();
  ctx.enqueue_function<attention_threads>(cfg, d_q, d_k, d_v, d_out_threads, scale);
  const auto e1 = ctx.record_event();
  ctx.enqueue_function<attention_block>(cfg, d_q, d_k, d_v, d_out_block, scale);
  const auto e2 = ctx.record_event();
  ctx.enqueue_copy(out_block, d_out_block);
  ctx.enqueue_copy(out_threads, d_out_threads);
  ctx.synchronize();
  const double threads_ms = devctx::elapsed_ms(e0, e1), block_ms = devctx::elapsed_ms(e1, e2);
  std::printf("  thread-level kernel (devctx::barrier)   %9.3f ms\n", threads_ms);
  std::printf("  block-level kernel  (devctx::Block)     %9.3f ms   (%.1fx the speed of the thread-level form)\n",
              block_ms, threads_ms / block_ms);

  // Host reference in double precision.
  std::size_t wrong = 0;
  double max_diff = 0.0;
  std::vector<double> p(tokens);
  for (unsigned i = 0; i < tokens; ++i) {
    double m = -INFINITY, sum = 0.0;
    for (unsigned j = 0; j <= i; ++j) {
      double s = 0.0;
      for (unsigned c = 0; c < kDim; ++c) s += double(q[i * kDim + c]) * k[j * kDim + c];
      p[j] = s * scale;
      m = std::fmax(m, p[j]);
    }
    for (unsigned j = 0; j <= i; ++j) sum += p[j] = std::exp(p[j] - m);
    for (unsigned c = 0; c < kDim; ++c) {
      double expected = 0.0;
      for (unsigned j = 0; j <= i; ++j) expected += p[j] * v[j * kDim + c];
      expected /= sum;
      for (const float got : {out_block[i * kDim + c], out_threads[i * kDim + c]}) {
        const double diff = std::fabs(got - expected);
        max_diff = std::fmax(max_diff, diff);
        if (!(diff <= 1e-4 + 1e-4 * std::fabs(expected)) && wrong++ < 5)
          std::printf("  out[%u][%u] = %g, host %g\n", i, c, got, expected);
      }
    }
  }
  if (wrong != 0) {
    std::printf("FAILED: %zu outputs differ from the host's attention\n", wrong);
    return 1;
  }
  std::printf("PASSED: both kernels match the host for all %zu outputs (largest difference %.1e)\n", n, max_diff);
  return 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
