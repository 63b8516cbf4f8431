// SPDX-License-Identifier: Apache-2.0
// tests/checking_test.cpp - checking mode (DEVCTX_CHECK=1 or ContextOptions{.check = true}) on
// the CPU backend, through the public API. For every check: kernels with a planted bug, whose
// report must name the kernel, block, thread(s), memory and index, and clean twins of the same
// kernels, which must run unreported and compute the right result (a false report is as bad as
// a missed one). docs/checking.md quotes the messages these tests produce
// (DEVCTX_TEST_PRINT_ERRORS=1 prints them).
#include "support/test_support.hpp"

#include <sys/resource.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

using devctx::Api;
using devctx::DeviceContext;
using devctx::Errc;
using devctx_test::download;
using devctx_test::error_of;
using devctx_test::ScopedEnv;
using devctx_test::upload;
using testing::HasSubstr;

// ---- kernels ---------------------------------------------------------------------------------------

/// out[i] = in[i + shift]: shift = 1 reads one past the end of `in` in the last thread.
DEVCTX_KERNEL void shift_copy(devctx::span<const float> in, devctx::span<float> out, unsigned shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i + shift];
}

/// Writes element i + 1 of the subspan after `offset`: one past the subspan's end in the last thread.
DEVCTX_KERNEL void write_subspan(devctx::span<int> data, unsigned offset, unsigned count, unsigned past) {
  const std::size_t i = devctx::global_idx().x;
  const devctx::span<int> part = data.subspan(offset, count);
  if (i < count) part[i + past] = int(i);
}

/// Reverses each block's part through a shared array; `bug` = 1 reads s[64] in thread 0.
DEVCTX_KERNEL void reverse_blocks(devctx::span<const int> in, devctx::span<int> out, unsigned bug) {
  DEVCTX_SHARED(int, s, 64);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = in[i];
  devctx::barrier();
  // Through a pointer, as a helper would index it (the planted bugs index past arrays on purpose:
  // UBSan's -fsanitize=bounds would stop a sanitizer build at s[64] itself, before checking mode).
  const int* p = s;
  out[i] = p[63 - t + bug];
}

constexpr unsigned kTile = 8;
using TileRow = float[kTile];

/// Transposes 8x8 tiles through a two-dimensional shared array; `bug` = 1 reads one element past
/// each row, which for the last row is past the array's end.
DEVCTX_KERNEL void transpose_tiles(devctx::span<const float> in, devctx::span<float> out, unsigned bug) {
  DEVCTX_SHARED(TileRow, tile, kTile);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const std::size_t base = std::size_t(devctx::block_idx().x) * kTile * kTile;
  tile[ty][tx] = in[base + ty * kTile + tx];
  devctx::barrier();
  const float* flat = tile[0];  // the rows end to end (a pointer: see reverse_blocks)
  out[base + ty * kTile + tx] = flat[tx * kTile + ty + bug];
}

/// Writes `before` elements before the start of a 64-int shared array (before > 0), or else at
/// column `col` of row 3 of a 2-D one (col 8: past the row, into the next): memory checking mode
/// does not guard.
DEVCTX_KERNEL void shared_outside_unguarded(devctx::span<int> out, int before, unsigned col) {
  DEVCTX_SHARED(int, s, 64);
  DEVCTX_SHARED(TileRow, tile, kTile);
  const unsigned t = devctx::thread_idx().x;
  s[t] = int(t);
  tile[t / kTile][t % kTile] = 0.0f;
  devctx::barrier();
  if (t == 0) {
    int* start = s;  // pointers: the compiler sees no constant index outside the arrays
    float* row = tile[3];
    if (before > 0)
      start[-before] = 7;
    else
      row[col] = 1.0f;  // row[8] is tile[4][0]
  }
  devctx::barrier();
  out[t] = s[t] + int(tile[t / kTile][t % kTile]);
}

/// Rotates each block's part through dynamic shared memory; `extra` = 1 reads one past its end
/// in the block's last thread.
DEVCTX_KERNEL void rotate_dynamic(devctx::span<const unsigned> in, devctx::span<unsigned> out, unsigned extra) {
  const devctx::span<unsigned> s = devctx::dynamic_shared<unsigned>();
  const unsigned t = devctx::thread_idx().x, n = devctx::block_dim().x;
  const std::size_t i = devctx::global_idx().x;
  s[t] = in[i];
  devctx::barrier();
  out[i] = s[extra != 0 ? t + 1 : (t + 1) % n];
}

// Raw pointer parameters (CUDA's `float* out, const float* in`): checking mode bounds them by the
// device allocation they point into (guard pages around checked device memory).

/// out[i] = in[i + shift]: shift = 1 reads one past the end of in's buffer in the last thread.
DEVCTX_KERNEL void shift_through_pointers(float* out, const float* in, unsigned n, unsigned shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[i] = in[i + shift];
}

/// out[i + shift] = in[i]: shift = 1 writes one past the end of out's buffer in the last thread.
DEVCTX_KERNEL void store_shifted(float* out, const float* in, unsigned n, unsigned shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[i + shift] = in[i];
}

/// out[i - back] = in[i]: back > 0 writes before the start of out's buffer in thread 0.
DEVCTX_KERNEL void store_back(int* out, const int* in, unsigned n, unsigned back) {
  const auto i = std::ptrdiff_t(devctx::global_idx().x);
  if (i < std::ptrdiff_t(n)) out[i - std::ptrdiff_t(back)] = in[i];
}

/// The same for single bytes: shift = 1 reads the first byte past in's buffer.
DEVCTX_KERNEL void shift_bytes(std::uint8_t* out, const std::uint8_t* in, unsigned n, unsigned shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[i] = std::uint8_t(in[i + shift] + 1);
}

/// part[i] = base + i for i < count: a count larger than the slice passed for `part` writes past it.
DEVCTX_KERNEL void fill_part(float* part, unsigned count, float base) {
  const std::size_t i = devctx::global_idx().x;
  if (i < count) part[i] = base + float(i);
}

/// out[i] = a[i] + b[i + shift] (a and b may point into one buffer).
DEVCTX_KERNEL void add_shifted(float* out, const float* a, const float* b, unsigned n, unsigned shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) out[i] = a[i] + b[i + shift];
}

/// A pointer that is no parameter of its own: carried in a struct argument.
struct Lookup {
  const float* values;
  unsigned count;
};
DEVCTX_KERNEL void gather(devctx::span<float> out, Lookup table, unsigned shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = table.values[i + shift];
}

/// Each thread publishes its value, then reads its neighbour's after a barrier and again after a
/// second one. Thread `leaver` returns between the two barriers.
DEVCTX_KERNEL void leave_between_barriers(devctx::span<int> out, unsigned leaver) {
  DEVCTX_SHARED(int, s, 64);
  const unsigned t = devctx::thread_idx().x;
  s[t] = int(t) * 3;
  devctx::barrier();
  const int neighbour = s[(t + 1) % 64];
  if (t == leaver) return;
  devctx::barrier();
  out[devctx::global_idx().x] = neighbour + s[(t + 2) % 64];
}

inline constexpr unsigned kSplitLine = __LINE__ + 8;  // the line of the first barrier() below

/// Threads below `split` wait at one barrier() call, the others at another.
DEVCTX_KERNEL void split_barriers(devctx::span<int> out, unsigned split) {
  DEVCTX_SHARED(int, s, 64);
  const unsigned t = devctx::thread_idx().x;
  s[t] = int(t);
  if (t < split)
    devctx::barrier();
  else
    devctx::barrier();
  out[devctx::global_idx().x] = s[63 - t];
}

/// Block sums; threads past the end of `in` return before the first barrier (the usual guard).
DEVCTX_KERNEL void guarded_block_sums(devctx::span<const int> in, devctx::span<long long> sums) {
  DEVCTX_SHARED(long long, s, 64);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  if (i >= in.size()) return;
  s[t] = in[i];
  devctx::barrier();
  const std::size_t first = std::size_t(devctx::block_idx().x) * 64;
  const unsigned active = unsigned(std::min<std::size_t>(64, in.size() - first));
  for (unsigned stride = 32; stride > 0; stride /= 2) {
    if (t < stride && t + stride < active) s[t] += s[t + stride];
    devctx::barrier();
  }
  if (t == 0) sums[devctx::block_idx().x] = s[0];
}

/// Thread 0 adds up its block's shared array; without the barrier it reads the others' elements
/// before they are written.
DEVCTX_KERNEL void sum_in_thread0(devctx::span<const int> in, devctx::span<long long> sums, unsigned with_barrier) {
  DEVCTX_SHARED(int, s, 64);
  const unsigned t = devctx::thread_idx().x;
  s[t] = in[devctx::global_idx().x];
  if (with_barrier != 0) devctx::barrier();
  if (t == 0) {
    long long sum = 0;
    for (unsigned j = 0; j < 64; ++j) sum += s[j];
    sums[devctx::block_idx().x] = sum;
  }
}

/// Block-level form: each thread reads its neighbour's element, in the phase that writes it
/// (`same_phase` = 1, a race) or in the next phase.
DEVCTX_KERNEL void neighbour_phases(devctx::Block blk, devctx::span<const int> in, devctx::span<int> out,
                                    unsigned same_phase) {
  DEVCTX_SHARED(int, s, 64);
  if (same_phase != 0) {
    blk.for_each_thread([&](devctx::Thread t) {
      s[t.x] = in[blk.global_idx(t).x];
      out[blk.global_idx(t).x] = s[(t.x + 1) % 64];
    });
  } else {
    blk.for_each_thread([&](devctx::Thread t) { s[t.x] = in[blk.global_idx(t).x]; });
    blk.for_each_thread([&](devctx::Thread t) { out[blk.global_idx(t).x] = s[(t.x + 1) % 64]; });
  }
}

/// Each thread publishes its value in `a` and copies its neighbour's into `b`; without the first
/// barrier it reads the neighbour's element before (or after) the neighbour writes it.
DEVCTX_KERNEL void shift_in_shared(devctx::span<const int> in, devctx::span<int> out, unsigned with_barrier) {
  DEVCTX_SHARED(int, a, 64);
  DEVCTX_SHARED(int, b, 64);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  a[t] = in[i];
  if (with_barrier != 0) devctx::barrier();
  b[t] = a[(t + 1) % 64];
  devctx::barrier();
  out[i] = b[t];
}

/// Thread t stores into s[t >> shift]: shift = 1 has two threads store into each element.
DEVCTX_KERNEL void pair_store(devctx::span<int> out, unsigned shift) {
  DEVCTX_SHARED(int, s, 64);
  const unsigned t = devctx::thread_idx().x;
  s[t >> shift] = int(t) + 1;
  devctx::barrier();
  out[devctx::global_idx().x] = s[t >> shift];
}

/// Block-level: each thread copies its element through a shared array; `past` = 1 has the last
/// thread store one past the array's end.
DEVCTX_KERNEL void copy_through_shared(devctx::Block blk, devctx::span<const int> in, devctx::span<int> out, unsigned past) {
  DEVCTX_SHARED(int, s, 64);
  int* p = s;  // a pointer: see reverse_blocks
  blk.for_each_thread([&](devctx::Thread t) { p[t.x + (t.x == 63 ? past : 0)] = in[blk.global_idx(t).x]; });
  blk.for_each_thread([&](devctx::Thread t) { out[blk.global_idx(t).x] = s[t.x]; });
}

DEVCTX_DEVICE void publish(int* slots, unsigned t, int v) { slots[t] = v; }
template <class T, std::size_t N>
DEVCTX_DEVICE T neighbour(const T (&slots)[N], unsigned t) {
  return slots[(t + 1) % N];
}

/// shift_in_shared's bug through generic helpers that take the array as int* and as T(&)[N].
DEVCTX_KERNEL void shift_through_helpers(devctx::span<const int> in, devctx::span<int> out, unsigned with_barrier) {
  DEVCTX_SHARED(int, s, 64);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  publish(s, t, in[i]);
  if (with_barrier != 0) devctx::barrier();
  out[i] = neighbour(s, t);
}

/// The even values of each block gathered into a shared list, each thread claiming its slot with
/// atomic_add (the list's order depends on the threads' order, rightly), then summed by thread 0.
DEVCTX_KERNEL void gather_even(devctx::span<const int> in, devctx::span<long long> sums) {
  DEVCTX_SHARED(unsigned, count, 1);
  DEVCTX_SHARED(int, list, 64);
  const unsigned t = devctx::thread_idx().x;
  if (t == 0) count[0] = 0;
  devctx::barrier();
  const int v = in[devctx::global_idx().x];
  if (v % 2 == 0) list[devctx::atomic_add(&count[0], 1u)] = v;
  devctx::barrier();
  if (t == 0) {
    long long sum = 0;
    for (unsigned k = 0; k < count[0]; ++k) sum += list[k];
    sums[devctx::block_idx().x] = sum;
  }
}

/// Every thread stores its index into out[index >> shift]: shift = 0 gives each its own element.
DEVCTX_KERNEL void store_index(devctx::span<unsigned> out, unsigned shift) {
  const unsigned t = devctx::thread_idx().x;
  out[t >> shift] = t;
}

/// Thread 0 of each block stores the block's number into totals[block >> shift].
DEVCTX_KERNEL void store_block(devctx::span<unsigned> totals, unsigned shift) {
  if (devctx::thread_idx().x == 0) totals[devctx::block_idx().x >> shift] = devctx::block_idx().x + 1;
}

DEVCTX_KERNEL void histogram(devctx::span<const unsigned> values, devctx::span<unsigned> counts) {
  const std::size_t i = devctx::global_idx().x;
  if (i < values.size()) devctx::atomic_add(&counts[values[i] % counts.size()], 1u);
}

DEVCTX_KERNEL void scale(devctx::span<const float> in, devctx::span<float> out, float k) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = k * in[i];
}

/// Reads `acc` through a writable span.
DEVCTX_KERNEL void double_into(devctx::span<float> acc, devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = 2.0f * acc[i];
}

DEVCTX_KERNEL void iota(devctx::span<float> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = float(i);
}

/// Adds one to each element: a read-modify-write.
DEVCTX_KERNEL void bump(devctx::span<unsigned> acc) {
  const std::size_t i = devctx::global_idx().x;
  if (i < acc.size()) acc[i] += 1u;
}

/// Writes through the span's pointer rather than through span[i].
DEVCTX_KERNEL void iota_through_pointer(devctx::span<float> out) {
  float* p = out.data();
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) p[i] = float(i);
}

/// Every thread stores `value` into out[0].
DEVCTX_KERNEL void store_same(devctx::span<unsigned> out, unsigned value) { out[0] = value; }

/// Stores `value` into each element.
DEVCTX_KERNEL void store_value(devctx::span<unsigned> out, unsigned value) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = value;
}

/// Copies bytes, reading `in` through a writable span.
DEVCTX_KERNEL void copy_bytes(devctx::span<std::uint8_t> in, devctx::span<std::uint8_t> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i];
}

/// Copies bytes, reading `in` through a read-only span.
DEVCTX_KERNEL void copy_const_bytes(devctx::span<const std::uint8_t> in, devctx::span<std::uint8_t> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i];
}

/// Every block's last thread reads one element past its block's part of `in`.
DEVCTX_KERNEL void read_past_each_block(devctx::span<const unsigned> in, devctx::span<unsigned> out) {
  const unsigned part = devctx::block_dim().x - 1;
  const unsigned t = devctx::thread_idx().x, b = devctx::block_idx().x;
  const devctx::span<const unsigned> mine = in.subspan(b * part, part);
  out[b * devctx::block_dim().x + t] = mine[t];
}

/// Block 0 publishes data[0] behind a fence and a flag; block 1 reads it if it sees the flag.
DEVCTX_KERNEL void publish_through_flag(devctx::span<int> data, devctx::span<unsigned> flag, devctx::span<int> out) {
  if (devctx::thread_idx().x != 0) return;
  if (devctx::block_idx().x == 0) {
    data[0] = 42;
    devctx::memory_fence();
    devctx::atomic_exchange(&flag[0], 1u);
  } else if (devctx::atomic_add(&flag[0], 0u) == 1u) {
    out[0] = data[0];
  }
}

/// One barrier() call, in a helper that both branches call.
DEVCTX_DEVICE void sync_block() { devctx::barrier(); }

DEVCTX_KERNEL void branches_share_a_barrier(devctx::span<int> out) {
  DEVCTX_SHARED(int, s, 64);
  const unsigned t = devctx::thread_idx().x;
  if (t < 32) {
    s[t] = 1;
    sync_block();
  } else {
    s[t] = 2;
    sync_block();
  }
  out[t] = s[63 - t];
}

DEVCTX_DEVICE float first_of(const float* p) { return p[0]; }
DEVCTX_DEVICE float last_of(float (&a)[16]) { return a[15]; }

/// Uses a DEVCTX_SHARED array every way an array is used.
DEVCTX_KERNEL void array_forms(devctx::span<float> out) {
  DEVCTX_SHARED(float, a, 16);
  const unsigned t = devctx::thread_idx().x;
  a[t] = float(t);
  devctx::barrier();
  if (t == 0) {
    float sum = 0.0f;
    for (float v : a) sum += v;  // range-for
    float* p = a;                // decay to a pointer
    const float* q = a + 3;      // pointer arithmetic
    out[0] = sum;
    out[1] = *(&a[2]);  // address of an element
    out[2] = p[4] + *q;
    out[3] = first_of(a) + last_of(a);
    out[4] = float(sizeof(a) / sizeof(a[0]));
  }
}

namespace {

// ---- helpers ---------------------------------------------------------------------------------------

DeviceContext checked_cpu() { return DeviceContext{Api::cpu, 0, {.check = true}}; }

/// The error that synchronize() reports, which must be a checking-mode report.
std::string report_of(DeviceContext& ctx) {
  const auto e = error_of([&] { ctx.synchronize(); });
  if (!e) return "";
  EXPECT_EQ(e->code(), Errc::check_failed) << e->what();
  return e->what();
}

/// A guard-page report as this machine writes it: only x86-64's page faults tell a read from a
/// write; elsewhere the report says "an access".
std::string on_this_cpu(std::string text) {
#if !defined(__x86_64__)
  for (const std::string rw : {": a read ", ": a write "})
    for (auto at = text.find(rw); at != std::string::npos; at = text.find(rw))
      text.replace(at, rw.size(), ": an access ");
#endif
  return text;
}

class Checking : public testing::Test {
 protected:
  DeviceContext ctx = checked_cpu();
  std::mt19937_64 rng = devctx_test::test_rng();
};

// ---- enabling it -------------------------------------------------------------------------------------

TEST(CheckingSwitch, TheOptionAndTheEnvironmentTurnItOn) {
  {
    const ScopedEnv env("DEVCTX_CHECK", nullptr);
    EXPECT_FALSE(DeviceContext{Api::cpu}.checking());
    EXPECT_TRUE(checked_cpu().checking());
  }
  {
    const ScopedEnv env("DEVCTX_CHECK", "1");
    EXPECT_TRUE(DeviceContext{Api::cpu}.checking());
    EXPECT_TRUE(DeviceContext{}.checking() || DeviceContext{}.api() != Api::cpu);
    EXPECT_FALSE((DeviceContext{Api::cpu, 0, {.check = false}}.checking()));  // the option wins
  }
  for (const char* on : {"true", "yes", "on"}) {
    const ScopedEnv env("DEVCTX_CHECK", on);
    EXPECT_TRUE(DeviceContext{Api::cpu}.checking()) << on;
  }
  for (const char* off : {"0", "false", "no", "off", ""}) {
    const ScopedEnv env("DEVCTX_CHECK", off);
    EXPECT_FALSE(DeviceContext{Api::cpu}.checking()) << off;
  }
}

TEST(CheckingSwitch, StreamsOfACheckedContextAreChecked) {
  DeviceContext ctx = DeviceContext{Api::cpu, 0, {.check = true}};
  auto s = ctx.create_stream();
  auto in = s.enqueue_create_buffer<float>(64);
  auto out = s.enqueue_create_buffer<float>(64);
  s.enqueue_function<scale>({.grid_dim = 1, .block_dim = 64}, in, out, 2.0f);
  const auto e = error_of([&] { s.synchronize(); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::check_failed);
  EXPECT_THAT(e->what(), HasSubstr("read of uninitialised device memory"));
}

TEST(CheckingSwitch, EveryRunReportsTheFirstBlocksBug) {
  // Every block has the same bug; the blocks of a checked launch run in order, so block 0's is
  // the one reported, run after run (an unchecked launch spreads blocks over the workers).
  std::mt19937_64 rng = devctx_test::test_rng();
  DeviceContext ctx{Api::cpu, 0, {.check = true}};
  const unsigned blocks = 64, threads = 32;
  const auto values = devctx_test::random_vector<unsigned>(rng, blocks * (threads - 1), 0, 1000);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<unsigned>(blocks * threads);
  for (int run = 0; run < 5; ++run) {
    ctx.enqueue_function<read_past_each_block>({.grid_dim = blocks, .block_dim = threads}, in, out);
    const auto e = error_of([&] { ctx.synchronize(); });
    ASSERT_TRUE(e);
    EXPECT_THAT(e->what(), HasSubstr("failed in block (0, 0, 0), thread (31, 0, 0): out-of-bounds access: index 31"));
  }
}

TEST(CheckingSwitch, ABadValueOfTheVariableIsAnError) {
  for (const char* text : {"2", "1 ", "-1", "maybe"}) {
    const ScopedEnv env("DEVCTX_CHECK", text);
    const auto e = error_of([] { DeviceContext ctx{Api::cpu}; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::invalid_argument);
    EXPECT_THAT(e->what(), HasSubstr("DEVCTX_CHECK"));
    EXPECT_THAT(e->what(), HasSubstr(text));
  }
}

// ---- out-of-bounds indices -----------------------------------------------------------------------------

TEST_F(Checking, AnIndexPastASpansEndIsReportedWithoutDevctxCheckBounds) {
  const auto values = devctx_test::random_vector<float>(rng, 1000, -1.0f, 1.0f);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<float>(1000);
  // Thread 999 (block 3, thread 231) reads in[1000].
  ctx.enqueue_function<shift_copy>({.grid_dim = 4, .block_dim = 256}, in, out, 1u);
  const std::string m = report_of(ctx);
  EXPECT_THAT(m, HasSubstr("kernel 'shift_copy' failed in block (3, 0, 0), thread (231, 0, 0): out-of-bounds "
                           "access: index 1000 of argument 1 (devctx::span<const float>), which has 1000 elements"));
  // The context stays usable, and the clean twin passes.
  ctx.enqueue_function<shift_copy>({.grid_dim = 4, .block_dim = 256}, in, out, 0u);
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx, out)));
}

TEST_F(Checking, AnIndexPastASubspansEndIsReportedAgainstTheSubspan) {
  auto data = ctx.enqueue_create_buffer<int>(100);
  ctx.enqueue_memset(data, -1);
  ctx.enqueue_function<write_subspan>({.grid_dim = 1, .block_dim = 64}, data, 10u, 20u, 1u);
  const std::string m = report_of(ctx);
  EXPECT_THAT(m, HasSubstr("thread (19, 0, 0): out-of-bounds access: index 20 of a span of 20 elements starting at "
                           "element 10 of argument 1 (devctx::span<int>)"));
  ctx.enqueue_function<write_subspan>({.grid_dim = 1, .block_dim = 64}, data, 10u, 20u, 0u);
  const auto got = download(ctx, data);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i >= 10 && i < 30 ? int(i - 10) : -1) << i;
}

// An index past a DEVCTX_SHARED array (a plain T[n]) reaches the guard page that a checked launch
// lays out after it: the fault becomes the launch's report, naming the array and index.
TEST_F(Checking, AnIndexPastASharedArrayIsReportedWithItsName) {
  const auto values = devctx_test::random_vector<int>(rng, 128, -1000, 1000);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<int>(128);
  ctx.enqueue_function<reverse_blocks>({.grid_dim = 2, .block_dim = 64}, in, out, 1u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'reverse_blocks' failed in block (0, 0, 0), thread (0, 0, 0): "
                                        "out-of-bounds access: index 64 of shared array 's', which has 64 elements"));
  ctx.enqueue_function<reverse_blocks>({.grid_dim = 2, .block_dim = 64}, in, out, 0u);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < 128; ++i) ASSERT_EQ(got[i], values[i / 64 * 64 + 63 - i % 64]) << i;
}

TEST_F(Checking, AnIndexPastTheLastRowOfATwoDimensionalSharedArrayIsReported) {
  const auto values = devctx_test::random_vector<float>(rng, 3 * 64, -1.0f, 1.0f);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<float>(values.size());
  const devctx::LaunchConfig cfg{.grid_dim = 3, .block_dim = {kTile, kTile}};
  // The last thread to reach the barrier goes on first: thread (7, 7) reads tile[7][8], element
  // 64 of the array. (tile[3][8] is tile[4][0], inside the array: not caught.)
  ctx.enqueue_function<transpose_tiles>(cfg, in, out, 1u);
  EXPECT_THAT(report_of(ctx), HasSubstr("failed in block (0, 0, 0), thread (7, 7, 0): out-of-bounds access: index 64 "
                                        "of shared array 'tile', which has 64 elements"));
  ctx.enqueue_function<transpose_tiles>(cfg, in, out, 0u);
  const auto got = download(ctx, out);
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t y = 0; y < kTile; ++y)
      for (std::size_t x = 0; x < kTile; ++x)
        ASSERT_EQ(got[b * 64 + y * kTile + x], values[b * 64 + x * kTile + y]) << b << ' ' << y << ' ' << x;
}

TEST_F(Checking, AnIndexPastASharedArrayInABlockLevelPhaseIsReported) {
  const auto values = devctx_test::random_vector<int>(rng, 128, -1000, 1000);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<int>(128);
  ctx.enqueue_function<copy_through_shared>({.grid_dim = 2, .block_dim = 64}, in, out, 1u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'copy_through_shared' failed in block (0, 0, 0), thread (63, 0, 0): "
                                        "out-of-bounds access: index 64 of shared array 's', which has 64 elements"));
  ctx.enqueue_function<copy_through_shared>({.grid_dim = 2, .block_dim = 64}, in, out, 0u);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < 128; ++i) ASSERT_EQ(got[i], values[i]) << i;
}

TEST_F(Checking, AnIndexPastDynamicSharedMemoryIsReported) {
  const auto values = devctx_test::random_vector<unsigned>(rng, 256, 0, 1u << 30);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<unsigned>(256);
  const auto cfg = devctx_test::cover(256, 64, 64 * sizeof(unsigned));
  ctx.enqueue_function<rotate_dynamic>(cfg, in, out, 1u);
  EXPECT_THAT(report_of(ctx), HasSubstr("block (0, 0, 0), thread (63, 0, 0): out-of-bounds access: index 64 of "
                                        "dynamic shared memory, which has 64 elements"));
  ctx.enqueue_function<rotate_dynamic>(cfg, in, out, 0u);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < 256; ++i) ASSERT_EQ(got[i], values[i / 64 * 64 + (i + 1) % 64]) << i;
}

// ---- raw pointer parameters: bounded by the allocation they point into ------------------------------------
// A checked context places each device buffer so that it ends where a page ends, with an
// inaccessible guard page after it and another before its pages (docs/checking.md): an access
// through a pointer past the end faults at once, and the fault becomes the launch's report.

TEST_F(Checking, AReadPastABufferThroughAConstPointerIsReported) {
  const unsigned n = 1000;  // 4000 bytes: not a whole page, and still exact at the end
  const auto values = devctx_test::random_vector<float>(rng, n, -1.0f, 1.0f);
  auto in = upload(ctx, values);
  auto out = devctx_test::poisoned_buffer<float>(ctx, n);
  ctx.enqueue_function<shift_through_pointers>({.grid_dim = 4, .block_dim = 256}, out, in, n, 1u);
  EXPECT_THAT(report_of(ctx),
              HasSubstr(on_this_cpu(
                  "kernel 'shift_through_pointers' failed in block (3, 0, 0), thread (231, 0, 0): out-of-bounds "
                  "access: a read at index 1000 of argument 2 (const float*), which points to the start of a "
                  "device buffer of 1000 elements (4000 bytes): past its end (found at the guard page after it)")));
  // The context stays usable, and the clean twin, which reads the last element, is not reported.
  ctx.enqueue_function<shift_through_pointers>({.grid_dim = 4, .block_dim = 256}, out, in, n, 0u);
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx, out)));
}

TEST_F(Checking, AWritePastABufferThroughAPointerIsReported) {
  const unsigned n = 777;
  const auto values = devctx_test::random_vector<float>(rng, n, -1.0f, 1.0f);
  auto in = upload(ctx, values);
  auto out = devctx_test::poisoned_buffer<float>(ctx, n);
  ctx.enqueue_function<store_shifted>(devctx_test::cover(n, 128), out, in, n, 1u);
  EXPECT_THAT(report_of(ctx),
              HasSubstr(on_this_cpu("kernel 'store_shifted' failed in block (6, 0, 0), thread (8, 0, 0): out-of-bounds access: a "
                                    "write at index 777 of argument 1 (float*), which points to the start of a device buffer of "
                                    "777 elements (3108 bytes): past its end (found at the guard page after it)")));
  ctx.enqueue_function<store_shifted>(devctx_test::cover(n, 128), out, in, n, 0u);
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx, out)));
}

TEST_F(Checking, AReadOfTheFirstBytePastABufferIsReported) {
  const unsigned n = 4097;  // a page and a byte: the buffer starts at an odd address
  const auto values = devctx_test::random_vector<std::uint8_t>(rng, n, 0, 254);
  auto in = upload(ctx, values);
  auto out = devctx_test::poisoned_buffer<std::uint8_t>(ctx, n);
  ctx.enqueue_function<shift_bytes>(devctx_test::cover(n, 256), out, in, n, 1u);
  EXPECT_THAT(report_of(ctx),
              HasSubstr(on_this_cpu("kernel 'shift_bytes' failed in block (16, 0, 0), thread (0, 0, 0): out-of-bounds access: a "
                                    "read at index 4097 of argument 2 (const unsigned char*), which points to the start of a "
                                    "device buffer of 4097 elements (4097 bytes): past its end")));
  ctx.enqueue_function<shift_bytes>(devctx_test::cover(n, 256), out, in, n, 0u);
  const auto got = download(ctx, out);
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(got[i], std::uint8_t(values[i] + 1)) << i;
}

TEST_F(Checking, AWriteBeforeABufferIsReported) {
  const unsigned n = 1024;  // exactly a page: the guard page starts right before element 0
  const auto values = devctx_test::random_vector<int>(rng, n, -1000, 1000);
  auto in = upload(ctx, values);
  auto out = devctx_test::poisoned_buffer<int>(ctx, n);
  ctx.enqueue_function<store_back>(devctx_test::cover(n, 256), out, in, n, 1u);
  EXPECT_THAT(report_of(ctx),
              HasSubstr(on_this_cpu("kernel 'store_back' failed in block (0, 0, 0), thread (0, 0, 0): out-of-bounds access: a "
                                    "write at index -1 of argument 1 (int*), which points to the start of a device buffer of 1024 "
                                    "elements (4096 bytes): before its start (found at the guard page before it)")));
  ctx.enqueue_function<store_back>(devctx_test::cover(n, 256), out, in, n, 0u);
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx, out)));
}

// A pointer passed for a slice is bounded by the whole buffer it points into, not by the slice:
// past the slice but inside its buffer is not reported; past the buffer's end is.
TEST_F(Checking, APointerIntoASliceIsBoundedByItsBuffer) {
  const unsigned n = 1000, offset = 100, count = 200;
  auto data = devctx_test::poisoned_buffer<float>(ctx, n);
  ctx.enqueue_function<fill_part>(devctx_test::cover(count + 50, 128), data.slice(offset, count), count + 50, 1.0f);
  EXPECT_NO_THROW(ctx.synchronize());  // 50 elements past the slice, unreported: still inside the buffer
  auto got = download(ctx, data);
  for (unsigned i = 0; i < n; ++i) {
    if (i >= offset && i < offset + count + 50)
      ASSERT_EQ(got[i], 1.0f + float(i - offset)) << i;
    else
      ASSERT_TRUE(devctx_test::same_bits(got[i], devctx_test::poison_value<float>())) << i;
  }
  ctx.enqueue_function<fill_part>(devctx_test::cover(n, 128), data.slice(offset, count), n, 2.0f);
  EXPECT_THAT(report_of(ctx),
              HasSubstr(on_this_cpu(
                  "kernel 'fill_part' failed in block (7, 0, 0), thread (4, 0, 0): out-of-bounds access: a "
                  "write at index 900 of argument 1 (float*), which points to element 100 of a device buffer of "
                  "1000 elements (4000 bytes) (the argument passed 200 elements from there): past its end "
                  "(found at the guard page after it)")));
  // The elements before the fault were written (the launch stops at its first report); the buffer
  // and the context stay usable.
  got = download(ctx, data);
  for (unsigned i = offset; i < n; ++i) ASSERT_EQ(got[i], 2.0f + float(i - offset)) << i;
  ctx.enqueue_function<fill_part>(devctx_test::cover(count, 128), data.slice(offset, count), count, 3.0f);
  got = download(ctx, data);
  for (unsigned i = 0; i < count; ++i) ASSERT_EQ(got[offset + i], 3.0f + float(i)) << i;
}

TEST_F(Checking, EveryArgumentPointingIntoTheBufferIsNamed) {
  const unsigned n = 512;
  const auto values = devctx_test::random_small_ints<float>(rng, n, -100, 100);
  auto in = upload(ctx, values);
  auto out = devctx_test::poisoned_buffer<float>(ctx, n);
  ctx.enqueue_function<add_shifted>(devctx_test::cover(n, 128), out, in, in, n, 1u);
  EXPECT_THAT(report_of(ctx),
              HasSubstr(on_this_cpu(
                  "kernel 'add_shifted' failed in block (3, 0, 0), thread (127, 0, 0): out-of-bounds access: a "
                  "read at index 512 of argument 2 (const float*), which points to the start of a device buffer "
                  "of 512 elements (2048 bytes): past its end (found at the guard page after it); argument 3 "
                  "(const float*) points into the same buffer")));
  ctx.enqueue_function<add_shifted>(devctx_test::cover(n, 128), out, in, in, n, 0u);
  const auto got = download(ctx, out);
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * values[i]) << i;
}

TEST_F(Checking, APointerNoArgumentNamesIsReportedByItsBuffer) {
  const unsigned n = 300;
  const auto values = devctx_test::random_vector<float>(rng, n, -1.0f, 1.0f);
  auto in = upload(ctx, values);
  auto out = devctx_test::poisoned_buffer<float>(ctx, n);
  ctx.enqueue_function<gather>(devctx_test::cover(n, 64), out, Lookup{in.data(), n}, 1u);
  const std::string m = report_of(ctx);
  EXPECT_THAT(m, HasSubstr(on_this_cpu("kernel 'gather' failed in block (4, 0, 0), thread (43, 0, 0): out-of-bounds access: a "
                                       "read at byte 1200 of a device buffer of 1200 bytes at 0x")));
  EXPECT_THAT(m, HasSubstr("past its end (found at the guard page after it); no argument of the kernel points into "
                           "this buffer"));
  ctx.enqueue_function<gather>(devctx_test::cover(n, 64), out, Lookup{in.data(), n}, 0u);
  EXPECT_TRUE(devctx_test::all_equal(values, download(ctx, out)));
}

// An unchecked launch cannot be resumed after a fault (it may run on the worker's own stack): past
// a checked buffer it stops the process with a report at the guard page, rather than corrupting
// memory.
void run_unchecked_past_checked_buffer() {
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  DeviceContext checked = checked_cpu();
  DeviceContext plain{Api::cpu, 0, {.check = false}};
  auto in = checked.enqueue_create_buffer<float>(777);
  auto out = checked.enqueue_create_buffer<float>(777);
  checked.enqueue_memset(in, 1.0f);
  checked.synchronize();
  plain.enqueue_function<store_shifted>(devctx_test::cover(777, 128), out, in, 777u, 1u);
  plain.synchronize();
  std::fprintf(stderr, "the unchecked launch finished without a report\n");
  std::_Exit(0);
}

TEST(CheckingGuardPages, AnUncheckedLaunchPastACheckedBufferEndsTheProcessWithAReport) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_unchecked_past_checked_buffer(), testing::KilledBySignal(SIGSEGV),
              "kernel 'store_shifted' \\(an unchecked launch\\) accessed memory past the end of a device buffer of "
              "3108 bytes made by a checked context, in block \\(6, 0, 0\\) \\(found at the guard page after it\\)");
}

/// In a child process: with the address space limited to what the process uses plus 64 MiB, a
/// checked buffer of 256 MiB cannot be mapped, which is an out_of_memory Error naming the layout.
[[maybe_unused]] void run_checked_allocation_past_the_address_space_limit() {
  DeviceContext ctx = checked_cpu();
  std::ifstream status("/proc/self/status");
  std::string line;
  unsigned long long vm_kib = 0;
  while (std::getline(status, line))
    if (std::sscanf(line.c_str(), "VmSize: %llu kB", &vm_kib) == 1) break;
  const rlimit limit{rlim_t(vm_kib * 1024 + (64ull << 20)), rlim_t(vm_kib * 1024 + (64ull << 20))};
  if (vm_kib == 0 || setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(3);
  const auto e = error_of([&] { (void)ctx.enqueue_create_buffer<float>(std::size_t{64} << 20); });
  if (!e || e->code() != Errc::out_of_memory) std::_Exit(1);
  if (std::string(e->what()).find("checking mode maps each device buffer on pages of its own between two guard "
                                  "pages (256.0 MiB") == std::string::npos) {
    std::fprintf(stderr, "%s\n", e->what());
    std::_Exit(2);
  }
  // The context stays usable.
  auto small = upload(ctx, std::vector<float>{1.0f, 2.0f});
  if (download(ctx, small) != std::vector<float>{1.0f, 2.0f}) std::_Exit(4);
  std::_Exit(0);
}

TEST(CheckingGuardPages, AMappingThatFailsIsOutOfMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's own mappings need address space beyond any limit set here";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_checked_allocation_past_the_address_space_limit(), testing::ExitedWithCode(0), "");
#endif
}

TEST_F(Checking, AbsurdBufferSizesAreStillOutOfMemory) {
  for (const std::size_t count : {std::size_t{1} << 61, std::numeric_limits<std::size_t>::max() / 2}) {
    const auto e = error_of([&] { (void)ctx.enqueue_create_buffer<float>(count); });
    ASSERT_TRUE(e) << count;
    EXPECT_EQ(e->code(), Errc::out_of_memory) << e->what();
  }
  // More than memory and swap together (but addressable): refused before anything is mapped.
  const auto e = error_of([&] { (void)ctx.enqueue_create_buffer<std::uint8_t>(std::size_t{1} << 60); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::out_of_memory);
  // The context stays usable: a buffer of one element, exact at both ends (its page holds 4 bytes
  // at its end).
  auto one = upload(ctx, std::vector<float>{42.0f});
  auto out = devctx_test::poisoned_buffer<float>(ctx, 1);
  ctx.enqueue_function<shift_through_pointers>({.grid_dim = 1, .block_dim = 1}, out, one, 1u, 0u);
  EXPECT_EQ(download(ctx, out)[0], 42.0f);
  ctx.enqueue_function<shift_through_pointers>({.grid_dim = 1, .block_dim = 1}, out, one, 1u, 1u);
  EXPECT_THAT(report_of(ctx), HasSubstr(on_this_cpu("a read at index 1 of argument 2 (const float*), which points to "
                                                    "the start of a device buffer of 1 element (4 bytes): past its end")));
}

// ---- barrier divergence ------------------------------------------------------------------------------------

TEST_F(Checking, AThreadReturningBetweenBarriersIsDivergence) {
  auto out = ctx.enqueue_create_buffer<int>(128);
  ctx.enqueue_function<leave_between_barriers>({.grid_dim = 2, .block_dim = 64}, out, 5u);
  const std::string m = report_of(ctx);
  EXPECT_THAT(m, HasSubstr("kernel 'leave_between_barriers' failed in block (0, 0, 0): barrier divergence: thread "
                           "(5, 0, 0) returned after passing 1 barrier while thread (63, 0, 0) waits at the block's "
                           "barrier #2 (the barrier() at checking_test.cpp:"));
  ctx.enqueue_function<leave_between_barriers>({.grid_dim = 2, .block_dim = 64}, out, 1000u);
  const auto got = download(ctx, out);
  for (int i = 0; i < 128; ++i) ASSERT_EQ(got[i], (i % 64 + 1) % 64 * 3 + (i % 64 + 2) % 64 * 3) << i;
}

TEST_F(Checking, ThreadsAtDifferentBarrierCallsAreDivergence) {
  auto out = ctx.enqueue_create_buffer<int>(64);
  ctx.enqueue_function<split_barriers>({.grid_dim = 1, .block_dim = 64}, out, 32u);
  const std::string m = report_of(ctx);
  EXPECT_THAT(m, HasSubstr("barrier divergence: thread (0, 0, 0) waits at the barrier() at checking_test.cpp:" +
                           std::to_string(kSplitLine) + ":"));
  EXPECT_THAT(m, HasSubstr("and thread (32, 0, 0) at the one at checking_test.cpp:" + std::to_string(kSplitLine + 2) + ":"));
  for (unsigned split : {0u, 64u}) {
    ctx.enqueue_function<split_barriers>({.grid_dim = 1, .block_dim = 64}, out, split);
    const auto got = download(ctx, out);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(got[i], 63 - i) << i;
  }
}

TEST_F(Checking, ReturningBeforeTheFirstBarrierIsNotDivergence) {
  const std::size_t n = 1000;  // the last block has 40 threads with work and 24 that return at once
  const auto values = devctx_test::random_vector<int>(rng, n, -1000, 1000);
  auto in = upload(ctx, values);
  auto sums = ctx.enqueue_create_buffer<long long>(16);
  ctx.enqueue_function<guarded_block_sums>({.grid_dim = 16, .block_dim = 64}, in, sums);
  const auto got = download(ctx, sums);
  for (std::size_t b = 0; b < 16; ++b) {
    long long expected = 0;
    for (std::size_t i = b * 64; i < std::min(n, b * 64 + 64); ++i) expected += values[i];
    ASSERT_EQ(got[b], expected) << b;
  }
}

// ---- races ----------------------------------------------------------------------------------------------------

// Shared arrays are plain arrays: their races are found by comparing memory. Thread 0 reads the
// others' elements before they write them in index order, after it in reverse order: the block's
// result differs between the two runs.
TEST_F(Checking, AMissingBarrierIsASharedMemoryRace) {
  const auto values = devctx_test::random_vector<int>(rng, 128, -1000, 1000);
  auto in = upload(ctx, values);
  auto sums = ctx.enqueue_create_buffer<long long>(2);
  ctx.enqueue_function<sum_in_thread0>({.grid_dim = 2, .block_dim = 64}, in, sums, 0u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'sum_in_thread0' failed in block (0, 0, 0): shared-memory race: "
                                        "element 0 of argument 2 (devctx::span<long long int>) differs at the block's "
                                        "end between running the block's threads in index order and in reverse "
                                        "order"));
  ctx.enqueue_function<sum_in_thread0>({.grid_dim = 2, .block_dim = 64}, in, sums, 1u);
  const auto got = download(ctx, sums);
  EXPECT_EQ(got[0], std::accumulate(values.begin(), values.begin() + 64, 0LL));
  EXPECT_EQ(got[1], std::accumulate(values.begin() + 64, values.end(), 0LL));
}

TEST_F(Checking, AMissingBarrierIsFoundInSharedMemoryAtTheNextBarrier) {
  const auto values = devctx_test::random_vector<int>(rng, 128, -1000, 1000);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<int>(128);
  ctx.enqueue_function<shift_in_shared>({.grid_dim = 2, .block_dim = 64}, in, out, 0u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'shift_in_shared' failed in block (0, 0, 0): shared-memory race: "
                                        "element 0 of shared array 'b' differs at the block's barrier #1 between "
                                        "running the block's threads in index order"));
  ctx.enqueue_function<shift_in_shared>({.grid_dim = 2, .block_dim = 64}, in, out, 1u);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < 128; ++i) ASSERT_EQ(got[i], values[i / 64 * 64 + (i + 1) % 64]) << i;
}

// Accesses through helpers taking a T* or a T(&)[N] are seen like any other (nothing is hooked).
TEST_F(Checking, ARaceThroughGenericHelpersIsFound) {
  const auto values = devctx_test::random_vector<int>(rng, 128, -1000, 1000);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<int>(128);
  ctx.enqueue_function<shift_through_helpers>({.grid_dim = 2, .block_dim = 64}, in, out, 0u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'shift_through_helpers' failed in block (0, 0, 0): shared-memory race: "
                                        "element 0 of argument 2 (devctx::span<int>) differs at the block's end"));
  ctx.enqueue_function<shift_through_helpers>({.grid_dim = 2, .block_dim = 64}, in, out, 1u);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < 128; ++i) ASSERT_EQ(got[i], values[i / 64 * 64 + (i + 1) % 64]) << i;
}

// A result that rightly depends on the threads' order through atomics is not a race: blocks that
// use atomics are not run a second time.
TEST_F(Checking, SlotsClaimedWithAtomicsAreNotARace) {
  const auto values = devctx_test::random_vector<int>(rng, 256, -1000, 1000);
  auto in = upload(ctx, values);
  auto sums = ctx.enqueue_create_buffer<long long>(4);
  ctx.enqueue_function<gather_even>({.grid_dim = 4, .block_dim = 64}, in, sums);
  const auto got = download(ctx, sums);
  for (std::size_t b = 0; b < 4; ++b) {
    long long expected = 0;
    for (std::size_t i = b * 64; i < b * 64 + 64; ++i)
      if (values[i] % 2 == 0) expected += values[i];
    ASSERT_EQ(got[b], expected) << b;
  }
}

TEST_F(Checking, TwoThreadsWritingOneSharedElementRace) {
  auto out = ctx.enqueue_create_buffer<int>(128);
  ctx.enqueue_function<pair_store>({.grid_dim = 2, .block_dim = 64}, out, 1u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'pair_store' failed in block (0, 0, 0): shared-memory race: thread "
                                        "(0, 0, 0) wrote element 0 of shared array 's' and thread (1, 0, 0) wrote it "
                                        "too with no barrier() between the two (both before the block's first "
                                        "barrier)"));
  ctx.enqueue_function<pair_store>({.grid_dim = 2, .block_dim = 64}, out, 0u);
  const auto got = download(ctx, out);
  for (int i = 0; i < 128; ++i) ASSERT_EQ(got[i], i % 64 + 1) << i;
}

TEST_F(Checking, AReadOfANeighboursElementInTheSamePhaseIsARace) {
  const auto values = devctx_test::random_vector<int>(rng, 128, -1000, 1000);
  auto in = upload(ctx, values);
  auto out = ctx.enqueue_create_buffer<int>(128);
  ctx.enqueue_function<neighbour_phases>({.grid_dim = 2, .block_dim = 64}, in, out, 1u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'neighbour_phases' failed in block (0, 0, 0): shared-memory race: "
                                        "element 0 of argument 2 (devctx::span<int>) differs at the block's end "
                                        "between running the block's threads in index order and in reverse order"));
  ctx.enqueue_function<neighbour_phases>({.grid_dim = 2, .block_dim = 64}, in, out, 0u);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < 128; ++i) ASSERT_EQ(got[i], values[i / 64 * 64 + (i + 1) % 64]) << i;
}

TEST_F(Checking, ThreadsOfABlockWritingOneElementRace) {
  auto out = devctx_test::poisoned_buffer<unsigned>(ctx, 32);
  ctx.enqueue_function<store_index>({.grid_dim = 1, .block_dim = 32}, out, 5u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'store_index' failed in block (0, 0, 0): global-memory race: thread "
                                        "(0, 0, 0) wrote element 0 of argument 1 (devctx::span<unsigned int>) and "
                                        "thread (1, 0, 0) accessed it with no barrier() between the two"));
  ctx.enqueue_function<store_index>({.grid_dim = 1, .block_dim = 32}, out, 0u);
  const auto got = download(ctx, out);
  for (unsigned i = 0; i < 32; ++i) ASSERT_EQ(got[i], i);
}

TEST_F(Checking, BlocksWritingOneElementRace) {
  auto totals = devctx_test::poisoned_buffer<unsigned>(ctx, 8);
  ctx.enqueue_function<store_block>({.grid_dim = 8, .block_dim = 32}, totals, 1u);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'store_block' failed in block (1, 0, 0): global-memory race between "
                                        "blocks: thread (0, 0, 0) of block (0, 0, 0) wrote element 0 of argument 1 "
                                        "(devctx::span<unsigned int>) and thread (0, 0, 0) of block (1, 0, 0) wrote "
                                        "it too"));
  ctx.enqueue_function<store_block>({.grid_dim = 8, .block_dim = 32}, totals, 0u);
  const auto got = download(ctx, totals);
  for (unsigned b = 0; b < 8; ++b) ASSERT_EQ(got[b], b + 1);
}

TEST_F(Checking, AtomicsOnOneElementAreNotARace) {
  const std::size_t n = 5000;
  const auto values = devctx_test::random_vector<unsigned>(rng, n, 0, 1u << 20);
  auto in = upload(ctx, values);
  auto counts = ctx.enqueue_create_buffer<unsigned>(7);
  ctx.enqueue_memset(counts, 0u);
  ctx.enqueue_function<histogram>(devctx_test::cover(n, 128), in, counts);
  std::vector<unsigned> expected(7, 0);
  for (unsigned v : values) ++expected[v % 7];
  EXPECT_TRUE(devctx_test::all_equal(expected, download(ctx, counts)));
}

// ---- reads of memory never written -------------------------------------------------------------------------

TEST_F(Checking, AReadOfABufferNothingWroteIsReported) {
  auto in = ctx.enqueue_create_buffer<float>(300);
  auto out = ctx.enqueue_create_buffer<float>(300);
  ctx.enqueue_function<scale>(devctx_test::cover(300, 128), in, out, 2.0f);
  EXPECT_THAT(report_of(ctx), HasSubstr("kernel 'scale' failed in block (0, 0, 0): read of uninitialised device "
                                        "memory: thread (0, 0, 0) read element 0 of argument 1 (devctx::span<const "
                                        "float>), which nothing wrote since the buffer was created"));
}

TEST_F(Checking, AReadPastTheWrittenPartIsReportedAtTheFirstUnwrittenElement) {
  const auto values = devctx_test::random_vector<float>(rng, 300, -1.0f, 1.0f);
  auto in = ctx.enqueue_create_buffer<float>(300);
  auto out = ctx.enqueue_create_buffer<float>(300);
  ctx.enqueue_copy(in.slice(0, 200), std::span<const float>(values).subspan(0, 200));
  ctx.enqueue_function<scale>(devctx_test::cover(300, 128), in, out, 2.0f);
  EXPECT_THAT(report_of(ctx), HasSubstr("failed in block (1, 0, 0): read of uninitialised device memory: thread "
                                        "(72, 0, 0) read element 200 of argument 1"));
  // Copies, memsets and kernels all count as writes.
  ctx.enqueue_copy(in.slice(200, 100), std::span<const float>(values).subspan(200, 100));
  ctx.enqueue_function<scale>(devctx_test::cover(300, 128), in, out, 2.0f);
  ctx.synchronize();
  auto got = download(ctx, out);
  for (std::size_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], 2.0f * values[i]) << i;
  auto filled = ctx.enqueue_create_buffer<float>(300);
  ctx.enqueue_memset(filled, 1.5f);
  ctx.enqueue_function<scale>(devctx_test::cover(300, 128), filled, out, 2.0f);
  got = download(ctx, out);
  for (std::size_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], 3.0f) << i;
  auto made = ctx.enqueue_create_buffer<float>(300);
  ctx.enqueue_function<iota>(devctx_test::cover(300, 128), made);
  ctx.enqueue_function<scale>(devctx_test::cover(300, 128), made, out, 2.0f);
  got = download(ctx, out);
  for (std::size_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], 2.0f * float(i)) << i;
}

TEST_F(Checking, AReadThroughAWritableSpanOfUnwrittenMemoryIsReported) {
  auto acc = ctx.enqueue_create_buffer<float>(64);
  auto out = ctx.enqueue_create_buffer<float>(64);
  ctx.enqueue_function<double_into>({.grid_dim = 1, .block_dim = 64}, acc, out);
  EXPECT_THAT(report_of(ctx), HasSubstr("read of uninitialised device memory: thread (0, 0, 0) read element 0 of "
                                        "argument 1 (devctx::span<float>)"));
  ctx.enqueue_memset(acc, 4.0f);
  ctx.enqueue_function<double_into>({.grid_dim = 1, .block_dim = 64}, acc, out);
  for (float v : download(ctx, out)) ASSERT_EQ(v, 8.0f);
}

TEST_F(Checking, AnAtomicOnACounterNothingZeroedIsReported) {
  const auto values = devctx_test::random_vector<unsigned>(rng, 100, 0, 1000);
  auto in = upload(ctx, values);
  auto counts = ctx.enqueue_create_buffer<unsigned>(7);
  ctx.enqueue_function<histogram>(devctx_test::cover(100, 128), in, counts);
  EXPECT_THAT(report_of(ctx), HasSubstr("read of uninitialised device memory: thread (0, 0, 0) read element " +
                                        std::to_string(values[0] % 7) + " of argument 2 (devctx::span<unsigned int>)"));
}

// ---- host access to a HostBuffer while a copy is pending ------------------------------------------------

TEST_F(Checking, ReadingADownloadBeforeSynchronizeIsAnError) {
  auto d = ctx.enqueue_create_buffer<float>(256);
  ctx.enqueue_memset(d, 2.5f);
  auto h = ctx.enqueue_create_host_buffer<float>(256);
  ctx.synchronize();
  ctx.enqueue_copy(h, d);
  for (auto access : {0, 1, 2}) {
    const auto e = error_of([&] {
      if (access == 0) (void)h[10];
      if (access == 1) (void)h.data();
      if (access == 2)
        for (float v : h) (void)v;
    });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::check_failed);
    EXPECT_THAT(e->what(), HasSubstr(access == 0   ? "HostBuffer::operator[]"
                                     : access == 1 ? "HostBuffer::data()"
                                                   : "HostBuffer::begin()"));
    EXPECT_THAT(e->what(), HasSubstr("while a copy into this HostBuffer on cpu:0"));
    EXPECT_THAT(e->what(), HasSubstr("may still be running: the host may touch the buffer only after synchronize()"));
  }
  ctx.synchronize();
  for (std::size_t i = 0; i < 256; ++i) ASSERT_EQ(h[i], 2.5f) << i;
}

TEST_F(Checking, WritingAnUploadsSourceBeforeSynchronizeIsAnError) {
  auto h = ctx.enqueue_create_host_buffer<int>(64);
  auto d = ctx.enqueue_create_buffer<int>(64);
  ctx.synchronize();
  std::iota(h.begin(), h.end(), 0);
  ctx.enqueue_copy(d, h);
  const auto e = error_of([&] { h[0] = 99; });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr("HostBuffer::operator[] while a copy out of this HostBuffer"));
  ctx.synchronize();
  h[0] = 99;
  const auto got = download(ctx, d);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(got[i], i);
}

TEST_F(Checking, AnEventRecordedAfterTheCopyCoversIt) {
  auto d = ctx.enqueue_create_buffer<unsigned>(64);
  ctx.enqueue_memset(d, 7u);
  auto h = ctx.enqueue_create_host_buffer<unsigned>(64);
  ctx.synchronize();
  auto s = ctx.create_stream();
  const auto before = s.record_event();
  s.enqueue_copy(h, d);
  before.synchronize();
  EXPECT_TRUE(error_of([&] { (void)h[0]; }));  // an event before the copy does not cover it
  const auto after = s.record_event();
  after.synchronize();
  for (unsigned v : h) ASSERT_EQ(v, 7u);
  // Through another stream that waited for the event: its synchronize covers the copy too.
  s.enqueue_copy(h, d);
  const auto done = s.record_event();
  ctx.enqueue_wait_for(done);
  static_cast<devctx::StreamRef&>(ctx).synchronize();
  for (unsigned v : h) ASSERT_EQ(v, 7u);
}

TEST_F(Checking, ACopyFromOrdinaryMemoryReturnsFinished) {
  auto h = ctx.enqueue_create_host_buffer<int>(16);
  ctx.synchronize();
  const std::vector<int> values(16, 5);
  ctx.enqueue_copy(h, values);  // returns once done
  for (int v : h) ASSERT_EQ(v, 5);
}

TEST_F(Checking, ASliceOfADownloadIsGuardedToo) {
  auto d = ctx.enqueue_create_buffer<int>(32);
  ctx.enqueue_memset(d, 5);
  auto h = ctx.enqueue_create_host_buffer<int>(32);
  ctx.synchronize();
  ctx.enqueue_copy(h, d);
  const auto e = error_of([&] { (void)h.slice(8, 4)[0]; });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr("HostSlice::operator[] while a copy into this HostBuffer"));
  ctx.synchronize();
  EXPECT_EQ(h.slice(8, 4)[0], 5);
}

TEST_F(Checking, AQueryThatSaysDoneCoversTheCopy) {
  auto d = ctx.enqueue_create_buffer<int>(32);
  ctx.enqueue_memset(d, 9);
  auto h = ctx.enqueue_create_host_buffer<int>(32);
  ctx.synchronize();
  ctx.enqueue_copy(h, d);
  const auto done = ctx.record_event();
  while (!done.query()) std::this_thread::yield();
  for (int v : h) ASSERT_EQ(v, 9);
}

TEST_F(Checking, SynchronizeDeviceCoversCopiesOfDroppedContexts) {
  const auto values = devctx_test::random_vector<int>(rng, 4096, -1000, 1000);
  auto h = ctx.enqueue_create_host_buffer<int>(values.size());
  ctx.synchronize();
  std::fill(h.begin(), h.end(), devctx_test::poison_value<int>());
  {
    DeviceContext other = checked_cpu();
    auto d = upload(other, values);
    other.enqueue_copy(h, d);
    // Another context's wait does not cover the copy, nor does synchronize() of this one.
    ctx.synchronize();
    const auto e = error_of([&] { (void)h[0]; });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), Errc::check_failed);
    EXPECT_THAT(e->what(), HasSubstr("while a copy into this HostBuffer"));
  }  // the context that enqueued the copy is gone; its copy may still run
  ctx.synchronize_device();
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(h[i], values[i]) << i;
}

TEST_F(Checking, MoreWorkOnAPendingBufferIsNotTouchingIt) {
  auto d = ctx.enqueue_create_buffer<int>(32);
  auto d2 = ctx.enqueue_create_buffer<int>(32);
  ctx.enqueue_memset(d, 3);
  auto h = ctx.enqueue_create_host_buffer<int>(32);
  ctx.synchronize();
  ctx.enqueue_copy(h, d);
  ctx.enqueue_copy(d2, h);   // the pending buffer as a source: stream-ordered, fine
  ctx.enqueue_memset(h, 4);  // and as a destination
  ctx.synchronize();
  EXPECT_TRUE(devctx_test::all_equal(std::vector<int>(32, 3), download(ctx, d2)));
  for (int v : h) ASSERT_EQ(v, 4);
}

TEST_F(Checking, ABarrierInAHelperIsOneCallWhereverItIsCalledFrom) {
  auto out = ctx.enqueue_create_buffer<int>(64);
  ctx.enqueue_function<branches_share_a_barrier>({.grid_dim = 1, .block_dim = 64}, out);
  const auto got = download(ctx, out);
  for (int t = 0; t < 64; ++t) ASSERT_EQ(got[t], 63 - t < 32 ? 1 : 2) << t;
}

TEST_F(Checking, ASharedArrayWorksEveryWayAnArrayDoes) {
  for (const bool checked : {true, false}) {
    DeviceContext c{Api::cpu, 0, {.check = checked}};
    auto out = c.enqueue_create_buffer<float>(5);
    c.enqueue_function<array_forms>({.grid_dim = 1, .block_dim = 16}, out);
    EXPECT_TRUE(devctx_test::all_equal(std::vector<float>{120.0f, 2.0f, 7.0f, 15.0f, 16.0f}, download(c, out)))
        << (checked ? "checked" : "unchecked");
  }
}

// ---- what checking mode cannot see (docs/checking.md pins each limit) -----------------------------

TEST_F(Checking, WritesThroughAPointerStillCountAsWrites) {
  auto made = ctx.enqueue_create_buffer<float>(300);
  auto out = ctx.enqueue_create_buffer<float>(300);
  ctx.enqueue_function<iota_through_pointer>(devctx_test::cover(300, 128), made);
  ctx.enqueue_function<scale>(devctx_test::cover(300, 128), made, out, 3.0f);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], 3.0f * float(i)) << i;
}

// Before a buffer's start only the guard page is caught: a buffer that is not a whole number of
// pages starts inside its first page, after unused bytes that a write may reach unreported.
TEST_F(Checking, AWriteJustBeforeABufferThatIsNoWholePageIsNotCaught) {
  const unsigned n = 1000;  // 4000 bytes: 96 bytes (24 ints) of its page lie before element 0
  const auto values = devctx_test::random_vector<int>(rng, n, -1000, 1000);
  auto in = upload(ctx, values);
  auto out = devctx_test::poisoned_buffer<int>(ctx, n);
  ctx.enqueue_function<store_back>(devctx_test::cover(n, 256), out, in, n, 24u);
  EXPECT_NO_THROW(ctx.synchronize());  // a bug, unreported: out[-24] .. out[-1] lie in the unused bytes
  ctx.enqueue_function<store_back>(devctx_test::cover(n, 256), out, in, n, 25u);
  EXPECT_THAT(report_of(ctx),
              HasSubstr(on_this_cpu("kernel 'store_back' failed in block (0, 0, 0), thread (0, 0, 0): out-of-bounds access: a "
                                    "write at index -25 of argument 1 (int*), which points to the start of a device buffer of 1000 "
                                    "elements (4000 bytes): before its start (found at the guard page before it)")));
}

// A checked buffer starts where its size ends it: aligned to the largest power of two dividing
// its size, not to 64 bytes. A view of a slice as a wider type that an unchecked buffer refuses as
// misaligned may then pass in checking mode, or the other way round.
TEST_F(Checking, ACheckedBufferStartsAlignedToItsSize) {
  auto odd = ctx.enqueue_create_buffer<std::uint8_t>(30);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(odd.data()) % 4, 2u);                    // 30 = 2 * 15
  EXPECT_EQ(odd.slice(2, 8).view_as<std::uint32_t>().size(), 2u);                     // refused as misaligned unchecked
  const auto e = error_of([&] { (void)odd.slice(16, 8).view_as<std::uint64_t>(); });  // passes unchecked
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::size_mismatch);
  auto floats = ctx.enqueue_create_buffer<float>(1000);  // 4000 bytes = 32 * 125
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(floats.data()) % 32, 0u);
  DeviceContext plain{Api::cpu, 0, {.check = false}};
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(plain.enqueue_create_buffer<std::uint8_t>(30).data()) % 64, 0u);
}

// A DEVCTX_SHARED array is a plain T[n]: only the page after it is guarded. An index before its
// start, or past one row of a 2-D array into the next, is not reported (docs/checking.md).
TEST_F(Checking, AnIndexBeforeASharedArrayOrIntoTheNextRowIsNotCaught) {
  auto out = ctx.enqueue_create_buffer<int>(64);
  ctx.enqueue_function<shared_outside_unguarded>({.grid_dim = 1, .block_dim = 64}, out, 1, 0u);
  EXPECT_NO_THROW(ctx.synchronize());  // a bug, unreported: s[-1] lies in the array's page
  auto got = download(ctx, out);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(got[std::size_t(i)], i) << i;
  ctx.enqueue_function<shared_outside_unguarded>({.grid_dim = 1, .block_dim = 64}, out, 0, kTile);
  EXPECT_NO_THROW(ctx.synchronize());  // a bug, unreported: tile[3][8] is tile[4][0]
  got = download(ctx, out);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(got[std::size_t(i)], i + (i == 4 * int(kTile) ? 1 : 0)) << i;
}

TEST_F(Checking, AReadModifyWriteOfUnwrittenMemoryLooksLikeAWrite) {
  auto acc = ctx.enqueue_create_buffer<unsigned>(64);
  ctx.enqueue_function<bump>({.grid_dim = 1, .block_dim = 64}, acc);
  EXPECT_NO_THROW(ctx.synchronize());  // a bug, unreported: acc was never zeroed, and += changed it
}

TEST_F(Checking, ACopyOutOfUnwrittenMemoryIsNotReported) {
  auto fresh = ctx.enqueue_create_buffer<unsigned>(16);
  const auto got = download(ctx, fresh);
  EXPECT_NO_THROW(ctx.synchronize());
  for (unsigned v : got) ASSERT_EQ(v, 0xCDCDCDCDu);  // the fill of new device memory
}

TEST_F(Checking, BlocksTalkingThroughAFenceAndAFlagAreReportedAsARace) {
  auto data = ctx.enqueue_create_buffer<int>(1);
  ctx.enqueue_memset(data, 0);
  auto flag = ctx.enqueue_create_buffer<unsigned>(1);
  ctx.enqueue_memset(flag, 0u);
  auto out = ctx.enqueue_create_buffer<int>(1);
  ctx.enqueue_memset(out, -1);
  ctx.enqueue_function<publish_through_flag>({.grid_dim = 2, .block_dim = 32}, data, flag, out);
  EXPECT_THAT(report_of(ctx), HasSubstr("global-memory race between blocks: thread (0, 0, 0) of block (0, 0, 0) "
                                        "wrote element 0 of argument 1 (devctx::span<int>) and thread (0, 0, 0) of "
                                        "block (1, 0, 0) accessed it"));
}

TEST_F(Checking, ThreadsStoringTheValueAlreadyThereAreNotReported) {
  auto out = ctx.enqueue_create_buffer<unsigned>(1);
  ctx.enqueue_memset(out, 7u);
  ctx.enqueue_function<store_same>({.grid_dim = 1, .block_dim = 32}, out, 7u);
  EXPECT_NO_THROW(ctx.synchronize());  // a race, unreported: no store changed the element
  // Storing another value is seen: the first store changed it, and the next thread touched it.
  ctx.enqueue_function<store_same>({.grid_dim = 1, .block_dim = 32}, out, 8u);
  EXPECT_THAT(report_of(ctx), HasSubstr("global-memory race: thread (0, 0, 0) wrote element 0 of argument 1"));
}

TEST_F(Checking, SmallElementsReadThroughAWritableSpanAreNotReported) {
  auto in = ctx.enqueue_create_buffer<std::uint8_t>(64);
  auto out = ctx.enqueue_create_buffer<std::uint8_t>(64);
  ctx.enqueue_function<copy_bytes>({.grid_dim = 1, .block_dim = 64}, in, out);
  EXPECT_NO_THROW(ctx.synchronize());  // unreported: a 1-byte element that kept its value
  ctx.enqueue_function<copy_const_bytes>({.grid_dim = 1, .block_dim = 64}, in, out);
  EXPECT_THAT(report_of(ctx), HasSubstr("read of uninitialised device memory: thread (0, 0, 0) read element 0 of "
                                        "argument 1 (devctx::span<const unsigned char>)"));
}

TEST_F(Checking, StoringTheFillValueLooksLikeARead) {
  auto out = ctx.enqueue_create_buffer<unsigned>(64);
  ctx.enqueue_function<store_value>({.grid_dim = 1, .block_dim = 64}, out, 0xCDCDCDCDu);
  EXPECT_THAT(report_of(ctx), HasSubstr("read of uninitialised device memory: thread (0, 0, 0) read element 0 of "
                                        "argument 1 (devctx::span<unsigned int>)"));
  ctx.enqueue_function<store_value>({.grid_dim = 1, .block_dim = 64}, out, 0xCDCDCDCEu);
  for (unsigned v : download(ctx, out)) ASSERT_EQ(v, 0xCDCDCDCEu);
}

TEST_F(Checking, MemoryOfAnUncheckedContextIsNeverUninitialised) {
  DeviceContext plain{Api::cpu, 0, {.check = false}};
  auto theirs = plain.enqueue_create_buffer<float>(64);  // no record of what was written
  // Written, though unrecorded, so that `out` changes: reused memory may hold the poison pattern
  // of a freed checked buffer, and storing the value already there looks like a read.
  plain.enqueue_memset(theirs, 0);
  auto out = ctx.enqueue_create_buffer<float>(64);
  plain.synchronize();
  ctx.enqueue_function<scale>({.grid_dim = 1, .block_dim = 64}, theirs, out, 1.0f);
  EXPECT_NO_THROW(ctx.synchronize());
  // An unchecked launch on a checked buffer: all it may write counts as written.
  auto ours = ctx.enqueue_create_buffer<float>(64);
  ctx.synchronize();
  plain.enqueue_function<iota>({.grid_dim = 1, .block_dim = 64}, ours);
  plain.synchronize();
  ctx.enqueue_function<scale>({.grid_dim = 1, .block_dim = 64}, ours, out, 2.0f);
  const auto got = download(ctx, out);
  for (std::size_t i = 0; i < 64; ++i) ASSERT_EQ(got[i], 2.0f * float(i)) << i;
}

TEST(CheckingOnCuda, AskingForItOnAGpuIsAnError) {
  const Api gpu = devctx_test::gpu_api();
  if (DeviceContext::count(gpu) == 0) {
    if (devctx_test::require_gpu()) FAIL() << "DEVCTX_REQUIRE_GPU=1 but no CUDA device";
    GTEST_SKIP() << "no CUDA device";
  }
  const auto e = error_of([&] { DeviceContext ctx{gpu, 0, {.check = true}}; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), Errc::not_available);
  EXPECT_THAT(e->what(), HasSubstr("compute-sanitizer"));
  const ScopedEnv env("DEVCTX_CHECK", "1");
  EXPECT_FALSE(DeviceContext{gpu}.checking());
}

}  // namespace
