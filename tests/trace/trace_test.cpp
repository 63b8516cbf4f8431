// SPDX-License-Identifier: Apache-2.0
// tests/trace/trace_test.cpp - the trace recorder, its Chrome trace-event file and the report:
// the scripted program (trace_program.cpp) is recorded on each backend, and every event of the
// file read back (with nlohmann::json) is checked: name, track, order, byte counts, and the
// report's totals against what the program moved and against the file's device times; and
// DEVCTX_TRACE_FILE on whole programs (trace_stream_probe.cpp, started with the variable set):
// the streamed file complete and valid, the recorder's memory bounded, a failed write visible
// in the exit status, an unwritable path refused; all of it also under a comma-decimal locale.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <clocale>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <iterator>
#include <locale>
#include <optional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

extern char** environ;

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define DEVCTX_TEST_LSAN 1
#else
#define DEVCTX_TEST_LSAN 0
#endif

#include "support/test_support.hpp"
#include "trace/trace_program.hpp"

namespace devctx_test {
namespace {

using devctx::trace::Direction;
using devctx::trace::Kind;
using nlohmann::json;

/// Recording on for one test, and nothing left over for the next.
class Traced : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    devctx::trace::stop();
    devctx::trace::clear();
  }
  void TearDown() override {
    devctx::trace::stop();
    devctx::trace::clear();
    BackendTest::TearDown();
  }
};

/// The operations recorded while running the program, with their expectations.
struct Recorded {
  ProgramResult program;
  std::vector<devctx::trace::Operation> ops;
};

Recorded record_program(devctx::DeviceContext& ctx, std::mt19937_64& rng) {
  devctx::trace::start();
  Recorded r;
  r.program = run_trace_program(ctx, rng);
  devctx::trace::stop();
  r.ops = devctx::trace::operations();
  return r;
}

bool has_device_time(Kind k) { return k == Kind::copy || k == Kind::fill || k == Kind::kernel || k == Kind::wait; }

TEST_P(Traced, KernelsAreNamedAsWrittenWithoutAnonymousNamespaces) {
  // Each compiler spells an anonymous namespace its own way (GCC "{anonymous}", Clang
  // "(anonymous namespace)", nvcc "_GLOBAL__N__<hash>_<file>"): left out, the name is the same
  // on every backend and in profilers.
  EXPECT_THAT(scoped_kernel_names(ctx()), testing::ElementsAre("trace_names::scoped_kernel", "top_scoped_kernel",
                                                               "trace_names::templated_kernel<int>"));
}

TEST_P(Traced, EveryOperationIsRecordedInOrderWithItsFields) {
  const Recorded r = record_program(ctx(), rng);
  ASSERT_TRUE(r.program.values_ok) << r.program.first_bad;
  const auto& expected = r.program.expected;
  ASSERT_EQ(r.ops.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "operation " << i + 1 << " (" << expected[i].name << ")");
    const auto& op = r.ops[i];
    const auto& want = expected[i];
    EXPECT_EQ(op.id, i + 1);
    EXPECT_EQ(op.kind, want.kind);
    EXPECT_EQ(op.name, want.name);
    EXPECT_EQ(op.stream, want.stream);
    EXPECT_EQ(op.bytes, want.bytes);
    EXPECT_EQ(op.direction, want.direction);
    if (want.kind == Kind::copy) {
      EXPECT_EQ(op.pageable, want.pageable);
    }
    EXPECT_EQ(op.host_memory, want.host_memory);  // allocations and frees: which memory
    EXPECT_FALSE(op.staged);                      // small copies: never staged
    EXPECT_EQ(op.device, std::string(devctx::to_string(api())) + ":0 (" + ctx().name() + ")");
    EXPECT_EQ(op.host_thread, r.ops[0].host_thread);
    EXPECT_LE(op.host_begin_us, op.host_end_us);
    if (i > 0) {
      EXPECT_LE(r.ops[i - 1].host_begin_us, op.host_begin_us);
    }
    if (want.kind == Kind::kernel) {
      EXPECT_EQ(op.grid_dim.x, r.program.grid);
      EXPECT_EQ(op.block_dim.x, r.program.block);
      EXPECT_EQ(op.grid_dim.y * op.grid_dim.z * op.block_dim.y * op.block_dim.z, 1u);
      EXPECT_EQ(op.shared_bytes, 0u);
    }
    // Everything was synchronized: every device operation has its device time.
    ASSERT_EQ(op.device_begin_us.has_value(), has_device_time(want.kind));
    if (op.device_begin_us) {
      EXPECT_LE(*op.device_begin_us, *op.device_end_us);
    }
  }
  // Device work of one stream runs in enqueue order; the wait orders affine_kernel (stream 2)
  // after add_kernel (stream 1). Event timestamps: 0.5 us resolution on a GPU (CUDA).
  const double slack = devctx::backend(api()).has_device_memory ? 1.0 : 0.0;
  std::map<int, double> last_end;
  for (const auto& op : r.ops) {
    if (!op.device_begin_us) continue;
    if (last_end.contains(op.stream)) {
      EXPECT_GE(*op.device_begin_us + slack, last_end[op.stream]) << op.name;
    }
    last_end[op.stream] = *op.device_end_us;
  }
  auto find = [&](const char* name) {
    return *std::find_if(r.ops.begin(), r.ops.end(), [&](const auto& op) { return op.name == name; });
  };
  EXPECT_GE(*find("affine_kernel").device_begin_us + slack, *find("add_kernel").device_end_us);
}

TEST_P(Traced, TheTraceFileHoldsEveryEventOnItsTrack) {
  const Recorded r = record_program(ctx(), rng);
  ASSERT_TRUE(r.program.values_ok) << r.program.first_bad;
  const std::string path = testing::TempDir() + "devctx_trace_test_" + std::to_string(::getpid()) + ".json";
  devctx::trace::write(path);
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const json doc = json::parse(in);  // throws (fails the test) unless it is valid JSON
  std::remove(path.c_str());
  ASSERT_TRUE(doc.contains("traceEvents"));
  const json& events = doc["traceEvents"];
  ASSERT_TRUE(events.is_array());

  // Track names: the host is process 0, the device process 1 with a thread per stream.
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<int, std::string> process_names;
  std::vector<json> host, device;
  std::set<std::uint64_t> flow_starts, flow_ends;
  for (const json& e : events) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "process_name")
      process_names[e.at("pid")] = e.at("args").at("name");
    else if (ph == "M" && e.at("name") == "thread_name")
      thread_names[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
    else if (ph == "s")
      flow_starts.insert(e.at("id").get<std::uint64_t>());
    else if (ph == "f")
      flow_ends.insert(e.at("id").get<std::uint64_t>());
    else if ((ph == "X" || ph == "i") && e.at("pid") == 0)
      host.push_back(e);
    else if (ph == "X")
      device.push_back(e);
    else
      EXPECT_EQ(ph, "C") << e.dump();  // the device-memory counter
  }
  EXPECT_EQ(process_names[0], "host");
  EXPECT_EQ(process_names[1], r.ops[0].device);
  EXPECT_EQ(thread_names[(std::pair{1, 1})], "stream 1");
  EXPECT_EQ(thread_names[(std::pair{1, 2})], "stream 2");

  const auto& expected = r.program.expected;
  ASSERT_EQ(host.size(), expected.size());
  std::vector<std::size_t> device_ops;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "host event " << i + 1 << ": " << host[i].dump());
    const json& e = host[i];
    const auto& want = expected[i];
    EXPECT_EQ(e.at("name"), want.name);
    EXPECT_EQ(e.at("cat"), devctx::trace::to_string(want.kind));
    EXPECT_EQ(e.at("ph"), want.kind == Kind::record_event ? "i" : "X");
    EXPECT_EQ(e.at("tid"), r.ops[0].host_thread);
    EXPECT_EQ(thread_names[(std::pair{0, e.at("tid").get<int>()})], "host thread " + std::to_string(r.ops[0].host_thread));
    const json& a = e.at("args");
    EXPECT_EQ(a.at("op"), i + 1);
    EXPECT_EQ(a.at("stream"), want.stream);
    EXPECT_EQ(a.at("device"), r.ops[0].device);
    if (want.bytes > 0)
      EXPECT_EQ(a.at("bytes"), want.bytes);
    else
      EXPECT_FALSE(a.contains("bytes"));
    if (want.kind == Kind::copy) {
      EXPECT_EQ(a.at("direction"), devctx::trace::to_string(want.direction));
      EXPECT_EQ(a.at("host_memory"), want.direction == Direction::device_to_device ? "none"
                                     : want.pageable                               ? "pageable"
                                                                                   : "pinned");
      EXPECT_EQ(a.at("path"), "direct");
    }
    if (want.kind == Kind::allocate || want.kind == Kind::free) {
      EXPECT_EQ(a.at("memory"), want.host_memory ? "host" : "device");
    } else {
      EXPECT_FALSE(a.contains("memory"));
    }
    // A host wait spans the wait itself on the host track; it has no device event.
    if (want.kind == Kind::synchronize) {
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
    }
    if (want.kind == Kind::kernel) {
      EXPECT_EQ(a.at("grid_dim"), json::array({r.program.grid, 1, 1}));
      EXPECT_EQ(a.at("block_dim"), json::array({r.program.block, 1, 1}));
      EXPECT_EQ(a.at("shared_bytes"), 0);
      // How the CPU backend ran it (the program's kernels have no barrier); nothing on CUDA.
      if (api() == devctx::Api::cpu) {
        EXPECT_EQ(a.at("execution"), "plain loop: no thread reached barrier() or a warp operation");
      } else {
        EXPECT_FALSE(a.contains("execution"));
      }
    }
    if (has_device_time(want.kind)) device_ops.push_back(i);
  }
  // One execution event per device operation, on its stream's track, in enqueue order, with
  // the same name and fields, and an arrow from its enqueue.
  ASSERT_EQ(device.size(), device_ops.size());
  for (std::size_t k = 0; k < device.size(); ++k) {
    const json& e = device[k];
    const auto& want = expected[device_ops[k]];
    SCOPED_TRACE(e.dump());
    EXPECT_EQ(e.at("name"), want.name);
    EXPECT_EQ(e.at("pid"), 1);
    EXPECT_EQ(e.at("tid"), want.stream);
    EXPECT_EQ(e.at("args").at("op"), device_ops[k] + 1);
    if (want.bytes > 0) {
      EXPECT_EQ(e.at("args").at("bytes"), want.bytes);
    }
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    EXPECT_TRUE(flow_starts.contains(device_ops[k] + 1));
    EXPECT_TRUE(flow_ends.contains(device_ops[k] + 1));
  }
}

TEST_P(Traced, TheReportCountsExactlyWhatTheProgramMoved) {
  const Recorded r = record_program(ctx(), rng);
  ASSERT_TRUE(r.program.values_ok) << r.program.first_bad;
  const std::uint64_t bytes = r.program.n * sizeof(std::uint32_t);
  const devctx::trace::Report report = ctx().report();
  EXPECT_EQ(report.host_to_device_pinned.count, 1u);
  EXPECT_EQ(report.host_to_device_pinned.bytes, bytes);
  EXPECT_EQ(report.host_to_device_pageable.count, 1u);
  EXPECT_EQ(report.host_to_device_pageable.bytes, bytes);
  EXPECT_EQ(report.device_to_host_pinned.count, 2u);
  EXPECT_EQ(report.device_to_host_pinned.bytes, 2 * bytes);
  EXPECT_EQ(report.device_to_host_pageable.count, 1u);
  EXPECT_EQ(report.device_to_host_pageable.bytes, bytes);
  EXPECT_EQ(report.device_to_device.count, 2u);
  EXPECT_EQ(report.device_to_device.bytes, 2 * bytes);
  EXPECT_EQ(report.host_to_host.count, 1u);
  EXPECT_EQ(report.host_to_host.bytes, bytes);
  EXPECT_EQ(report.transfer_bytes(), 8 * bytes);
  EXPECT_EQ(report.kernels, 2u);
  EXPECT_EQ(report.fills, 1u);
  EXPECT_EQ(report.fill_bytes, bytes);
  EXPECT_EQ(report.round_trips, 1u);  // uploads, then downloads: one round trip
  // Host waits: two synchronizes, Event::synchronize, elapsed_ms, synchronize_device.
  EXPECT_EQ(report.host_waits, 5u);
  EXPECT_EQ(report.host_waits, std::uint64_t(std::count_if(r.ops.begin(), r.ops.end(),
                                                           [](const auto& op) { return op.kind == Kind::synchronize; })));

  // The time shares are those of the trace file's device events.
  const json doc = json::parse(devctx::trace::to_json(r.ops));
  double copy_us = 0, kernel_us = 0, fill_us = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e.at("ph") != "X" || e.at("pid") == 0) continue;
    const double dur = e.at("dur");
    if (e.at("cat") == "copy") copy_us += dur;
    if (e.at("cat") == "kernel") kernel_us += dur;
    if (e.at("cat") == "fill") fill_us += dur;
  }
  const double tolerance = 0.002 * double(r.ops.size());  // the file rounds each time to 1 ns
  EXPECT_NEAR(report.transfer_ms() * 1000, copy_us, tolerance);
  EXPECT_NEAR(report.kernel_ms * 1000, kernel_us, tolerance);
  EXPECT_NEAR(report.fill_ms * 1000, fill_us, tolerance);
  double wait_us = 0;
  for (const json& e : doc["traceEvents"])
    if (e.at("ph") == "X" && e.at("pid") == 0 && e.at("cat") == "synchronize") wait_us += e.at("dur").get<double>();
  EXPECT_NEAR(report.host_wait_ms * 1000, wait_us, tolerance);
  const double busy = copy_us + kernel_us + fill_us;
  ASSERT_GT(busy, 0);
  EXPECT_NEAR(report.transfer_share, copy_us / busy, 1e-3);
  // The text names every direction the program used.
  const std::string text = devctx::trace::to_string(report);
  EXPECT_THAT(text, testing::HasSubstr("host -> device (HostBuffer, pinned)"));
  EXPECT_THAT(text, testing::HasSubstr("round trips (uploads then a download): 1"));
  EXPECT_THAT(text, testing::HasSubstr("host waits (synchronize, events): 5, "));
}

TEST_P(Traced, TransfersThatDominateGetTheLessonsAdvice) {
  // A synthetic list: the report's rules, independent of how fast this machine copies.
  std::vector<devctx::trace::Operation> ops(3);
  ops[0].kind = Kind::copy;
  ops[0].direction = Direction::host_to_device;
  ops[0].pageable = true;
  ops[0].bytes = 1 << 20;
  ops[0].device_begin_us = 0;
  ops[0].device_end_us = 900;
  ops[1].kind = Kind::kernel;
  ops[1].device_begin_us = 900;
  ops[1].device_end_us = 1000;
  ops[2] = ops[0];
  ops[2].direction = Direction::device_to_host;
  const auto report = devctx::trace::summarize(ops);
  EXPECT_NEAR(report.transfer_share, 1800.0 / 1900.0, 1e-12);
  EXPECT_EQ(report.round_trips, 1u);
  ASSERT_EQ(report.advice.size(), 2u);
  EXPECT_THAT(report.advice[0], testing::HasSubstr("keep data on the device"));
  EXPECT_THAT(report.advice[1], testing::HasSubstr("HostBuffer"));
  ASSERT_EQ(report.largest.size(), 2u);
  EXPECT_EQ(report.largest[0].bytes_each, 1u << 20);
  EXPECT_THAT(devctx::trace::to_string(report), testing::HasSubstr("1 x 1.0 MiB"));
  // Kernels dominating: no advice.
  ops[1].device_end_us = 100000;
  EXPECT_TRUE(devctx::trace::summarize(ops).advice.empty());
}

TEST_P(Traced, RefusedWorkIsNotRecordedAndNothingIsRecordedWhileOff) {
  auto a = ctx().enqueue_create_buffer<float>(10);
  auto b = ctx().enqueue_create_buffer<float>(11);
  ctx().enqueue_memset(b, 1.5f);  // the copy below reads it (initcheck on the GPU)
  ctx().synchronize();
  EXPECT_TRUE(devctx::trace::operations().empty());  // recording is off
  EXPECT_FALSE(devctx::trace::recording());
  try {
    (void)ctx().report();
    ADD_FAILURE() << "report() without a recording did not throw";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::not_available);
    EXPECT_THAT(e.what(), testing::HasSubstr("DEVCTX_REPORT=1"));
  }
  devctx::trace::start();
  EXPECT_TRUE(devctx::trace::recording());
  EXPECT_THROW(ctx().enqueue_copy(a, b), devctx::Error);  // sizes differ: refused, nothing enqueued
  EXPECT_TRUE(devctx::trace::operations().empty());
  ctx().enqueue_copy(a, b.slice(0, 10));
  ctx().synchronize();
  const auto ops = devctx::trace::operations();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "copy DtoD");
  EXPECT_EQ(ops[1].name, "synchronize");
  EXPECT_EQ(ctx().report().device_to_device.bytes, 40u);
}

TEST_P(Traced, AHostTaskIsRecordedAsDeviceWorkOfItsStream) {
  devctx::trace::start();
  int ran = 0;
  ctx().enqueue_host_task([&ran] { ++ran; });
  ctx().synchronize();
  EXPECT_EQ(ran, 1);
  const auto ops = devctx::trace::operations();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].kind, Kind::host_task);
  EXPECT_EQ(ops[0].name, "host_task");
  EXPECT_STREQ(devctx::trace::to_string(ops[0].kind), "host_task");
  EXPECT_EQ(devctx::trace::kind_from_string("host_task"), Kind::host_task);
  EXPECT_EQ(ops[1].name, "synchronize");
  // Every kind reads back from its own spelling (what `devctx trace summarize` does).
  for (unsigned k = 0; k < devctx::trace::kind_count; ++k)
    EXPECT_EQ(devctx::trace::kind_from_string(devctx::trace::to_string(Kind(k))), Kind(k));
  EXPECT_FALSE(devctx::trace::kind_from_string("memcpy").has_value());
}

TEST_P(Traced, ExplicitAndImplicitFreesAreRecordedOnTheBuffersHomeStream) {
  const std::size_t n = std::uniform_int_distribution<std::size_t>(100, 5000)(rng);
  auto s = ctx().create_stream();
  auto d = s.enqueue_create_buffer<std::uint32_t>(n);  // home: the created stream
  auto h = ctx().enqueue_create_host_buffer<std::uint64_t>(n);
  auto d2 = ctx().enqueue_create_buffer<std::uint16_t>(n);
  ctx().synchronize();
  devctx::trace::start();
  ctx().synchronize();  // the context's stream is stream 1 of the trace
  s.enqueue_memset(d, std::uint32_t(rng()));
  ctx().enqueue_memset(d2, std::uint16_t(rng()));
  const auto released = d.release();  // explicit: the new owner frees it
  released.free(released.owner);
  const auto released_host = h.release();
  released_host.free(released_host.owner);
  {
    const auto gone = std::move(d2);
  }  // implicit: the last handle goes
  devctx::trace::stop();
  const auto ops = devctx::trace::operations();
  struct Want {
    Kind kind;
    int stream;
    std::uint64_t bytes;
    bool host_memory;
  };
  const std::vector<Want> want = {
      {Kind::synchronize, 1, 0, false}, {Kind::fill, 2, n * 4, false}, {Kind::fill, 1, n * 2, false},
      {Kind::free, 2, n * 4, false},    {Kind::free, 1, n * 8, true},  {Kind::free, 1, n * 2, false},
  };
  ASSERT_EQ(ops.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "operation " << i + 1 << " (" << ops[i].name << ")");
    EXPECT_EQ(ops[i].kind, want[i].kind);
    EXPECT_EQ(ops[i].stream, want[i].stream);
    EXPECT_EQ(ops[i].bytes, want[i].bytes);
    EXPECT_EQ(ops[i].host_memory, want[i].host_memory);
  }
  ctx().synchronize();
}

TEST_P(Traced, EachHostThreadAndStreamHasItsOwnTrack) {
  // Two host threads, each enqueueing on its own stream at the same time.
  constexpr int kCopies = 50;
  const std::size_t n = std::uniform_int_distribution<std::size_t>(100, 1000)(rng);
  auto a = ctx().enqueue_create_buffer<std::uint32_t>(n);
  auto b = ctx().enqueue_create_buffer<std::uint32_t>(n);
  auto c = ctx().enqueue_create_buffer<std::uint32_t>(n);
  ctx().enqueue_memset(a, 7u);
  ctx().synchronize();
  devctx::trace::start();
  std::vector<std::thread> threads;
  for (auto* dst : {&b, &c})
    threads.emplace_back([&, dst] {
      auto s = ctx().create_stream();
      for (int i = 0; i < kCopies; ++i) s.enqueue_copy(*dst, a);
      s.synchronize();
    });
  for (auto& t : threads) t.join();
  devctx::trace::stop();
  const auto ops = devctx::trace::operations();
  ASSERT_EQ(ops.size(), 2u * (kCopies + 1));  // the copies and each stream's synchronize
  std::map<int, std::set<int>> streams_of_thread;
  std::map<int, int> copies_of_thread;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].id, i + 1);
    streams_of_thread[ops[i].host_thread].insert(ops[i].stream);
    if (ops[i].kind == Kind::copy) {
      ++copies_of_thread[ops[i].host_thread];
      EXPECT_EQ(ops[i].bytes, n * sizeof(std::uint32_t));
      EXPECT_TRUE(ops[i].device_begin_us.has_value());
    }
  }
  ASSERT_EQ(streams_of_thread.size(), 2u);
  std::set<int> streams;
  for (const auto& [thread, s] : streams_of_thread) {
    ASSERT_EQ(s.size(), 1u) << "host thread " << thread;  // each thread used one stream
    streams.insert(*s.begin());
    EXPECT_EQ(copies_of_thread[thread], kCopies);
  }
  EXPECT_EQ(streams.size(), 2u);
  // Every element arrived.
  for (auto* dst : {&b, &c}) {
    std::vector<std::uint32_t> host(n, 0);
    ctx().enqueue_copy(std::span<std::uint32_t>(host), *dst);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(host[i], 7u) << i;
  }
}

TEST_P(Traced, LargePageableCopiesSayWhetherTheyWereStaged) {
  // Above DEVCTX_CUDA_STAGING_THRESHOLD (8 MiB by default) the CUDA backend stages a pageable
  // copy through pinned chunks; the CPU backend never stages.
  const std::size_t n = (std::size_t{9} << 20) / sizeof(std::uint32_t) +
                        std::uniform_int_distribution<std::size_t>(0, 999)(rng);
  std::vector<std::uint32_t> in(n), out(n, 0xDEADBEEFu);
  for (auto& x : in) x = std::uint32_t(rng());
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(n);
  devctx::trace::start();
  ctx().enqueue_copy(d, std::span<const std::uint32_t>(in));
  ctx().enqueue_copy(std::span<std::uint32_t>(out), d);
  ctx().synchronize();
  devctx::trace::stop();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], in[i]) << i;
  const auto ops = devctx::trace::operations();
  ASSERT_EQ(ops.size(), 3u);
  const char* staging = std::getenv("DEVCTX_CUDA_STAGING");
  const bool staged = devctx::backend(api()).name == "cuda" && (staging == nullptr || std::string(staging) != "0");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ops[i].kind, Kind::copy);
    EXPECT_TRUE(ops[i].pageable);
    EXPECT_EQ(ops[i].bytes, n * sizeof(std::uint32_t));
    EXPECT_EQ(ops[i].staged, staged) << ops[i].name;
  }
  const json doc = json::parse(devctx::trace::to_json(ops));
  int with_path = 0;
  for (const json& e : doc["traceEvents"])
    if (e.at("ph") == "X" && e.at("cat") == "copy") {
      EXPECT_EQ(e.at("args").at("path"), staged ? "staged" : "direct");
      ++with_path;
    }
  EXPECT_EQ(with_path, 4);  // host and device events of both copies
}

TEST_P(Traced, LargeCopiesThroughSpansOverPageLockedMemoryAreNotStaged) {
  // A std::span is all devctx sees of a HostBuffer's data here, but CUDA knows the memory is
  // page-locked: a direct DMA, not the staging engine (55 against 41 GB/s on the H200). Both
  // directions, above the staging threshold, every element checked.
  const std::size_t n = (std::size_t{9} << 20) / sizeof(std::uint32_t) +
                        std::uniform_int_distribution<std::size_t>(0, 999)(rng);
  auto pinned = ctx().enqueue_create_host_buffer<std::uint32_t>(n);
  auto d = poisoned_buffer<std::uint32_t>(ctx(), n);
  ctx().synchronize();
  std::vector<std::uint32_t> in(n);
  for (auto& x : in) x = std::uint32_t(rng());
  std::copy(in.begin(), in.end(), pinned.begin());
  const std::span<std::uint32_t> span(pinned.data(), n);
  devctx::trace::start();
  ctx().enqueue_copy(d, std::span<const std::uint32_t>(span));
  std::fill(pinned.begin(), pinned.end(), poison_value<std::uint32_t>());  // the upload is done on return
  ctx().enqueue_copy(span, d);
  // Done on return too, as every copy into a std::span is: no synchronize before the check.
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(pinned[i], in[i]) << i;
  devctx::trace::stop();
  const auto ops = devctx::trace::operations();
  ASSERT_EQ(ops.size(), 2u);
  for (const auto& op : ops) {
    EXPECT_EQ(op.kind, Kind::copy);
    EXPECT_EQ(op.bytes, n * sizeof(std::uint32_t));
    EXPECT_FALSE(op.staged) << op.name;
  }
}

TEST_P(Traced, WritingToABadPathIsAClearError) {
  devctx::trace::start();
  try {
    devctx::trace::write("/nonexistent-directory/trace.json");
    ADD_FAILURE() << "write did not throw";
  } catch (const devctx::Error& e) {
    EXPECT_EQ(e.code(), devctx::Errc::invalid_argument);
    EXPECT_THAT(e.what(), testing::HasSubstr("cannot open '/nonexistent-directory/trace.json'"));
  }
}

DEVCTX_INSTANTIATE_BACKEND_TESTS(Traced);

// ---- a comma-decimal locale, generated for the test ----------------------------------------------

/// The directory (for LOCPATH) holding de_DE.UTF-8, generated with localedef the first time
/// (the Debian package `locales` provides its source; scripts/packages.txt installs it), or
/// why it could not be.
struct CommaLocale {
  std::string dir, locpath, name = "de_DE.UTF-8", why_not;
  CommaLocale() = default;
  CommaLocale(const CommaLocale&) = delete;
  CommaLocale& operator=(const CommaLocale&) = delete;
  CommaLocale(CommaLocale&& other) noexcept
      : dir(std::exchange(other.dir, {})),
        locpath(std::move(other.locpath)),
        name(std::move(other.name)),
        why_not(std::move(other.why_not)) {}
  ~CommaLocale() {  // the generated locale goes with the test program
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
};
const CommaLocale& comma_locale() {
  static const CommaLocale loc = [] {
    CommaLocale l;
    const std::string dir = testing::TempDir() + "devctx_locales_" + std::to_string(::getpid());
    l.dir = dir;
    std::filesystem::create_directories(dir);
    const std::string cmd = "localedef -i de_DE -f UTF-8 '" + dir + "/de_DE.UTF-8' >'" + dir + "/localedef.log' 2>&1";
    const int rc = std::system(cmd.c_str());
    // localedef exits 1 for warnings with the locale written; the locale's presence decides.
    if (std::filesystem::exists(dir + "/de_DE.UTF-8/LC_NUMERIC")) {
      l.locpath = dir;
    } else {
      l.why_not = "cannot generate the de_DE.UTF-8 locale (`" + cmd + "` exited " + std::to_string(rc) +
                  "): install the Debian package `locales` (scripts/setup.sh does)";
    }
    return l;
  }();
  return loc;
}

#define DEVCTX_NEED_COMMA_LOCALE() \
  if (comma_locale().locpath.empty()) GTEST_SKIP() << comma_locale().why_not

/// While alive, the whole process runs under de_DE.UTF-8: C's locale (printf, strtod) and
/// C++'s global locale (streams made afterwards).
class UnderCommaLocale {
 public:
  UnderCommaLocale() {
    ::setenv("LOCPATH", comma_locale().locpath.c_str(), 1);
#if DEVCTX_TEST_LSAN
    __lsan_disable();  // glibc keeps 42 bytes of LOCPATH's parsing for good: not devctx's leak
#endif
    ok_ = std::setlocale(LC_ALL, comma_locale().name.c_str()) != nullptr;
    if (ok_) std::locale::global(std::locale(comma_locale().name));
#if DEVCTX_TEST_LSAN
    __lsan_enable();
#endif
  }
  ~UnderCommaLocale() {
    std::setlocale(LC_ALL, "C");
    std::locale::global(std::locale::classic());
    ::unsetenv("LOCPATH");
  }
  UnderCommaLocale(const UnderCommaLocale&) = delete;
  UnderCommaLocale& operator=(const UnderCommaLocale&) = delete;
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

TEST_P(Traced, TheFileAndTheReportAreTheSameUnderACommaDecimalLocale) {
  // Before: numbers went through snprintf("%.3f"), which writes "12,345" under such a locale.
  DEVCTX_NEED_COMMA_LOCALE();
  const Recorded r = record_program(ctx(), rng);
  ASSERT_TRUE(r.program.values_ok) << r.program.first_bad;
  const std::string plain_json = devctx::trace::to_json(r.ops);
  const std::string plain_report = devctx::trace::to_string(devctx::trace::summarize(r.ops));
  std::string json_text, report_text, file_text;
  {
    UnderCommaLocale loc;
    ASSERT_TRUE(loc.ok()) << "setlocale(LC_ALL, de_DE.UTF-8) with LOCPATH=" << comma_locale().locpath;
    char probe[16];
    std::snprintf(probe, sizeof probe, "%.1f", 1.5);
    ASSERT_STREQ(probe, "1,5");  // the locale is in force: printf would write a comma
    json_text = devctx::trace::to_json(r.ops);
    report_text = devctx::trace::to_string(devctx::trace::summarize(r.ops));
    const std::string path = testing::TempDir() + "devctx_trace_locale_" + std::to_string(::getpid()) + ".json";
    devctx::trace::write(path);
    std::ifstream in(path);
    file_text.assign(std::istreambuf_iterator<char>(in), {});
    std::remove(path.c_str());
  }
  EXPECT_EQ(json_text, plain_json);
  EXPECT_EQ(report_text, plain_report);
  EXPECT_THAT(report_text, testing::HasSubstr(" ms"));
  EXPECT_THAT(report_text, testing::Not(testing::ContainsRegex("[0-9],[0-9]")));
  // Every time in the file is the recorded one, to the nanosecond.
  const json doc = json::parse(file_text);
  std::size_t host = 0;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("pid") != 0 || (e.at("ph") != "X" && e.at("ph") != "i")) continue;
    const auto& op = r.ops.at(host++);
    EXPECT_NEAR(e.at("ts").get<double>(), op.host_begin_us, 0.0005001) << e.dump();
  }
  EXPECT_EQ(host, r.ops.size());
}

// ---- DEVCTX_TRACE_FILE on a whole program --------------------------------------------------------

struct ProbeRun {
  int status = -1;  // the exit status, or -1 when killed by a signal
  std::string out, err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// Runs the probe program with `args`, its environment this process's plus `env`.
ProbeRun run_probe(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  // Named by this process: ctest runs the cpu and cuda entries of this program at once.
  const std::string tag = std::to_string(::getpid());
  const std::string out = testing::TempDir() + "devctx_probe_out_" + tag + ".txt",
                    err = testing::TempDir() + "devctx_probe_err_" + tag + ".txt";
  std::vector<std::string> argv_s = {DEVCTX_TRACE_STREAM_PROBE};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string item = *e;
    const bool overridden = std::any_of(env.begin(), env.end(), [&](const std::string& mine) {
      return item.compare(0, mine.find('=') + 1, mine, 0, mine.find('=') + 1) == 0;
    });
    if (!overridden) env_s.push_back(item);
  }
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ProbeRun run;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    run.err = std::string("posix_spawn failed: ") + std::strerror(rc);
    return run;
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  run.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  run.out = read_file(out);
  run.err = read_file(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return run;
}

/// The probe's "name value" lines.
std::map<std::string, long> probe_counts(const std::string& out) {
  std::map<std::string, long> m;
  std::istringstream in(out);
  std::string name;
  long value = 0;
  while (in >> name >> value) m[name] = value;
  return m;
}

/// Checks that `path` is a complete trace of a probe run that printed `out`: valid JSON, one
/// host event for each operation 1..N with no gap, every memset, kernel and copy the probe
/// enqueued with its device execution, and the closing count N.
void expect_complete_probe_trace(const std::string& path, const std::string& out) {
  const auto counts = probe_counts(out);
  ASSERT_TRUE(counts.contains("copies")) << out;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const json doc = json::parse(in);  // throws (fails the test) unless it is valid JSON
  std::map<std::string, long> host_kinds, device_kinds;
  std::set<std::uint64_t> ids;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") != "X" && e.at("ph") != "i") continue;
    const std::string kind = e.at("args").at("kind");
    if (e.at("pid") == 0) {
      EXPECT_TRUE(ids.insert(e.at("args").at("op").get<std::uint64_t>()).second) << e.dump();
      ++host_kinds[kind];
    } else {
      ++device_kinds[kind];
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
    }
  }
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(*ids.begin(), 1u);
  EXPECT_EQ(*ids.rbegin(), ids.size());  // 1..N, no gap
  EXPECT_EQ(doc.at("otherData").at("operations").get<std::uint64_t>(), ids.size());
  // Each operation with device work has its device execution, or is counted among those the
  // recorder consumed before their device work finished: it keeps at most 16384 records pending
  // (bounded memory), which a device that falls far behind its host threads (a loaded CI
  // machine) can exceed.
  const auto late = doc.at("otherData").at("operations_without_device_time").get<long>();
  long device_work = 0, device_events = 0;
  for (const auto& [file_kind, probe_name] :
       std::map<std::string, std::string>{{"fill", "fills"}, {"kernel", "kernels"}, {"copy", "copies"}}) {
    EXPECT_EQ(host_kinds[file_kind], counts.at(probe_name)) << file_kind;
    EXPECT_LE(device_kinds[file_kind], counts.at(probe_name)) << file_kind;
    device_work += counts.at(probe_name);
    device_events += device_kinds[file_kind];
  }
  for (const char* other : {"wait", "host_task"}) {
    device_work += host_kinds[other];
    device_events += device_kinds[other];
  }
  EXPECT_EQ(device_events + late, device_work) << late << " consumed before their device work finished";
  EXPECT_LE(late, device_work / 2) << "most device executions are in the file";
}

TEST(TraceFile, IsStreamedCompleteAndValid) {
  const std::string path = testing::TempDir() + "devctx_stream_probe_" + std::to_string(::getpid()) + ".json";
  const ProbeRun run = run_probe({"--threads", "4", "--rounds", "1500"}, {"DEVCTX_TRACE_FILE=" + path});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  expect_complete_probe_trace(path, run.out);
  std::remove(path.c_str());
}

TEST(TraceFile, IsValidUnderACommaDecimalLocale) {
  // Before: a program that called setlocale(LC_ALL, "") under such a locale got "ts":12,345.
  DEVCTX_NEED_COMMA_LOCALE();
  const std::string path = testing::TempDir() + "devctx_stream_probe_locale_" + std::to_string(::getpid()) + ".json";
  const ProbeRun run = run_probe({"--threads", "2", "--rounds", "300", "--locale", comma_locale().name},
                                 {"DEVCTX_TRACE_FILE=" + path, "LOCPATH=" + comma_locale().locpath, "DEVCTX_REPORT=1"});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  expect_complete_probe_trace(path, run.out);
  // The report printed at exit writes its numbers the same way.
  EXPECT_THAT(run.err, testing::HasSubstr("devctx report: where the device time went"));
  EXPECT_THAT(run.err, testing::Not(testing::ContainsRegex("[0-9],[0-9]"))) << run.err;
  std::remove(path.c_str());
}

TEST(TraceLines, DEVCTX_TRACEWritesItsTimesWithAPointUnderACommaDecimalLocale) {
  // Before: the CPU backend's "devctx trace:" line printed its time with printf("%.3f"), so a
  // program under de_DE wrote "0,123 ms from enqueue" (tools and the Python tests read that line).
  DEVCTX_NEED_COMMA_LOCALE();
  const ProbeRun run = run_probe({"--threads", "1", "--rounds", "5", "--device", "cpu", "--locale", comma_locale().name},
                                 {"DEVCTX_TRACE=1", "LOCPATH=" + comma_locale().locpath});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_THAT(run.err, testing::ContainsRegex("; [0-9]+\\.[0-9][0-9][0-9] ms from enqueue")) << run.err;
  EXPECT_THAT(run.err, testing::Not(testing::ContainsRegex("[0-9],[0-9]+ ms from enqueue"))) << run.err;
}

TEST(TraceFile, RecordingMemoryStaysBoundedHoweverLongTheProgramRuns) {
  // Before: every record stayed in memory until exit (597 MB after 20 s of 8 threads). 2
  // threads x 48000 rounds are 288000 operations: kept in memory (trace::start() alone, as
  // DEVCTX_TRACE_FILE did before) the peak grows by 108-119 MiB on a 2-core machine;
  // streamed, at most 16384 records wait for their device times (bench/internal/trace_memory.cpp
  // shows the peak over 60 s of 8 threads). Streamed, the growth measured 6-16 MiB on an idle
  // 2-core machine and 33 MiB once in a loaded CI run (the pending records at their bound, about
  // 1 KiB each with their two events and strings, plus each thread's malloc arena): the bound
  // below is 48 MiB, and keeping the records must cost more than twice the streamed growth.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "resident memory says nothing under ASan or TSan (freed memory is held in quarantine)";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "resident memory says nothing under ASan or TSan (freed memory is held in quarantine)";
#endif
#endif
  const std::vector<std::string> args = {"--threads", "2", "--rounds", "48000"};
  const ProbeRun streamed = run_probe(args, {"DEVCTX_TRACE_FILE=/dev/null"});
  ASSERT_EQ(streamed.status, 0) << streamed.out << streamed.err;
  const auto counts = probe_counts(streamed.out);
  ASSERT_TRUE(counts.contains("rss_growth_kib")) << streamed.out;
  ASSERT_GE(counts.at("rss_growth_kib"), 0) << streamed.out;
  EXPECT_LT(counts.at("rss_growth_kib"), 48 * 1024)
      << "the peak resident memory grew by " << counts.at("rss_growth_kib") << " KiB while streaming";
  // The same run keeping its records grows by more: the measure sees what it should.
  std::vector<std::string> kept_args = args;
  kept_args.insert(kept_args.end(), {"--record", "1"});
  const ProbeRun kept = run_probe(kept_args, {});
  ASSERT_EQ(kept.status, 0) << kept.out << kept.err;
  EXPECT_GT(probe_counts(kept.out).at("rss_growth_kib"), 2 * counts.at("rss_growth_kib")) << kept.out;
}

TEST(TraceFile, AWriteThatFailsIsReportedAndMakesTheExitStatusNonZero) {
  // Before: a trace that could not be written at exit was one line on stderr, exit status 0.
  // /dev/full opens, and every write to it fails with ENOSPC.
  const ProbeRun run = run_probe({"--threads", "2", "--rounds", "2000"}, {"DEVCTX_TRACE_FILE=/dev/full"});
  EXPECT_EQ(run.status, 74) << run.out << run.err;          // EX_IOERR
  EXPECT_THAT(run.out, testing::HasSubstr("copies 4000"));  // the program itself ran to its end
  EXPECT_THAT(run.err, testing::HasSubstr("DEVCTX_TRACE_FILE: writing '/dev/full' failed (No space left on device)"));
  EXPECT_THAT(run.err, testing::HasSubstr("'/dev/full' is incomplete"));
}

TEST(TraceFile, APathThatCannotBeWrittenIsRefusedByTheFirstContext) {
  // A read-only directory (root writes into one anyway: then a path under a regular file).
  const std::string dir = testing::TempDir() + "devctx_read_only_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string path;
  if (::geteuid() != 0) {
    ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
    path = dir + "/trace.json";
  } else {
    std::ofstream(dir + "/a_file") << "x";
    path = dir + "/a_file/trace.json";
  }
  const ProbeRun run = run_probe({"--threads", "1", "--rounds", "10"}, {"DEVCTX_TRACE_FILE=" + path});
  ::chmod(dir.c_str(), 0755);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(run.status, 3) << run.out << run.err;
  EXPECT_THAT(run.out, testing::HasSubstr("error: invalid_argument: DEVCTX_TRACE_FILE='" + path +
                                          "': cannot open it for writing ("));
}

}  // namespace
}  // namespace devctx_test
