// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/cuda_graph.cpp - devctx::Graph on the CUDA backend: recorded copies, memsets
// and launches become one CUDA graph, instantiated once; a replay is one cudaGraphLaunch and a
// kernel update cudaGraphExecKernelNodeSetParams.
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <utility>
#include <variant>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "core/backend.hpp"
#include "core/graph.hpp"
#include "core/text.hpp"

namespace devctx::detail::cuda {
namespace {

cudaKernelNodeParams kernel_params(const KernelLaunch& launch) {
  cudaKernelNodeParams p{};
  const Dim3 g = launch.config.grid_dim, b = launch.config.block_dim;
  p.func = const_cast<void*>(launch.cuda_function);
  p.gridDim = dim3(g.x, g.y, g.z);
  p.blockDim = dim3(b.x, b.y, b.z);
  p.sharedMemBytes = unsigned(launch.config.shared_bytes);
  p.kernelParams = const_cast<void**>(launch.cuda_args);
  p.extra = nullptr;
  return p;
}

class CudaGraph final : public NativeGraph {
 public:
  explicit CudaGraph(std::shared_ptr<CudaDevice> device) : device_(std::move(device)) {}
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph() override {
    // Replays already enqueued keep running: an executable graph destroyed while in flight is
    // not terminated but freed once it completes (the driver API's cuGraphExecDestroy).
    if (exec_ != nullptr) ignore(cudaGraphExecDestroy(exec_));
    if (graph_ != nullptr) ignore(cudaGraphDestroy(graph_));
  }

  /// Adds `ops` as a chain of nodes; false when one of them has no node form here.
  bool build(const std::vector<RecordedOp>& ops) {
    device_->make_current();
    check(DEVCTX_CUDA(cudaGraphCreate(&graph_, 0)), *device_, "Graph::record");
    cudaGraphNode_t previous = nullptr;
    nodes_.resize(ops.size(), nullptr);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Operation& op = ops[i].op;
      cudaGraphNode_t node = nullptr;
      const std::size_t deps = previous != nullptr ? 1 : 0;
      if (const auto* c = std::get_if<op::Copy>(&op)) {
        check(DEVCTX_CUDA(cudaGraphAddMemcpyNode1D(&node, graph_, &previous, deps, c->dst.data, c->src.data, c->bytes,
                                                   cudaMemcpyDefault)),
              *device_, "Graph::record (a copy)");
      } else if (const auto* f = std::get_if<op::Fill>(&op)) {
        if (f->element_bytes != 1 && f->element_bytes != 2 && f->element_bytes != 4) return false;
        cudaMemsetParams p{};
        p.dst = f->dst.data;
        p.elementSize = unsigned(f->element_bytes);
        p.width = f->dst.count;
        p.height = 1;
        p.pitch = 0;
        unsigned value = 0;
        std::memcpy(&value, f->value, f->element_bytes);
        p.value = value;
        check(DEVCTX_CUDA(cudaGraphAddMemsetNode(&node, graph_, &previous, deps, &p)), *device_,
              "Graph::record (a memset)");
      } else if (const auto* k = std::get_if<op::Launch>(&op)) {
        const KernelLaunch& l = *k->launch;
        if (l.cuda_function == nullptr) return false;
        const cudaKernelNodeParams p = kernel_params(l);
        check(DEVCTX_CUDA(cudaGraphAddKernelNode(&node, graph_, &previous, deps, &p)), *device_,
              [&] { return concat("Graph::record (", launch_operation(l.name), ")"); });
      } else {
        return false;  // a host task: replayed one operation at a time (its failure is reported at synchronize)
      }
      nodes_[i] = node;
      previous = node;
    }
    check(DEVCTX_CUDA(cudaGraphInstantiate(&exec_, graph_, 0)), *device_, "Graph::record (cudaGraphInstantiate)");
    return true;
  }

  void launch(QueueImpl& queue) override {
    device_->check_alive("Graph::enqueue");
    device_->make_current();
    check(DEVCTX_CUDA(cudaGraphLaunch(exec_, static_cast<cudaStream_t>(queue.native_handle()))), *device_,
          "Graph::enqueue");
  }

  void update_kernel(std::size_t op, const KernelLaunch& launch) override {
    device_->check_alive("Graph::update_kernel");
    device_->make_current();
    const cudaKernelNodeParams p = kernel_params(launch);
    check(DEVCTX_CUDA(cudaGraphExecKernelNodeSetParams(exec_, nodes_[op], &p)), *device_,
          [&] { return concat("Graph::update_kernel (", launch_operation(launch.name), ")"); });
  }

 private:
  std::shared_ptr<CudaDevice> device_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<cudaGraphNode_t> nodes_;
};

}  // namespace

std::unique_ptr<NativeGraph> CudaDevice::instantiate_graph(const std::vector<RecordedOp>& ops) {
  check_alive("Graph::record");
  auto graph = std::make_unique<CudaGraph>(std::static_pointer_cast<CudaDevice>(shared_from_this()));
  if (!graph->build(ops)) return nullptr;  // core replays the operations one by one instead
  return graph;
}

}  // namespace devctx::detail::cuda
