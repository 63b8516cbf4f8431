// SPDX-License-Identifier: Apache-2.0
// The checking mode's engine (src/backends/cpu/check), driven directly: memory is an ordinary
// array, threads are ranks, and "a thread writes" is a store between two of its touches. The
// behaviour through real kernels is in checking_test.cpp; these pin the rules case by case.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <devctx/kernel.hpp>

#include "backends/cpu/check/access_log.hpp"
#include "backends/cpu/check/barrier_check.hpp"
#include "backends/cpu/check/checker.hpp"
#include "backends/cpu/check/init_shadow.hpp"
#include "backends/cpu/check/regions.hpp"
#include "core/host_access.hpp"

namespace {

using devctx::detail::HostGuard;
using devctx::detail::QueueWatch;
using devctx::detail::cpu::check::AccessLog;
using devctx::detail::cpu::check::AddressMap;
using devctx::detail::cpu::check::BarrierCheck;
using devctx::detail::cpu::check::BarrierSite;
using devctx::detail::cpu::check::Checker;
using devctx::detail::cpu::check::Divergence;
using devctx::detail::cpu::check::Finding;
using devctx::detail::cpu::check::InitShadow;
using devctx::detail::cpu::check::Region;
using devctx::detail::cpu::check::RegionKind;
using devctx::detail::cpu::check::Report;
using devctx::detail::cpu::check::ShadowRegistry;
using devctx::detail::cpu::check::SpanArgument;
using testing::HasSubstr;

// ---- InitShadow and ShadowRegistry ---------------------------------------------------------------

TEST(InitShadow, MarksExactlyTheRangesGiven) {
  InitShadow s(300);
  EXPECT_FALSE(s.written(0, 1));
  s.mark(5, 3);  // bytes 5, 6, 7
  EXPECT_TRUE(s.written(5, 3));
  EXPECT_FALSE(s.written(4, 2));
  EXPECT_FALSE(s.written(7, 2));
  s.mark(60, 140);  // crosses two word boundaries, fills one word whole
  EXPECT_TRUE(s.written(60, 140));
  EXPECT_FALSE(s.written(59, 2));
  EXPECT_FALSE(s.written(199, 2));
  for (std::size_t i = 0; i < 300; ++i) EXPECT_EQ(s.written(i, 1), (i >= 5 && i < 8) || (i >= 60 && i < 200)) << i;
}

TEST(InitShadow, ClipsAtTheEndAndRefusesRangesPastIt) {
  InitShadow s(10);
  s.mark(8, 100);
  EXPECT_TRUE(s.written(8, 2));
  EXPECT_FALSE(s.written(8, 3));
  EXPECT_FALSE(s.written(11, 0));
  s.mark(50, 4);  // wholly outside: ignored
  EXPECT_FALSE(s.written(0, 8));
}

TEST(ShadowRegistry, FindsTheAllocationHoldingAnAddress) {
  std::vector<std::byte> a(100), b(64);
  ShadowRegistry reg;
  EXPECT_TRUE(reg.empty());
  reg.add(a.data(), a.size());
  reg.add(b.data(), b.size());
  EXPECT_FALSE(reg.empty());
  const auto hit = reg.find(a.data() + 40);
  ASSERT_TRUE(hit.shadow);
  EXPECT_EQ(hit.base, a.data());
  EXPECT_EQ(hit.offset, 40u);
  EXPECT_FALSE(reg.find(a.data() + 100).shadow && reg.find(a.data() + 100).base == a.data());
  reg.mark_written(b.data() + 8, 8);
  EXPECT_TRUE(reg.find(b.data()).shadow->written(8, 8));
  EXPECT_FALSE(reg.find(b.data()).shadow->written(0, 8));
  reg.remove(a.data());
  EXPECT_FALSE(reg.find(a.data() + 1).shadow);
  reg.remove(b.data());
  EXPECT_TRUE(reg.empty());
}

// ---- AddressMap ----------------------------------------------------------------------------------------

TEST(AddressMap, KeepsEntriesAcrossGrowthAndForgetsThemOnClear) {
  AddressMap<std::uint32_t> m;
  for (std::uint32_t i = 0; i < 5000; ++i) *m.try_emplace(0x1000 + 4 * i).first = i;
  EXPECT_EQ(m.size(), 5000u);
  for (std::uint32_t i = 0; i < 5000; ++i) {
    const auto [v, inserted] = m.try_emplace(0x1000 + 4 * i);
    ASSERT_FALSE(inserted);
    ASSERT_EQ(*v, i);
  }
  m.clear();
  EXPECT_EQ(m.size(), 0u);
  const auto [v, inserted] = m.try_emplace(0x1000);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(*v, 0u);
}

// ---- AccessLog --------------------------------------------------------------------------------------

/// Eight floats of "device memory", with or without a record of written bytes.
struct Memory {
  explicit Memory(bool tracked, bool written = true) {
    region.begin = reinterpret_cast<const std::byte*>(data);
    region.bytes = sizeof data;
    region.kind = RegionKind::argument;
    region.argument = 1;
    region.type = "devctx::span<float>";
    region.element_bytes = sizeof(float);
    if (tracked) {
      region.init = std::make_shared<InitShadow>(sizeof data);
      if (written) region.init->mark(0, sizeof data);
    }
  }
  float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  Region region;
};

TEST(AccessLog, ThreadsThatOnlyReadDoNotRace) {
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  for (std::uint32_t t = 0; t < 4; ++t) EXPECT_FALSE(log.touch(t, m.region, &m.data[0], 4, false));
  EXPECT_FALSE(log.end_interval());
}

TEST(AccessLog, AWriteThenAnotherThreadsAccessIsARace) {
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(7);
  EXPECT_FALSE(log.touch(3, m.region, &m.data[2], 4, false));
  m.data[2] = 42;  // thread 3 writes
  const auto f = log.touch(4, m.region, &m.data[2], 4, true);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Finding::Kind::race);
  EXPECT_EQ(f->first.rank, 3u);
  EXPECT_TRUE(f->first_wrote);
  EXPECT_EQ(f->second.rank, 4u);
  EXPECT_EQ(f->first.block, 7u);
  EXPECT_EQ(f->address, &m.data[2]);
}

TEST(AccessLog, AReadThenAnotherThreadsWriteIsARaceAtTheIntervalsEnd) {
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(0, m.region, &m.data[1], 4, false));
  EXPECT_FALSE(log.touch(1, m.region, &m.data[1], 4, false));
  m.data[1] = -1;  // thread 1 writes
  const auto f = log.end_interval();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Finding::Kind::race);
  EXPECT_EQ(f->first.rank, 1u);
  EXPECT_EQ(f->second.rank, 0u);
}

TEST(AccessLog, ABarrierOrdersAWriteBeforeAnotherThreadsRead) {
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(0, m.region, &m.data[1], 4, false));
  m.data[1] = 9;
  EXPECT_FALSE(log.end_interval());
  EXPECT_EQ(log.interval(), 1u);
  EXPECT_FALSE(log.touch(1, m.region, &m.data[1], 4, true));
  EXPECT_FALSE(log.touch(2, m.region, &m.data[1], 4, true));
  EXPECT_FALSE(log.end_interval());
}

TEST(AccessLog, AThreadMayReadWhatItWrote) {
  Memory m(true, false);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(5, m.region, &m.data[0], 4, false));
  m.data[0] = 10;
  EXPECT_FALSE(log.touch(5, m.region, &m.data[0], 4, true));
  EXPECT_FALSE(log.end_interval());
  EXPECT_TRUE(m.region.init->written(0, 4));
  EXPECT_FALSE(m.region.init->written(4, 4));
}

TEST(AccessLog, AtomicsDoNotRaceWithEachOther) {
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  for (std::uint32_t t = 0; t < 3; ++t) {
    EXPECT_FALSE(log.touch(t, m.region, &m.data[4], 4, false));  // &counts[bin]
    EXPECT_FALSE(log.atomic(t, m.region, &m.data[4], 4));
    m.data[4] += 1;
  }
  EXPECT_FALSE(log.end_interval());
}

TEST(AccessLog, AnAtomicOnUnwrittenMemoryReadsIt) {
  Memory m(true, false);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  const auto f = log.atomic(2, m.region, &m.data[3], 4);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Finding::Kind::uninitialised_read);
  EXPECT_EQ(f->first.rank, 2u);
}

TEST(AccessLog, AWriteOfTheValueAlreadyThereIsNotSeen) {
  // The documented limit: two threads storing the same value look like two readers.
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(0, m.region, &m.data[6], 4, false));
  m.data[6] = 7;  // what it held
  EXPECT_FALSE(log.touch(1, m.region, &m.data[6], 4, false));
  EXPECT_FALSE(log.end_interval());
}

TEST(AccessLog, AReadThroughAConstSpanOfUnwrittenMemoryIsReportedAtOnce) {
  Memory m(true, false);
  m.region.init->mark(0, 4);  // element 0 written, the rest not
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(0, m.region, &m.data[0], 4, true));
  const auto f = log.touch(1, m.region, &m.data[1], 4, true);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Finding::Kind::uninitialised_read);
  EXPECT_EQ(f->first.rank, 1u);
  EXPECT_EQ(f->address, &m.data[1]);
}

TEST(AccessLog, AnUnchangedElementOfAWritableSpanWasRead) {
  Memory m(true, false);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(3, m.region, &m.data[5], 4, false));
  const auto f = log.end_interval();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Finding::Kind::uninitialised_read);
  EXPECT_EQ(f->first.rank, 3u);
}

TEST(AccessLog, AnUnchangedSmallElementIsNotTakenForARead) {
  // A 2-byte write may store the value that was there: only span<const T> reads count.
  std::uint16_t data[4] = {};
  Region r;
  r.begin = reinterpret_cast<const std::byte*>(data);
  r.bytes = sizeof data;
  r.kind = RegionKind::argument;
  r.init = std::make_shared<InitShadow>(sizeof data);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(0, r, &data[0], 2, false));
  EXPECT_FALSE(log.end_interval());
  EXPECT_TRUE(log.touch(0, r, &data[1], 2, true));
}

TEST(AccessLog, UntrackedMemoryIsNeverUninitialised) {
  Memory m(false);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(0, m.region, &m.data[0], 4, true));
  EXPECT_FALSE(log.touch(1, m.region, &m.data[1], 4, false));
  EXPECT_FALSE(log.end_interval());
}

TEST(AccessLog, AWriteInOneBlockAndAnAccessInAnotherIsARace) {
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(5, m.region, &m.data[0], 4, false));
  m.data[0] = 100;
  EXPECT_FALSE(log.end_interval());
  log.begin_block(1);
  EXPECT_FALSE(log.touch(2, m.region, &m.data[0], 4, true));
  const auto f = log.end_interval();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Finding::Kind::race);
  EXPECT_EQ(f->first.block, 0u);
  EXPECT_EQ(f->first.rank, 5u);
  EXPECT_TRUE(f->first_wrote);
  EXPECT_EQ(f->second.block, 1u);
  EXPECT_EQ(f->second.rank, 2u);
  EXPECT_FALSE(f->second_wrote);
}

TEST(AccessLog, AReadInOneBlockAndAWriteInALaterOneIsARace) {
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(0, m.region, &m.data[3], 4, false));
  EXPECT_FALSE(log.end_interval());
  log.begin_block(1);
  EXPECT_FALSE(log.touch(0, m.region, &m.data[3], 4, false));
  EXPECT_FALSE(log.end_interval());  // two readers
  log.begin_block(2);
  EXPECT_FALSE(log.touch(1, m.region, &m.data[3], 4, false));
  EXPECT_FALSE(log.end_interval());  // a third reader
  EXPECT_FALSE(log.touch(1, m.region, &m.data[3], 4, false));
  m.data[3] = 0;  // block 2 writes it after its barrier
  const auto f = log.end_interval();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->second.block, 2u);
  EXPECT_TRUE(f->second_wrote);
  EXPECT_FALSE(f->first_wrote);
}

TEST(AccessLog, OneBlockMayWriteAndReadAcrossItsOwnBarriers) {
  Memory m(true);
  AccessLog log;
  log.begin_launch();
  log.begin_block(4);
  EXPECT_FALSE(log.touch(0, m.region, &m.data[0], 4, false));
  m.data[0] = 1.5f;
  EXPECT_FALSE(log.end_interval());
  EXPECT_FALSE(log.touch(1, m.region, &m.data[0], 4, false));
  m.data[0] = 2.5f;
  EXPECT_FALSE(log.end_interval());
  log.begin_block(5);  // another block, another element
  EXPECT_FALSE(log.touch(0, m.region, &m.data[1], 4, false));
  m.data[1] = 0;
  EXPECT_FALSE(log.end_interval());
}

TEST(AccessLog, SharedMemoryIsNotComparedAcrossBlocks) {
  float shared[4] = {};
  Region r;
  r.begin = reinterpret_cast<const std::byte*>(shared);
  r.bytes = sizeof shared;
  r.kind = RegionKind::shared_array;
  r.name = "s";
  AccessLog log;
  log.begin_launch();
  for (std::uint64_t b = 0; b < 3; ++b) {
    log.begin_block(b);
    EXPECT_FALSE(log.touch(0, r, &shared[0], 4, false));
    shared[0] = float(b + 1);
    EXPECT_FALSE(log.end_interval());
  }
}

TEST(AccessLog, LargeElementsAreComparedWhole) {
  struct Big {
    double a[4];
  };
  Big data[2] = {};
  Region r;
  r.begin = reinterpret_cast<const std::byte*>(data);
  r.bytes = sizeof data;
  r.kind = RegionKind::argument;
  AccessLog log;
  log.begin_launch();
  log.begin_block(0);
  EXPECT_FALSE(log.touch(0, r, &data[1], sizeof(Big), false));
  data[1].a[3] = 1.0;  // the last byte range changes
  const auto f = log.touch(1, r, &data[1], sizeof(Big), false);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->first.rank, 0u);
}

// ---- BarrierCheck -----------------------------------------------------------------------------------

const BarrierSite kSiteA{"k.cpp", 10, 5};
const BarrierSite kSiteB{"k.cpp", 14, 5};

TEST(BarrierCheck, ThreadsAtTheSameCallPass) {
  BarrierCheck b;
  b.begin_block(4);
  for (std::uint32_t t = 0; t < 4; ++t) EXPECT_FALSE(b.arrive(t, kSiteA));
  b.complete();
  for (std::uint32_t t = 0; t < 4; ++t) EXPECT_FALSE(b.arrive(t, kSiteB));
  b.complete();
  EXPECT_EQ(b.completed(), 2u);
  EXPECT_EQ(b.last_site(), kSiteB);
  for (std::uint32_t t = 0; t < 4; ++t) EXPECT_FALSE(b.exit(t));
}

TEST(BarrierCheck, ThreadsAtDifferentCallsDiverge) {
  BarrierCheck b;
  b.begin_block(4);
  EXPECT_FALSE(b.arrive(0, kSiteA));
  EXPECT_FALSE(b.arrive(1, kSiteA));
  const auto d = b.arrive(2, kSiteB);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Divergence::Kind::different_sites);
  EXPECT_EQ(d->barrier, 1u);
  EXPECT_EQ(d->waiting, 0u);
  EXPECT_EQ(d->waiting_site, kSiteA);
  EXPECT_EQ(d->other, 2u);
  EXPECT_EQ(d->other_site, kSiteB);
}

TEST(BarrierCheck, ReturningBeforeTheFirstBarrierIsAllowed) {
  BarrierCheck b;
  b.begin_block(4);
  EXPECT_FALSE(b.exit(3));  // `if (i >= n) return;`
  EXPECT_FALSE(b.arrive(0, kSiteA));
  EXPECT_FALSE(b.exit(2));
  EXPECT_FALSE(b.arrive(1, kSiteA));
  b.complete();
  EXPECT_FALSE(b.arrive(0, kSiteB));
  EXPECT_FALSE(b.arrive(1, kSiteB));
}

TEST(BarrierCheck, ReturningWhileOthersWaitAtALaterBarrierDiverges) {
  BarrierCheck b;
  b.begin_block(3);
  for (std::uint32_t t = 0; t < 3; ++t) EXPECT_FALSE(b.arrive(t, kSiteA));
  b.complete();
  EXPECT_FALSE(b.arrive(0, kSiteB));
  const auto d = b.exit(1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Divergence::Kind::exited);
  EXPECT_EQ(d->other, 1u);
  EXPECT_EQ(d->other_passed, 1u);
  EXPECT_EQ(d->waiting, 0u);
  EXPECT_EQ(d->barrier, 2u);
  EXPECT_EQ(d->waiting_site, kSiteB);
}

TEST(BarrierCheck, ReturningBeforeOthersReachALaterBarrierDiverges) {
  BarrierCheck b;
  b.begin_block(2);
  EXPECT_FALSE(b.arrive(0, kSiteA));
  EXPECT_FALSE(b.arrive(1, kSiteA));
  b.complete();
  EXPECT_FALSE(b.exit(0));  // nobody waits yet
  const auto d = b.arrive(1, kSiteB);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Divergence::Kind::exited);
  EXPECT_EQ(d->other, 0u);
  EXPECT_EQ(d->waiting, 1u);
}

// ---- Checker: the messages ---------------------------------------------------------------------------

struct CheckerFixture : testing::Test {
  CheckerFixture() {
    registry.add(out, sizeof out);
    registry.mark_written(out, sizeof out);
    registry.add(in, sizeof in);
    const SpanArgument args[] = {{in, 16, 4, 1, "devctx::span<const float>"}, {out, 16, 4, 2, "devctx::span<float>"}};
    checker.begin_launch("scale", {4, 1, 1}, {8, 2, 1}, args, 0, &registry);
    checker.add_shared_array("tile", 64, 16 * 16 * 4, 4);
    checker.begin_block({2, 0, 0}, shared);
  }
  std::string error_of_span(std::uint32_t rank, const void* data, std::size_t index, std::size_t count, bool ro) {
    try {
      (void)checker.span_element(rank, data, index, count, 4, ro);
    } catch (const Report& r) {
      return r.what();
    }
    return "";
  }

  ShadowRegistry registry;
  float in[16] = {};
  float out[16] = {};
  alignas(64) std::byte shared[2048] = {};
  Checker checker;
};

TEST_F(CheckerFixture, NamesTheArgumentAndIndexOfAnOutOfBoundsAccess) {
  EXPECT_EQ(checker.span_element(0, out, 3, 16, 4, false), &out[3]);
  const std::string m = error_of_span(0, out, 16, 16, false);
  EXPECT_THAT(m, HasSubstr("out-of-bounds access: index 16 of argument 2 (devctx::span<float>), which has 16 elements"));
  EXPECT_THAT(m, HasSubstr("(devctx checking mode)"));
  const std::string sub = error_of_span(0, out + 4, 8, 8, false);
  EXPECT_THAT(sub, HasSubstr("index 8 of a span of 8 elements starting at element 4 of argument 2 (devctx::span<float>); "
                             "guard the access"));
}

TEST_F(CheckerFixture, ReportsAReadOfUnwrittenInputNamingTheReader) {
  try {
    (void)checker.span_element(9, in, 5, 16, 4, true);
    FAIL() << "not reported";
  } catch (const Report& r) {
    EXPECT_FALSE(r.about_current_thread());
    EXPECT_THAT(r.what(), HasSubstr("read of uninitialised device memory: thread (1, 1, 0) read element 5 of "
                                    "argument 1 (devctx::span<const float>), which nothing wrote"));
  }
}

TEST_F(CheckerFixture, NamesTheThreadsAndTheSharedElementOfAWriteWriteRace) {
  // Shared memory is compared, not hooked: what changed while a thread ran is what it wrote.
  auto* tile = reinterpret_cast<float*>(shared + 64);
  devctx::detail::cpu::tls.block_dim = {8, 2, 1};
  devctx::detail::cpu::tls.thread_idx = {1, 0, 0};
  tile[17] = 3.0f;
  checker.thread_switch();
  devctx::detail::cpu::tls.thread_idx = {2, 0, 0};
  tile[17] = 4.0f;
  std::string m;
  try {
    checker.thread_switch();
  } catch (const Report& r) {
    m = r.what();
  }
  devctx::detail::cpu::tls.block_dim = {1, 1, 1};
  devctx::detail::cpu::tls.thread_idx = {0, 0, 0};
  EXPECT_THAT(m, HasSubstr("shared-memory race: thread (1, 0, 0) wrote element 17 of shared array 'tile' and thread "
                           "(2, 0, 0) wrote it too with no barrier() between the two (both before the block's first "
                           "barrier)"));
}

TEST_F(CheckerFixture, NamesTheBarrierOfTheIntervalOfARace) {
  for (std::uint32_t t = 0; t < 16; ++t) checker.barrier_arrive(t, {"k.cpp", 7, 3});
  checker.barrier_complete();
  (void)checker.span_element(4, out, 0, 16, 4, false);                         // reads
  *static_cast<float*>(checker.span_element(5, out, 0, 16, 4, false)) = 1.0f;  // writes
  try {
    checker.block_end();
    FAIL() << "not reported";
  } catch (const Report& r) {
    EXPECT_THAT(r.what(), HasSubstr("global-memory race: thread (5, 0, 0) wrote element 0 of argument 2 "
                                    "(devctx::span<float>) and thread (4, 0, 0) accessed it with no barrier() "
                                    "between the two (both after the block's barrier #1 (the barrier() at k.cpp:7:3))"));
  }
}

TEST_F(CheckerFixture, AFaultPastASharedArrayNamesTheArrayAndIndex) {
  const std::byte* tile = shared + 64;
  const auto m = checker.guard_fault_text(tile + 16 * 16 * 4 + 8);
  ASSERT_TRUE(m);
  EXPECT_THAT(*m, HasSubstr("out-of-bounds access: index 258 of shared array 'tile', which has 256 elements"));
  EXPECT_FALSE(checker.guard_fault_text(tile + 16));
}

TEST_F(CheckerFixture, AtomicsThroughPointersAreNamedByTheirAllocation) {
  checker.begin_launch("scale", {4, 1, 1}, {8, 2, 1}, {}, 0, &registry);  // no span arguments this time
  checker.begin_block({0, 0, 0}, shared);
  try {
    checker.atomic(0, &in[2], 4);
    FAIL() << "an atomic on unwritten memory was not reported";
  } catch (const Report& r) {
    EXPECT_THAT(r.what(), HasSubstr("thread (0, 0, 0) read element 2 of device memory at "));
  }
}

TEST_F(CheckerFixture, DescribesBothKindsOfDivergence) {
  checker.barrier_arrive(0, {"k.cpp", 10, 5});
  try {
    checker.barrier_arrive(1, {"k.cpp", 12, 5});
    FAIL();
  } catch (const Report& r) {
    EXPECT_THAT(r.what(), HasSubstr("barrier divergence: thread (0, 0, 0) waits at the barrier() at k.cpp:10:5 and "
                                    "thread (1, 0, 0) at the one at k.cpp:12:5 (the block's barrier #1)"));
  }
  checker.begin_block({1, 0, 0}, shared);
  for (std::uint32_t t = 0; t < 16; ++t) checker.barrier_arrive(t, {"k.cpp", 10, 5});
  checker.barrier_complete();
  checker.barrier_arrive(0, {"k.cpp", 20, 5});
  const auto m = checker.thread_exit(9);
  ASSERT_TRUE(m);
  EXPECT_THAT(*m, HasSubstr("barrier divergence: thread (1, 1, 0) returned after passing 1 barrier while thread "
                            "(0, 0, 0) waits at the block's barrier #2 (the barrier() at k.cpp:20:5)"));
}

TEST_F(CheckerFixture, NamesBothBlocksOfARaceBetweenBlocks) {
  *static_cast<float*>(checker.span_element(3, out, 7, 16, 4, false)) = 5.0f;
  checker.block_end();
  checker.begin_block({3, 0, 0}, shared);
  (void)checker.span_element(0, out, 7, 16, 4, false);
  try {
    checker.block_end();
    FAIL();
  } catch (const Report& r) {
    EXPECT_THAT(r.what(), HasSubstr("global-memory race between blocks: thread (3, 0, 0) of block (2, 0, 0) wrote "
                                    "element 7 of argument 2 (devctx::span<float>) and thread (0, 0, 0) of block "
                                    "(3, 0, 0) accessed it"));
  }
}

// ---- host access: HostGuard and QueueWatch -------------------------------------------------------------

std::string host_error(HostGuard& g, const char* access) {
  try {
    g.check(access);
  } catch (const devctx::Error& e) {
    return e.what();
  }
  return "";
}

TEST(HostGuard, RefusesAccessUntilTheHostWaitedForTheCopy) {
  auto q = std::make_shared<QueueWatch>("cpu:0 (test)");
  HostGuard g;
  EXPECT_EQ(g.pending.load(), 0u);
  const auto before = q->next_ticket();  // some earlier work
  const auto copy = q->next_ticket();
  g.add(q, copy, HostGuard::Use::copy_into);
  EXPECT_NE(g.pending.load(), 0u);
  EXPECT_THAT(host_error(g, "HostBuffer::operator[]"),
              HasSubstr("HostBuffer::operator[] while a copy into this HostBuffer on cpu:0 (test) may still be running"));
  q->observe(before);  // a wait that does not cover the copy
  EXPECT_NE(host_error(g, "HostBuffer::data()"), "");
  q->observe(q->issued());  // synchronize()
  EXPECT_EQ(host_error(g, "HostBuffer::data()"), "");
  EXPECT_EQ(g.pending.load(), 0u);
}

TEST(HostGuard, NamesWhatIsPending) {
  auto q = std::make_shared<QueueWatch>("cpu:0 (test)");
  HostGuard out, fill;
  out.add(q, q->next_ticket(), HostGuard::Use::copy_out_of);
  fill.add(q, q->next_ticket(), HostGuard::Use::fill);
  EXPECT_THAT(host_error(out, "HostBuffer::begin()"), HasSubstr("while a copy out of this HostBuffer"));
  EXPECT_THAT(host_error(fill, "HostBuffer::begin()"), HasSubstr("while an enqueue_memset of this HostBuffer"));
}

TEST(QueueWatch, AWaitForAnotherStreamsEventObservesThatStreamToo) {
  auto a = std::make_shared<QueueWatch>("a");
  auto b = std::make_shared<QueueWatch>("b");
  HostGuard g;
  g.add(a, a->next_ticket(), HostGuard::Use::copy_into);  // a: copy (1)
  const auto event = a->next_ticket();                    // a: record_event (2)
  const auto later = a->next_ticket();                    // a: more work (3), not covered
  const auto wait = b->next_ticket();                     // b: enqueue_wait_for(event)
  b->note_wait(wait, a, event);
  b->observe(b->issued());  // b.synchronize()
  EXPECT_TRUE(a->observed(event));
  EXPECT_FALSE(a->observed(later));
  EXPECT_EQ(host_error(g, "HostBuffer::operator[]"), "");
}

}  // namespace
