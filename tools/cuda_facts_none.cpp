// SPDX-License-Identifier: Apache-2.0
// tools/cuda_facts_none.cpp - cuda_facts.hpp for a devctx built without CUDA: no GPU facts.
#include "cuda_facts.hpp"

namespace devctx_tool {

std::optional<GpuFacts> gpu_facts(int) { return std::nullopt; }
std::optional<double> raw_cuda_copy_us(int, std::size_t, bool, bool, int) { return std::nullopt; }
std::optional<double> raw_cuda_launch_us(int, unsigned, int) { return std::nullopt; }
std::optional<double> raw_cuda_alloc_us(int, std::size_t, int) { return std::nullopt; }

}  // namespace devctx_tool
