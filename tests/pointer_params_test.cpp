// SPDX-License-Identifier: Apache-2.0
// tests/pointer_params_test.cpp - kernels with raw pointer parameters (`float* out, const float* a,
// unsigned n`: CUDA's usual form, Mojo's UnsafePointer) launched with DeviceBuffers, slices,
// const buffers, DeviceViews, tensors, spans and nullptr, on every backend; in graphs; and in
// checked launches on the CPU, where a pointer parameter counts as its argument's range.
#include <cstdint>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>
#include <devctx/graph.hpp>

#include "support/test_support.hpp"

namespace {

using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::upload;

DEVCTX_KERNEL void vector_add(float* out, const float* a, const float* b, unsigned n) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[i] = a[i] + b[i];
}

struct Particle {
  float x;
  float v;
};

DEVCTX_KERNEL void step_particles(Particle* p, const float* force, float dt, unsigned n) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= n) return;
  p[i].v += force[i] * dt;
  p[i].x += p[i].v * dt;
}

/// An optional input: nullptr means "add one".
DEVCTX_KERNEL void add_bias(float* out, const float* in, const float* bias, unsigned n) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[i] = in[i] + (bias != nullptr ? bias[i] : 1.0f);
}

/// Pointers and spans in one kernel; the pointer indexed with negative offsets inside its buffer.
DEVCTX_KERNEL void differences(devctx::span<std::int64_t> out, const std::int64_t* middle) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = middle[std::ptrdiff_t(i)] - middle[std::ptrdiff_t(i) - 1];
}

DEVCTX_KERNEL void count_keys(unsigned* bins, const unsigned* keys, unsigned n, unsigned nbins) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) devctx::atomic_add(&bins[keys[i] % nbins], 1);
}

DEVCTX_KERNEL void scale_into(float* out, const float* in, float s, unsigned n) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[i] = in[i] * s;
}

DEVCTX_KERNEL void sum_pairs(devctx::span<const float> in, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[2 * i] + in[2 * i + 1];
}

class PointerParams : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(PointerParams);

TEST_P(PointerParams, BuffersBecomePointersToTheirFirstElement) {
  const unsigned n = 3000;
  const auto a = devctx_test::random_vector<float>(rng, n, -100.0f, 100.0f);
  const auto b = devctx_test::random_vector<float>(rng, n, -100.0f, 100.0f);
  auto da = upload(ctx(), a);
  const auto db = upload(ctx(), b);  // a const buffer: a const float* parameter
  auto out = devctx_test::poisoned_buffer<float>(ctx(), n);
  ctx().enqueue_function<vector_add>(cover(n), out, da, db, n);
  std::vector<float> expect(n);
  for (unsigned i = 0; i < n; ++i) expect[i] = a[i] + b[i];
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), out)));
}

TEST_P(PointerParams, SlicesViewsTensorsAndSpansPointAtTheirFirstElement) {
  const unsigned n = 1000, off = 123, m = 700;
  const auto a = devctx_test::random_vector<float>(rng, n, -10.0f, 10.0f);
  const auto b = devctx_test::random_vector<float>(rng, n, -10.0f, 10.0f);
  auto da = upload(ctx(), a);
  auto db = upload(ctx(), b);
  const auto& cdb = db;
  auto out = devctx_test::poisoned_buffer<float>(ctx(), n);
  // out[off, off + m) = a[0, m) + b[off, off + m): a slice, a span and a slice of a const buffer.
  ctx().enqueue_function<vector_add>(cover(m), out.slice(off, m), da.span(), cdb.slice(off, m), m);
  auto got = download(ctx(), out);
  for (unsigned i = 0; i < n; ++i) {
    if (i >= off && i < off + m)
      EXPECT_EQ(got[i], a[i - off] + b[i]) << i;
    else
      EXPECT_TRUE(devctx_test::same_bits(got[i], devctx_test::poison_value<float>()))
          << "written outside the slice: " << i;
  }
  // A DeviceView (of memory devctx does not own) and a tensor pass as their first element too,
  // and a read-only view (DeviceView<const float>) where the kernel only reads.
  auto view = devctx::wrap_device_memory(ctx(), da.data(), n);
  auto read_only = devctx::wrap_device_memory(ctx(), static_cast<const float*>(db.data()), n);
  using Row = devctx::RowMajor<10, 100>;
  auto out2 = devctx_test::poisoned_buffer<float>(ctx(), n);
  ctx().enqueue_function<vector_add>(cover(n), devctx::tensor(out2, Row{}), view, read_only, n);
  std::vector<float> expect(n);
  for (unsigned i = 0; i < n; ++i) expect[i] = a[i] + b[i];
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), out2)));
}

TEST_P(PointerParams, StructsNullptrAndNegativeOffsets) {
  const unsigned n = 777;
  std::vector<Particle> particles(n);
  const auto xs = devctx_test::random_small_ints<float>(rng, n, -50, 50);
  const auto vs = devctx_test::random_small_ints<float>(rng, n, -8, 8);
  for (unsigned i = 0; i < n; ++i) particles[i] = {xs[i], vs[i]};
  const auto force = devctx_test::random_small_ints<float>(rng, n, -16, 16);
  auto dp = upload(ctx(), particles);
  auto df = upload(ctx(), force);
  ctx().enqueue_function<step_particles>(cover(n, 128), dp, df, 0.5f, n);
  const auto got = download(ctx(), dp);
  for (unsigned i = 0; i < n; ++i) {
    const float v = vs[i] + force[i] * 0.5f, x = xs[i] + v * 0.5f;  // halves of small integers: exact
    ASSERT_EQ(got[i].v, v) << i;
    ASSERT_EQ(got[i].x, x) << i;
  }

  auto in = upload(ctx(), xs);
  auto bias = upload(ctx(), vs);
  auto out = devctx_test::poisoned_buffer<float>(ctx(), n);
  ctx().enqueue_function<add_bias>(cover(n), out, in, nullptr, n);
  std::vector<float> expect(n);
  for (unsigned i = 0; i < n; ++i) expect[i] = xs[i] + 1.0f;
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), out)));
  ctx().enqueue_function<add_bias>(cover(n), out, in, bias, n);
  for (unsigned i = 0; i < n; ++i) expect[i] = xs[i] + vs[i];
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), out)));

  const auto values = devctx_test::random_vector<std::int64_t>(rng, n, -1000000000000, 1000000000000);
  auto dv = upload(ctx(), values);
  auto diff = devctx_test::poisoned_buffer<std::int64_t>(ctx(), n - 1);
  const auto& cdv = dv;
  ctx().enqueue_function<differences>(cover(n - 1), diff, cdv.slice(1, n - 1));
  std::vector<std::int64_t> want(n - 1);
  for (unsigned i = 0; i + 1 < n; ++i) want[i] = values[i + 1] - values[i];
  EXPECT_TRUE(devctx_test::all_equal(want, download(ctx(), diff)));
}

TEST_P(PointerParams, AtomicsThroughPointersAndGraphUpdates) {
  const unsigned n = 4096, nbins = 37;
  const auto keys = devctx_test::random_vector<unsigned>(rng, n, 0u, 1u << 30);
  auto dk = upload(ctx(), keys);
  auto bins = upload(ctx(), std::vector<unsigned>(nbins, 0u));
  std::vector<unsigned> expect(nbins, 0u);
  for (unsigned k : keys) ++expect[k % nbins];
  ctx().enqueue_function<count_keys>(cover(n), bins, dk, n, nbins);
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx(), bins)));

  // Recorded once, replayed twice, its pointer arguments updated in between.
  const auto a = devctx_test::random_vector<float>(rng, n, -4.0f, 4.0f);
  auto in = upload(ctx(), a);
  auto out1 = devctx_test::poisoned_buffer<float>(ctx(), n);
  auto out2 = devctx_test::poisoned_buffer<float>(ctx(), n);
  devctx::Graph g = devctx::Graph::record(ctx(), [&](devctx::StreamRef s) {
    s.enqueue_function<scale_into>(cover(n), out1, in, 2.0f, n);
  });
  g.enqueue(ctx());
  g.update_kernel<scale_into>(0, cover(n), out2, in, -3.0f, n);
  g.enqueue(ctx());
  std::vector<float> e1(n), e2(n);
  for (unsigned i = 0; i < n; ++i) e1[i] = a[i] * 2.0f, e2[i] = a[i] * -3.0f;
  EXPECT_TRUE(devctx_test::all_equal(e1, download(ctx(), out1)));
  EXPECT_TRUE(devctx_test::all_equal(e2, download(ctx(), out2)));
}

// ---- checking mode (the CPU backend) ---------------------------------------------------------------

bool cpu_requested() {
  for (devctx::Api api : devctx_test::requested_backends())
    if (api == devctx::Api::cpu) return true;
  return false;
}

TEST(PointerParamsChecked, WritesThroughAPointerCountAsWritten) {
  if (!cpu_requested()) GTEST_SKIP() << "the CPU backend is not among DEVCTX_TEST_BACKENDS";
  auto rng = devctx_test::test_rng();
  devctx::DeviceContext ctx{devctx::Api::cpu, 0, {.check = true}};
  const unsigned n = 512;
  const auto a = devctx_test::random_small_ints<float>(rng, n, -100, 100);
  auto in = upload(ctx, a);
  // Created by the checked context and never copied to: only the kernel's writes through its
  // float* parameter initialise it, and the span<const float> reads of the next kernel must not
  // be reported as reads of uninitialised memory.
  auto mid = ctx.enqueue_create_buffer<float>(n);
  auto out = devctx_test::poisoned_buffer<float>(ctx, n / 2);
  ctx.enqueue_function<scale_into>(cover(n, 64), mid, in, 3.0f, n);
  ctx.enqueue_function<sum_pairs>(cover(n / 2, 64), mid, out);
  std::vector<float> expect(n / 2);
  for (unsigned i = 0; i < n / 2; ++i) expect[i] = a[2 * i] * 3.0f + a[2 * i + 1] * 3.0f;
  EXPECT_TRUE(devctx_test::all_equal(expect, download(ctx, out)));

  // Atomics through a pointer parameter are checked and named by the argument it came from:
  // counters nobody zeroed are read by the first atomic_add.
  const auto keys = devctx_test::random_vector<unsigned>(rng, n, 0u, 1000u);
  auto dk = upload(ctx, keys);
  auto bins = ctx.enqueue_create_buffer<unsigned>(8);
  ctx.enqueue_function<count_keys>(cover(n, 64), bins, dk, n, 8u);
  const auto e = devctx_test::error_of([&] { ctx.synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), devctx::Errc::check_failed);
  EXPECT_NE(std::string(e->what()).find("read of uninitialised device memory"), std::string::npos) << e->what();
  EXPECT_NE(std::string(e->what()).find("argument 1 (unsigned int*)"), std::string::npos) << e->what();
  // Zeroed, the same launch counts every key.
  ctx.enqueue_memset(bins, 0u);
  ctx.enqueue_function<count_keys>(cover(n, 64), bins, dk, n, 8u);
  std::vector<unsigned> want(8, 0u);
  for (unsigned k : keys) ++want[k % 8];
  EXPECT_TRUE(devctx_test::all_equal(want, download(ctx, bins)));
}

}  // namespace
