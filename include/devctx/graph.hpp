// SPDX-License-Identifier: Apache-2.0
// devctx/graph.hpp - devctx::Graph: a sequence of copies, fills and kernel launches recorded once
// and replayed many times, with kernel arguments updatable between replays.
//
//   devctx::Graph g = devctx::Graph::record(ctx, [&](devctx::StreamRef s) {
//     s.enqueue_copy(d_in, h_in);
//     for (int i = 0; i < 100; ++i) s.enqueue_function<step>(cfg, d_in, d_out, i);
//     s.enqueue_memset(d_acc, 0.0f);
//   });
//   for (int r = 0; r < 1000; ++r) g.enqueue(ctx);       // one replay each, in stream order
//   g.update_kernel<step>(3, cfg, d_in, d_other, 7);     // launch 3 of the graph, from now on
//
// On CUDA the recording becomes a CUDA graph (cudaGraphInstantiate once; each replay is one
// cudaGraphLaunch, and update_kernel is cudaGraphExecKernelNodeSetParams). On the CPU backend
// (and for fills of element sizes other than 1, 2 and 4 bytes on CUDA) a replay enqueues the
// recorded operations one by one, checked as at recording time.
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <cstddef>
#include <memory>
#include <utility>

#include <devctx/detail/base/seam.hpp>
#include <devctx/detail/host/launch_kernel.hpp>
#include <devctx/launch.hpp>
#include <devctx/stream.hpp>

namespace devctx {

/// Recorded work of one device. Move-only. A graph refers to the buffers its operations use
/// (as a span does): they must outlive every replay enqueued, and the graph must not be replayed
/// after one of them is dropped. Dropping the graph never blocks; replays already enqueued run.
class Graph {
 public:
  /// An empty graph (enqueue() throws Error(invalid_handle)).
  Graph() noexcept = default;
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() = default;

  /// Calls `f(StreamRef)` with a recording stream of `on`'s device: the copies (between
  /// DeviceBuffers, HostBuffers and their slices), memsets and enqueue_function calls it makes
  /// are checked as usual and recorded in order, not run. Creating buffers, events, waits,
  /// synchronize and copies of ordinary host memory (std::vector, std::span: they would have to
  /// stay valid until every replay) throw devctx::Error (invalid_argument) on the recording
  /// stream; an exception from `f` propagates and no graph is made. Returns without running
  /// anything; nothing is enqueued on `on`.
  ///
  /// Work must go to the StreamRef that `f` receives. While `f` runs, a copy, memset, launch or
  /// Graph::enqueue on `on` itself from this thread (`ctx.enqueue_function` instead of
  /// `s.enqueue_function`) throws devctx::Error (invalid_argument) and is not enqueued: it would
  /// run at once and be missing from the graph. Creating buffers on `on` and work on other
  /// streams stay allowed (they run now, as usual). A recording that ends with no operation
  /// throws devctx::Error (invalid_argument, "nothing was recorded") instead of making an empty
  /// graph.
  template <class F>
  [[nodiscard]] static Graph record(StreamRef on, F&& f) {
    std::shared_ptr<detail::QueueImpl> recorder = detail::queue_graph_recorder(detail::Access::queue(on));
    f(detail::Access::make<StreamRef>(recorder.get()));
    return Graph(detail::graph_finish(*recorder));
  }

  /// Enqueues one replay of the whole graph on `stream` (a DeviceContext or Stream of the graph's
  /// device; Error(wrong_device) otherwise, nothing enqueued). Returns at once; its operations run
  /// in recording order after the work enqueued on `stream` before, and failures surface at the
  /// next synchronize() as for the same operations enqueued one by one.
  void enqueue(StreamRef stream) const { detail::graph_enqueue(detail::Access::queue(stream), impl()); }

  /// Number of kernel launches recorded (update_kernel's index runs over them).
  [[nodiscard]] std::size_t kernel_count() const { return detail::graph_kernel_count(impl()); }

  /// Replaces kernel launch number `index` (0-based, in recording order) by `Kernel` with `config`
  /// and `args`, mapped and checked as by enqueue_function, for every replay enqueued after this
  /// call (replays already enqueued keep what they had). Throws devctx::Error (invalid_argument)
  /// when `index` is not a launch of the graph or that launch is of another kernel, and as
  /// enqueue_function does; the graph is unchanged then.
  template <auto Kernel, class... Args>
  void update_kernel(std::size_t index, const LaunchConfig& config, Args&&... args) {
    detail::GraphImpl& graph = impl();
    detail::build_launch<Kernel>([&](const detail::KernelLaunch& l) { detail::graph_update_kernel(graph, index, l); },
                                 config, std::forward<Args>(args)...);
  }

  [[nodiscard]] explicit operator bool() const noexcept { return impl_ != nullptr; }

 private:
  explicit Graph(std::shared_ptr<detail::GraphImpl> impl) noexcept : impl_(std::move(impl)) {}
  [[nodiscard]] detail::GraphImpl& impl() const {
    if (!impl_) detail::throw_invalid_handle("an empty devctx::Graph: make one with Graph::record");
    return *impl_;
  }

  std::shared_ptr<detail::GraphImpl> impl_;
};

}  // namespace devctx
