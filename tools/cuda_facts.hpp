// SPDX-License-Identifier: Apache-2.0
// tools/cuda_facts.hpp - what the tool asks the CUDA runtime directly, beside devctx: a GPU's
// driver and runtime versions, PCI bus id, clocks and L2 size for `devctx info`, and raw
// cudaMemcpyAsync timings for `devctx bench` to set devctx's next to. Built from cuda_facts.cu
// when devctx has CUDA, else from cuda_facts_none.cpp (no GPU facts, no raw rows).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace devctx_tool {

struct GpuFacts {
  int driver_version = 0;  ///< 13000 = CUDA 13.0
  int runtime_version = 0;
  std::string pci_bus_id;  ///< "0000:19:00.0"
  int clock_khz = 0;       ///< SM clock
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  std::size_t l2_bytes = 0;
  std::size_t free_bytes = 0;
};

/// The facts of CUDA device `id`, or nullopt when there is none (or devctx has no CUDA).
[[nodiscard]] std::optional<GpuFacts> gpu_facts(int id);

/// Raw CUDA next to devctx: microseconds per cudaMemcpyAsync of `bytes` on CUDA device `id`
/// (host_to_device or back; from cudaMallocHost memory when `pinned`, else malloc'd memory),
/// timed with CUDA events over `iterations` copies; nullopt without a GPU.
[[nodiscard]] std::optional<double> raw_cuda_copy_us(int id, std::size_t bytes, bool host_to_device, bool pinned,
                                                     int iterations);

/// Raw CUDA next to devctx's launch row: microseconds per cudaLaunchKernel of an empty kernel
/// over `blocks` blocks of 256 threads, timed with CUDA events over `iterations` launches.
[[nodiscard]] std::optional<double> raw_cuda_launch_us(int id, unsigned blocks, int iterations);

/// Raw CUDA next to devctx's allocation row: host microseconds per cudaMallocAsync +
/// cudaFreeAsync of `bytes` on a stream, until the stream has finished.
[[nodiscard]] std::optional<double> raw_cuda_alloc_us(int id, std::size_t bytes, int iterations);

}  // namespace devctx_tool
