// SPDX-License-Identifier: Apache-2.0
// tests/handle_test.cpp - misused handles, run on every backend: moved-from and
// default-constructed buffers, streams, contexts and events, and memory or events of one
// device used with another.
#include "support/test_kernels.hpp"
#include "support/test_support.hpp"

#include <cstdint>
#include <optional>
#include <vector>

using devctx::Api;
using devctx::DeviceContext;
using devctx::Errc;
using devctx_test::BackendTest;
using devctx_test::cover;
using devctx_test::download;
using devctx_test::error_of;

// ---- moved-from handles ------------------------------------------------------------------------------

class MovedFrom : public BackendTest {};
DEVCTX_INSTANTIATE_BACKEND_TESTS(MovedFrom);

namespace {
void expect_invalid_handle(const std::optional<devctx::Error>& e, const char* what) {
  ASSERT_TRUE(e) << what;
  EXPECT_EQ(e->code(), Errc::invalid_handle) << what << ": " << e->what();
}
}  // namespace

TEST_P(MovedFrom, DeviceBuffer) {
  auto a = devctx_test::upload<std::uint32_t>(ctx(), {1, 2, 3});
  auto b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b);
  EXPECT_EQ(a.size(), 0u);
  std::vector<std::uint32_t> v(3);
  std::vector<std::uint32_t> none;
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(v, a); }), "copy from");
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(a, v); }), "copy to");
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(none, a); }), "copy of 0 elements from");
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(b, a); }), "device copy from");
  expect_invalid_handle(error_of([&] { ctx().enqueue_memset(a, 0u); }), "memset");
  expect_invalid_handle(error_of([&] { (void)a.slice(0, 0); }), "slice");
  expect_invalid_handle(error_of([&] { ctx().enqueue_function<add_kernel>(cover(3), a, 1u); }), "kernel argument");
  const auto& ca = a;
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(v, ca); }), "const copy from");
  devctx::DeviceBuffer<std::uint32_t> empty;  // default-constructed: the same rules
  expect_invalid_handle(error_of([&] { ctx().enqueue_memset(empty, 0u); }), "default-constructed");
  EXPECT_TRUE(devctx_test::all_equal({1, 2, 3}, download(ctx(), b)));
}

TEST_P(MovedFrom, HostBuffer) {
  auto a = ctx().enqueue_create_host_buffer<int>(4);
  auto b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0u);
  auto d = ctx().enqueue_create_buffer<int>(4);
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(d, a); }), "copy from");
  expect_invalid_handle(error_of([&] { ctx().enqueue_copy(a, d); }), "copy to");
  expect_invalid_handle(error_of([&] { ctx().enqueue_memset(a, 1); }), "memset");
  expect_invalid_handle(error_of([&] { (void)a.slice(0, 0); }), "slice");
  ctx().enqueue_memset(b, 6);
  ctx().synchronize();
  EXPECT_EQ(b[3], 6);
}

TEST_P(MovedFrom, Stream) {
  auto s = ctx().create_stream();
  auto t = std::move(s);
  EXPECT_FALSE(s);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(t);
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(8);
  std::vector<std::uint32_t> v(8);
  expect_invalid_handle(error_of([&] { (void)s.enqueue_create_buffer<int>(1); }), "create_buffer");
  expect_invalid_handle(error_of([&] { (void)s.enqueue_create_host_buffer<int>(1); }), "create_host_buffer");
  expect_invalid_handle(error_of([&] { s.enqueue_copy(v, d); }), "copy");
  expect_invalid_handle(error_of([&] { s.enqueue_memset(d, 1u); }), "memset");
  expect_invalid_handle(error_of([&] { s.enqueue_function<add_kernel>(cover(8), d, 1u); }), "launch");
  expect_invalid_handle(error_of([&] { s.synchronize(); }), "synchronize");
  expect_invalid_handle(error_of([&] { (void)s.record_event(); }), "record_event");
  expect_invalid_handle(error_of([&] { s.enqueue_wait_for(t.record_event()); }), "enqueue_wait_for");
  devctx::Stream u = ctx().create_stream();
  u = std::move(t);  // move assignment
  ctx().synchronize();
  u.enqueue_wait_for(ctx().record_event());
  u.enqueue_function<iota_kernel>(cover(8), d, 0u);
  u.synchronize();
  EXPECT_EQ(download(ctx(), d)[7], 7u);
}

TEST_P(MovedFrom, DeviceContext) {
  auto d = ctx().enqueue_create_buffer<std::uint32_t>(8);
  DeviceContext taken = std::move(ctx());
  DeviceContext& gone = ctx();
  EXPECT_FALSE(gone);
  std::vector<std::uint32_t> v(8);
  expect_invalid_handle(error_of([&] { (void)gone.api(); }), "api");
  expect_invalid_handle(error_of([&] { (void)gone.id(); }), "id");
  expect_invalid_handle(error_of([&] { (void)gone.name(); }), "name");
  expect_invalid_handle(error_of([&] { (void)gone.info(); }), "info");
  expect_invalid_handle(error_of([&] { (void)gone.create_stream(); }), "create_stream");
  expect_invalid_handle(error_of([&] { gone.synchronize(); }), "synchronize");
  expect_invalid_handle(error_of([&] { (void)gone.enqueue_create_buffer<int>(1); }), "create_buffer");
  expect_invalid_handle(error_of([&] { gone.enqueue_copy(v, d); }), "copy");
  expect_invalid_handle(error_of([&] { gone.enqueue_memset(d, 0u); }), "memset");
  expect_invalid_handle(error_of([&] { gone.enqueue_function<iota_kernel>(cover(8), d, 0u); }), "launch");
  expect_invalid_handle(error_of([&] { (void)gone.record_event(); }), "record_event");
  // The moved-to context is fully usable; then move it back (assignment).
  taken.enqueue_function<iota_kernel>(cover(8), d, 2u);
  EXPECT_EQ(download(taken, d)[7], 9u);
  gone = std::move(taken);
  EXPECT_TRUE(gone);
  EXPECT_EQ(gone.api(), api());
  gone.enqueue_function<iota_kernel>(cover(8), d, 3u);
  EXPECT_EQ(download(gone, d)[7], 10u);
}

// Issue 25, defect 6: a default-constructed Communicator said "use of a moved-from DeviceContext or
// Stream". Every empty handle names itself, and only itself.
namespace {
void expect_names(const std::optional<devctx::Error>& e, const char* name, const char* not_name) {
  ASSERT_TRUE(e) << name;
  EXPECT_EQ(e->code(), Errc::invalid_handle) << e->what();
  EXPECT_THAT(e->what(), testing::HasSubstr(name));
  if (not_name != nullptr) {
    EXPECT_THAT(e->what(), testing::Not(testing::HasSubstr(not_name)));
  }
}
}  // namespace

TEST_P(MovedFrom, EachHandleNamesItself) {
  auto d = ctx().enqueue_create_buffer<float>(16);
  ctx().enqueue_memset(d, 1.0f);
  // Communicator: default-constructed, every verb (the convenience forms use its own stream).
  devctx::Communicator none;
  const char* comm = "default-constructed or moved-from Communicator";
  expect_names(error_of([&] { (void)none.rank(); }), comm, nullptr);
  expect_names(error_of([&] { (void)none.size(); }), comm, nullptr);
  expect_names(error_of([&] { none.all_reduce(d, d, devctx::ReduceOp::sum); }), comm, "Stream");
  expect_names(error_of([&] { none.broadcast(d, 0); }), comm, "Stream");
  expect_names(error_of([&] { none.reduce(d, d, devctx::ReduceOp::sum, 0); }), comm, "Stream");
  expect_names(error_of([&] { none.send(d, 0); }), comm, "Stream");
  expect_names(error_of([&] { none.recv(d, 0); }), comm, "Stream");
  expect_names(error_of([&] { none.all_reduce(ctx(), d, d, devctx::ReduceOp::sum); }), comm, "Stream");
  if (on_cpu()) {  // a communicator of one CPU device, then moved from
    std::vector<DeviceContext> one;
    one.emplace_back(Api::cpu, 0);
    auto comms = devctx::Communicator::create(one);
    devctx::Communicator taken = std::move(comms[0]);
    EXPECT_EQ(taken.size(), 1);
    expect_names(error_of([&] { comms[0].all_reduce(d, d, devctx::ReduceOp::sum); }), comm, "Stream");
  }
  // Stream and DeviceContext: each says which it is.
  auto s = ctx().create_stream();
  auto t = std::move(s);
  expect_names(error_of([&] { s.enqueue_memset(d, 0.0f); }), "use of a moved-from Stream", "DeviceContext");
  expect_names(error_of([&] { s.synchronize(); }), "use of a moved-from Stream", "DeviceContext");
  const devctx::StreamRef null_ref;
  expect_names(error_of([&] { devctx::StreamRef(null_ref).synchronize(); }), "a StreamRef of no stream", nullptr);
  // Event: default-constructed and moved from.
  devctx::Event empty_event;
  auto recorded = ctx().record_event();
  auto moved_event = std::move(recorded);
  const char* event = "default-constructed or moved-from Event";
  expect_names(error_of([&] { empty_event.synchronize(); }), event, "Stream");
  expect_names(error_of([&] { (void)empty_event.query(); }), event, "Stream");
  expect_names(error_of([&] { ctx().enqueue_wait_for(recorded); }), event, "Stream");  // NOLINT(bugprone-use-after-move)
  expect_names(error_of([&] { (void)devctx::elapsed_ms(empty_event, moved_event); }), event, nullptr);
  // Graph, buffers, views.
  devctx::Graph graph;
  expect_names(error_of([&] { graph.enqueue(ctx()); }), "empty devctx::Graph", "Stream");
  devctx::DeviceBuffer<float> no_buffer;
  expect_names(error_of([&] { ctx().enqueue_memset(no_buffer, 0.0f); }), "DeviceBuffer", "Stream");
  devctx::HostBuffer<float> no_host;
  expect_names(error_of([&] { ctx().enqueue_memset(no_host, 0.0f); }), "HostBuffer", "Stream");
  devctx::DeviceView<float> no_view;
  expect_names(error_of([&] { (void)no_view.as_slice(); }), "DeviceView", nullptr);
  // The context itself, last (it is moved from here; the fixture's TearDown copes, as above).
  DeviceContext taken = std::move(ctx());
  expect_names(error_of([&] { ctx().enqueue_memset(d, 0.0f); }), "use of a moved-from DeviceContext", "Stream");
  expect_names(error_of([&] { (void)ctx().name(); }), "use of a moved-from DeviceContext", "Stream");
  ctx() = std::move(taken);
  ctx().synchronize();
  EXPECT_TRUE(devctx_test::all_equal(std::vector<float>(16, 1.0f), download(ctx(), d)));
}

// ---- cross-device misuse ------------------------------------------------------------------------

class CrossDevice : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // Another device: a second GPU, or the other backend (the CPU is always present).
    const Api gpu = devctx_test::gpu_api();
    const int gpus = DeviceContext::count(gpu);
    if (api() == gpu && gpus >= 2)
      other_.emplace(gpu, 1);
    else if (api() == gpu)
      other_.emplace(Api::cpu, 0);
    else if (gpus >= 1)
      other_.emplace(gpu, 0);
    else
      GTEST_SKIP() << "only one device is present (the CPU): nothing to misuse across";
  }
  void TearDown() override {
    if (other_) other_->synchronize();
    other_.reset();
    BackendTest::TearDown();
  }
  std::optional<DeviceContext> other_;
};
DEVCTX_INSTANTIATE_BACKEND_TESTS(CrossDevice);

TEST_P(CrossDevice, ForeignBuffersAndEventsAreRejected) {
  DeviceContext& other = *other_;
  auto mine = devctx_test::upload<std::uint32_t>(ctx(), {1, 2, 3, 4});
  auto theirs = devctx_test::upload<std::uint32_t>(other, {5, 6, 7, 8});
  const auto wrong = [&](auto&& f, const char* what) {
    const auto e = error_of(f);
    ASSERT_TRUE(e) << what;
    EXPECT_EQ(e->code(), Errc::wrong_device) << what << ": " << e->what();
  };
  // Copies between devices work where this stream's device reaches the other's memory (two
  // GPUs, or a GPU and CPU device memory: docs/scale-out.md); a CPU stream cannot reach a GPU's.
  const bool copies_work = ctx().backend().has_device_memory;
  if (!copies_work) {
    wrong([&] { ctx().enqueue_copy(mine, theirs); }, "copy from a foreign buffer");
    wrong([&] { ctx().enqueue_copy(theirs, mine); }, "copy into a foreign buffer");
    wrong([&] { ctx().enqueue_copy(theirs.slice(0, 2), mine.slice(0, 2)); }, "copy into a foreign slice");
  }
  wrong([&] { ctx().enqueue_memset(theirs, 0u); }, "memset of a foreign buffer");
  wrong([&] { ctx().enqueue_function<add_kernel>(cover(4), theirs, 1u); }, "kernel on a foreign buffer");
  wrong([&] { ctx().enqueue_function<affine_kernel>(cover(4), mine, theirs, 1u, 1u); }, "second argument foreign");
  const devctx::Event foreign = other.record_event();
  // Streams wait for events of other devices, also across backends (StreamOrder tests it).
  wrong([&] { (void)devctx::elapsed_ms(ctx().record_event(), foreign); }, "elapsed_ms across devices");
  // Nothing was enqueued: both buffers are unchanged.
  EXPECT_TRUE(devctx_test::all_equal({1, 2, 3, 4}, download(ctx(), mine)));
  EXPECT_TRUE(devctx_test::all_equal({5, 6, 7, 8}, download(other, theirs)));
  if (copies_work) {
    ctx().enqueue_copy(theirs.slice(0, 2), mine.slice(0, 2));
    ctx().synchronize();
    EXPECT_TRUE(devctx_test::all_equal({1, 2, 7, 8}, download(other, theirs)));
    ctx().enqueue_copy(mine, theirs);
    EXPECT_TRUE(devctx_test::all_equal({1, 2, 7, 8}, download(ctx(), mine)));
  }
  // A HostBuffer of another device is ordinary host memory here.
  auto their_host = other.enqueue_create_host_buffer<std::uint32_t>(4);
  other.synchronize();
  ctx().enqueue_copy(their_host, mine);
  ctx().synchronize();
  // Where the copies between devices ran, `mine` holds {1, 2, 7, 8}.
  EXPECT_EQ(their_host[3], copies_work ? 8u : 4u);
}
