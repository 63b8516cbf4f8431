// SPDX-License-Identifier: Apache-2.0
// `devctx info`: the devices devctx can run on, and what their limits mean.
#include <cstdio>
#include <string>
#include <vector>

#include "tool.hpp"

namespace devctx_tool {
namespace {

std::string dims_text(const devctx::Dim3& d) {
  return std::to_string(d.x) + " x " + std::to_string(d.y) + " x " + std::to_string(d.z);
}

struct Row {
  const char* name;
  std::string value;
  const char* meaning;
};

void print_device(devctx::Api api, int id, bool brief) {
  const devctx::DeviceContext ctx{api, id};
  const devctx::DeviceInfo& i = ctx.info();
  const bool cpu = api == devctx::Api::cpu;
  const std::vector<Row> rows = {
      {"multiprocessors", std::to_string(i.multiprocessors),
       cpu ? "worker threads; each runs whole blocks, as an SM does on a GPU"
           : "SMs: each runs several blocks at once, 32 threads (a warp) per step"},
      {"max threads per block", std::to_string(i.max_threads_per_block),
       "the most threads one block may have: block_dim.x * .y * .z"},
      {"max block dims", dims_text(i.max_block_dim), "the largest block_dim in x, y, z"},
      {"max grid dims", dims_text(i.max_grid_dim), "the largest grid_dim (blocks per launch) in x, y, z"},
      {"shared memory per block", bytes_text(i.max_shared_bytes_per_block),
       "fast memory a block's threads share: DEVCTX_SHARED + shared_bytes"},
      {"warp size", std::to_string(i.warp_size), "threads that run in lockstep; shuffles exchange values within one"},
      {"total memory", bytes_text(i.total_memory_bytes),
       cpu ? "device memory: for the CPU, the host's RAM" : "device memory, separate from the host's RAM"},
      {"compute capability",
       i.compute_capability_major == 0
           ? std::string("-")
           : std::to_string(i.compute_capability_major) + "." + std::to_string(i.compute_capability_minor),
       "the GPU architecture's version (8.0 Ampere, 9.0 Hopper); none on the CPU"},
  };
  std::printf("\n%s:%d  %s\n", devctx::to_string(api), id, i.name.c_str());
  for (const Row& r : rows) {
    if (brief) std::printf("  %-24s %s\n", r.name, r.value.c_str());
    else std::printf("  %-24s %-32s %s\n", r.name, r.value.c_str(), r.meaning);
  }
}

}  // namespace

int run_info(bool brief) {
  const int cpus = devctx::DeviceContext::count(devctx::Api::cpu);
  const int gpus = devctx::DeviceContext::count(devctx::Api::cuda);
#if DEVCTX_TOOL_WITH_CUDA
  const std::string cuda_note = gpus > 0 ? std::to_string(gpus) + " CUDA GPU" + (gpus == 1 ? "" : "s")
                                         : "no CUDA GPU visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
#else
  const std::string cuda_note = "CUDA not built (configure with -DDEVCTX_ENABLE_CUDA=ON and nvcc on the PATH)";
#endif
  std::printf("%d device%s: %d CPU, %s\n", cpus + gpus, cpus + gpus == 1 ? "" : "s", cpus, cuda_note.c_str());

  // The device `DeviceContext ctx;` opens, chosen by the library itself: a DEVCTX_DEVICE that it
  // rejects (a bad name, a device that is not there) throws the library's error here too.
  const bool from_environment = devctx::device_from_environment().has_value();
  const devctx::DeviceContext chosen;
  const std::string name = std::string(devctx::to_string(chosen.api())) + ":" + std::to_string(chosen.id());
  if (from_environment) {
    std::printf("default device: %s (from DEVCTX_DEVICE)\n", name.c_str());
  } else {
    std::printf("default device: %s, %s (set DEVCTX_DEVICE=cpu|cuda|cuda:N to choose another)\n", name.c_str(),
                chosen.api() == devctx::Api::cuda ? "the first GPU" : "as there is no GPU");
  }

  for (int id = 0; id < cpus; ++id) print_device(devctx::Api::cpu, id, brief);
  for (int id = 0; id < gpus; ++id) print_device(devctx::Api::cuda, id, brief);
  return Exit::ok;
}

}  // namespace devctx_tool
