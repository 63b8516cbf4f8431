// SPDX-License-Identifier: Apache-2.0
// src/core/graph.cpp - devctx::Graph behind the seam: the recording queue, the recorded
// operations, their replay (natively when the backend can, else one by one through the checked
// entry points) and kernel updates.
#include "core/graph.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "core/allocation.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"
#include "core/submit.hpp"
#include "core/text.hpp"

namespace devctx::detail {

RecordedLaunch::RecordedLaunch(const KernelLaunch& from) : launch(from), name(from.name) {
  const std::size_t align = std::max<std::size_t>(from.args_align, alignof(std::max_align_t));
  const std::size_t bytes = std::max<std::size_t>((from.args_size + align - 1) / align * align, align);
  args = static_cast<std::byte*>(std::aligned_alloc(align, bytes));
  if (args == nullptr) throw std::bad_alloc();
  std::memcpy(args, from.args, from.args_size);
  launch.name = name;
  launch.args = args;
  if (from.cuda_args != nullptr) {
    // Each points at one packed argument: the same offsets into this copy.
    for (std::size_t i = 0; i < from.param_count; ++i)
      cuda_args.push_back(args +
                          (static_cast<const std::byte*>(from.cuda_args[i]) - static_cast<const std::byte*>(from.args)));
    cuda_args.push_back(nullptr);
    launch.cuda_args = cuda_args.data();
  }
  buffers.assign(from.buffers, from.buffers + from.buffer_count);
  launch.buffers = buffers.data();
  if (from.spans != nullptr) {
    spans.assign(from.spans, from.spans + from.buffer_count);
    span_bytes.assign(from.span_bytes, from.span_bytes + from.buffer_count);
    launch.spans = spans.data();
    launch.span_bytes = span_bytes.data();
  }
}

RecordedLaunch::~RecordedLaunch() { std::free(args); }

namespace {

[[noreturn]] void refuse(const DeviceImpl& device, const char* what) {
  fail(Errc::invalid_argument, what, " on a stream recording a devctx::Graph (", device.label(),
       "): a graph records copies, memsets, kernel launches and host tasks only; do this before or after "
       "recording");
}

/// True when a copy side is memory the host must read or write at the call (std::span, or a
/// HostBuffer of another device): no graph can keep it.
bool is_call_time_memory(const DeviceImpl& device, const MemRef& ref) {
  if (ref.kind == MemKind::host_pageable) return true;
  return ref.kind == MemKind::host_pinned && ref.allocation != nullptr && &ref.allocation->device() != &device;
}

}  // namespace

class GraphImpl {
 public:
  explicit GraphImpl(DeviceImpl& device) : device_(device) {}

  [[nodiscard]] DeviceImpl& device() const noexcept { return device_; }
  std::vector<RecordedOp> ops;
  std::vector<std::size_t> kernel_ops;  ///< op index of each launch, in order
  std::unique_ptr<NativeGraph> native;
  std::shared_ptr<QueueImpl> recorder;  ///< checks kernel updates (a RecordingQueue)
  std::mutex mutex;                     ///< replays against updates

 private:
  DeviceImpl& device_;
};

namespace {

class RecordingQueue;
/// The innermost Graph::record running on this thread (each recorder keeps the one it hides).
thread_local RecordingQueue* t_recording = nullptr;

/// The queue a recording stream refers to. Checks happen in the entry points as on any queue;
/// what passes them lands here. Once the graph is made, it takes kernel updates only.
class RecordingQueue final : public QueueImpl, public GraphRecorder {
 public:
  /// Made by Graph::record on the calling thread, recording from `origin` until finish().
  explicit RecordingQueue(QueueImpl& origin)
      : QueueImpl(origin.device()), graph_(std::make_shared<GraphImpl>(origin.device())), origin_(&origin) {
    raw_ = graph_.get();
    hidden_ = t_recording;
    t_recording = this;
  }
  ~RecordingQueue() override { stop_recording(); }
  RecordingQueue(const RecordingQueue&) = delete;
  RecordingQueue& operator=(const RecordingQueue&) = delete;

  /// Whether `queue` is recorded from by this recorder or one it hides.
  [[nodiscard]] bool records_from(const QueueImpl& queue) const noexcept {
    for (const RecordingQueue* r = this; r != nullptr; r = r->hidden_)
      if (r->origin_ == &queue) return true;
    return false;
  }

  GraphRecorder* recorder() noexcept override { return this; }

  void record(const Operation& op) override {
    std::visit([this](const auto& o) { keep(o); }, op);
  }

  /// Ends the recording: the graph, made native when the backend can. The graph owns the
  /// recorder from then on (for updates), so the recorder lets go of it.
  std::shared_ptr<GraphImpl> finish() {
    recording("Graph::record");
    stop_recording();
    if (graph_->ops.empty())
      fail(Errc::invalid_argument, "Graph::record on ", device().label(),
           ": nothing was recorded: enqueue on the stream passed to the recording function (work enqueued on "
           "another stream runs at once and is not part of the graph)");
    graph_->native = device().instantiate_graph(graph_->ops);
    finished_ = true;
    return std::move(graph_);
  }

  /// Runs `check` (a launch through queue_launch) with its launch handed to `update`.
  template <class Check, class Update>
  void with_update(Check&& check, Update&& update) {
    update_ = std::forward<Update>(update);
    struct Reset {
      std::function<void(const KernelLaunch&)>& f;
      ~Reset() { f = nullptr; }
    } reset{update_};
    check();
  }

  // What a recording stream refuses.
  void* allocate(std::size_t, MemKind kind) override {
    refuse(device(), kind == MemKind::device ? "enqueue_create_buffer" : "enqueue_create_host_buffer");
  }
  void free(void*, std::size_t, MemKind) noexcept override {}  // it never allocated
  void copy(void*, MemKind, const void*, MemKind, std::size_t) override { refuse(device(), "a copy"); }
  void fill(void*, MemKind, std::size_t, const void*, std::size_t) override { refuse(device(), "a fill"); }
  void launch(const KernelLaunch&) override { refuse(device(), "a launch"); }
  void enqueue_host_task(std::function<void()>) override { refuse(device(), "a host task"); }
  void synchronize() override { refuse(device(), "synchronize"); }
  std::shared_ptr<EventImpl> record_event() override { refuse(device(), "record_event"); }
  void wait_for(const std::shared_ptr<EventImpl>&) override { refuse(device(), "enqueue_wait_for"); }

 private:
  void keep(const op::Copy& o) {
    recording("enqueue_copy");
    for (const MemRef* side : {&o.dst, &o.src})
      if (is_call_time_memory(device(), *side))
        fail(Errc::invalid_argument, "enqueue_copy on a stream recording a devctx::Graph (", device().label(),
             "): the ", side->what,
             " is ordinary host memory, which a copy reads or writes during the call, but "
             "a graph copies at each replay; copy through a HostBuffer of this device");
    raw_->ops.push_back(RecordedOp{.op = o, .value = {}, .launch = {}});
  }
  void keep(const op::PeerCopy&) {
    fail(Errc::invalid_argument, "enqueue_copy on a stream recording a devctx::Graph (", device().label(),
         "): a graph records copies within its own device only; copy between devices outside the graph");
  }
  void keep(const op::Fill& o) {
    recording("enqueue_memset");
    RecordedOp r{.op = o, .value = std::vector<std::byte>(o.element_bytes), .launch = {}};
    std::memcpy(r.value.data(), o.value, o.element_bytes);
    std::get<op::Fill>(r.op).value = r.value.data();  // the vector's storage stays put when r moves
    raw_->ops.push_back(std::move(r));
  }
  void keep(const op::Launch& o) {
    if (update_ != nullptr) return update_(*o.launch);
    recording("enqueue_function");
    auto launch = std::make_unique<RecordedLaunch>(*o.launch);
    RecordedOp r{.op = op::Launch{&launch->launch}, .value = {}, .launch = std::move(launch)};
    raw_->kernel_ops.push_back(raw_->ops.size());
    raw_->ops.push_back(std::move(r));
  }
  void keep(const op::HostTask& o) {
    recording("enqueue_host_task");
    raw_->ops.push_back(RecordedOp{.op = o, .value = {}, .launch = {}});
  }
  void keep(const op::Allocate& o) {
    refuse(device(), o.kind == MemKind::device ? "enqueue_create_buffer" : "enqueue_create_host_buffer");
  }
  void keep(const op::Free&) {}  // a recording queue never allocated
  void keep(const op::RecordEvent&) { refuse(device(), "record_event"); }
  void keep(const op::Wait&) { refuse(device(), "enqueue_wait_for"); }
  void keep(const op::Synchronize&) { refuse(device(), "synchronize"); }

  void recording(const char* operation) const {
    if (finished_)
      fail(Errc::invalid_argument, operation,
           " on the recording stream of a devctx::Graph whose recording has "
           "finished: the StreamRef given to Graph::record's function is valid only "
           "during that call");
  }

  /// Ends this thread's recording from origin_ (at finish, or when an exception left the function).
  void stop_recording() noexcept {
    if (t_recording == this) t_recording = hidden_;
    origin_ = nullptr;
  }

  std::shared_ptr<GraphImpl> graph_;  ///< while recording
  QueueImpl* origin_ = nullptr;       ///< the stream Graph::record was given, while recording
  RecordingQueue* hidden_ = nullptr;  ///< the recording this one hides on its thread
  GraphImpl* raw_ = nullptr;          ///< the graph, recording or not
  bool finished_ = false;
  std::function<void(const KernelLaunch&)> update_;
};

}  // namespace

std::shared_ptr<QueueImpl> queue_graph_recorder(QueueImpl& queue) { return std::make_shared<RecordingQueue>(queue); }

void refuse_if_recorded_from(const QueueImpl& queue, const char* operation, std::string_view kernel) {
  if (t_recording == nullptr || !t_recording->records_from(queue)) [[likely]]
    return;
  fail(Errc::invalid_argument, kernel.empty() ? std::string(operation) : launch_operation(kernel), " on ",
       queue.device().label(),
       " while Graph::record records from this stream: the work would run now and not be part "
       "of the graph; enqueue it on the stream passed to the recording function");
}

std::shared_ptr<GraphImpl> graph_finish(QueueImpl& recorder) {
  auto* r = dynamic_cast<RecordingQueue*>(&recorder);
  if (r == nullptr) throw_invalid_handle("a stream that is not recording a devctx::Graph");
  std::shared_ptr<GraphImpl> graph = r->finish();
  // The recorder checks later updates as it checked the recording: the graph keeps it.
  graph->recorder = r->shared_from_this();
  return graph;
}

void graph_enqueue(QueueImpl& queue, GraphImpl& graph) {
  if (&queue.device() != &graph.device())
    fail(Errc::wrong_device, "Graph::enqueue on ", queue.device().label(), ": the graph was recorded on ",
         graph.device().label(), "; replay it on a stream of that device");
  if (queue.recorder() != nullptr) refuse(queue.device(), "Graph::enqueue");
  refuse_if_recorded_from(queue, "Graph::enqueue");
  const std::lock_guard lock(graph.mutex);
  if (graph.native && !queue.checking()) {
    // The frees of the buffers the graph uses wait for this replay, as for the same work enqueued.
    for (const RecordedOp& r : graph.ops) std::visit([&queue](const auto& o) { note_uses(queue, o); }, r.op);
    graph.native->launch(queue);
    return;
  }
  for (const RecordedOp& r : graph.ops) submit(queue, r.op);
}

std::size_t graph_kernel_count(const GraphImpl& graph) noexcept { return graph.kernel_ops.size(); }

void graph_update_kernel(GraphImpl& graph, std::size_t index, const KernelLaunch& launch) {
  auto& recorder = static_cast<RecordingQueue&>(*graph.recorder);
  if (index >= graph.kernel_ops.size())
    fail(Errc::invalid_argument, "Graph::update_kernel<", launch.name, ">: launch ", index,
         " does not exist; the graph has ", graph.kernel_ops.size(), " kernel launches (0 to ", graph.kernel_ops.size(),
         " - 1)");
  const std::lock_guard lock(graph.mutex);
  const std::size_t op_index = graph.kernel_ops[index];
  RecordedOp& recorded = graph.ops[op_index];
  const KernelLaunch& old = recorded.launch->launch;
  if (old.cpu != launch.cpu || old.cuda_function != launch.cuda_function)
    fail(Errc::invalid_argument, "Graph::update_kernel<", launch.name, ">: launch ", index, " of the graph is kernel '",
         old.name, "'; an update keeps the kernel and changes its configuration and arguments");
  // Checked as a launch is, by the entry point, which hands the launch back here.
  recorder.with_update([&] { queue_launch(recorder, launch); },
                       [&](const KernelLaunch& checked) {
                         auto replacement = std::make_unique<RecordedLaunch>(checked);
                         if (graph.native) graph.native->update_kernel(op_index, replacement->launch);
                         std::get<op::Launch>(recorded.op).launch = &replacement->launch;
                         recorded.launch = std::move(replacement);
                       });
}

}  // namespace devctx::detail
