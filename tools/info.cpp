// SPDX-License-Identifier: Apache-2.0
// `devctx info`: the devices devctx can run on, and what their limits mean.
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda_facts.hpp"
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

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string mhz_text(int khz) { return std::to_string(khz / 1000) + " MHz"; }

nlohmann::json device_json(devctx::Api api, int id) {
  const devctx::DeviceContext ctx{api, id};
  const bool cuda = ctx.backend().name == "cuda";  // the CUDA runtime's facts (cuda_facts.hpp)
  const devctx::DeviceInfo& i = ctx.info();
  const devctx::MemoryInfo memory = ctx.memory_info();
  nlohmann::json d = {
      {"device", std::string(devctx::to_string(api)) + ":" + std::to_string(id)},
      {"api", devctx::to_string(api)},
      {"id", id},
      {"name", i.name},
      {"multiprocessors", i.multiprocessors},
      {"max_threads_per_block", i.max_threads_per_block},
      {"max_block_dim", {i.max_block_dim.x, i.max_block_dim.y, i.max_block_dim.z}},
      {"max_grid_dim", {i.max_grid_dim.x, i.max_grid_dim.y, i.max_grid_dim.z}},
      {"max_shared_bytes_per_block", i.max_shared_bytes_per_block},
      {"warp_size", i.warp_size},
      {"total_memory_bytes", i.total_memory_bytes},
      {"free_memory_bytes", memory.free_bytes},
      {"compute_capability", i.compute_capability_major == 0
                                 ? nlohmann::json(nullptr)
                                 : nlohmann::json(std::to_string(i.compute_capability_major) + "." +
                                                  std::to_string(i.compute_capability_minor))},
  };
  if (cuda) {
    if (const auto f = gpu_facts(id)) {
      d["driver_version"] = version_text(f->driver_version);
      d["runtime_version"] = version_text(f->runtime_version);
      d["pci_bus_id"] = f->pci_bus_id;
      d["clock_khz"] = f->clock_khz;
      d["memory_clock_khz"] = f->memory_clock_khz;
      d["memory_bus_bits"] = f->memory_bus_bits;
      d["l2_bytes"] = f->l2_bytes;
    }
  }
  return d;
}

void print_device(devctx::Api api, int id, bool brief) {
  const devctx::DeviceContext ctx{api, id};
  const devctx::DeviceInfo& i = ctx.info();
  const bool cpu = api == devctx::Api::cpu;
  const bool cuda = ctx.backend().name == "cuda";  // the CUDA runtime's facts (cuda_facts.hpp)
  std::vector<Row> rows = {
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
       ctx.backend().has_device_memory ? "device memory, separate from the host's RAM"
                                       : "device memory: for the CPU, the host's RAM"},
      {"compute capability",
       i.compute_capability_major == 0
           ? std::string("-")
           : std::to_string(i.compute_capability_major) + "." + std::to_string(i.compute_capability_minor),
       "the GPU architecture's version (8.0 Ampere, 9.0 Hopper); none on the CPU"},
      {"free memory", bytes_text(ctx.memory_info().free_bytes), "device memory not in use now"},
  };
  if (const auto f = cuda ? gpu_facts(id) : std::nullopt) {
    rows.push_back({"driver / runtime", "CUDA " + version_text(f->driver_version) + " / " + version_text(f->runtime_version),
                    "the driver must be at least as new as the runtime devctx was built with"});
    rows.push_back({"PCI bus id", f->pci_bus_id, "where the GPU sits (nvidia-smi names it so)"});
    rows.push_back({"clocks (SM / memory)", mhz_text(f->clock_khz) + " / " + mhz_text(f->memory_clock_khz), "peak clocks"});
    rows.push_back({"memory bus", std::to_string(f->memory_bus_bits) + " bits", "width of the path to device memory"});
    rows.push_back({"L2 cache", bytes_text(f->l2_bytes), "shared by all SMs; data reused within it is not re-read"});
  }
  std::printf("\n%s:%d  %s\n", devctx::to_string(api), id, i.name.c_str());
  for (const Row& r : rows) {
    if (brief)
      std::printf("  %-24s %s\n", r.name, r.value.c_str());
    else
      std::printf("  %-24s %-32s %s\n", r.name, r.value.c_str(), r.meaning);
  }
}

}  // namespace

int run_info(bool brief, bool json) {
  // Every backend devctx knows, with its devices now (devctx/backend.hpp).
  std::vector<std::pair<const devctx::Backend*, int>> counts;
  int total = 0;
  for (const devctx::Backend* backend : devctx::backends()) {
    counts.emplace_back(backend, backend->device_count());
    total += counts.back().second;
  }
  if (json) {
    const devctx::DeviceContext chosen;  // throws the library's error for a bad DEVCTX_DEVICE
    nlohmann::json doc;
    doc["version"] = DEVCTX_VERSION_STRING;
    doc["cuda_built"] = devctx::backend("cuda").built;
    doc["default_device"] = std::string(devctx::to_string(chosen.api())) + ":" + std::to_string(chosen.id());
    doc["backends"] = nlohmann::json::array();
    doc["devices"] = nlohmann::json::array();
    for (const auto& [backend, count] : counts) {
      doc["backends"].push_back(
          {{"name", backend->name},
           {"built", backend->built},
           {"devices", count},
           {"absent_reason", count == 0 ? nlohmann::json(backend->absent_reason()) : nlohmann::json(nullptr)}});
      for (int id = 0; id < count; ++id) doc["devices"].push_back(device_json(backend->api, id));
    }
    std::printf("%s\n", doc.dump(2).c_str());
    return Exit::ok;
  }
  // "2 devices: 1 cpu, 1 cuda" or "1 device: 1 cpu; no cuda device: devctx was built without CUDA (...)".
  std::string present, absent;
  for (const auto& [backend, count] : counts) {
    if (count > 0)
      present += (present.empty() ? "" : ", ") + std::to_string(count) + " " + std::string(backend->name);
    else
      absent += "; no " + std::string(backend->name) + " device: " + backend->absent_reason();
  }
  std::printf("%d device%s: %s%s\n", total, total == 1 ? "" : "s", present.c_str(), absent.c_str());

  // The device `DeviceContext ctx;` opens, chosen by the library itself: a DEVCTX_DEVICE that it
  // rejects (a bad name, a device that is not there) throws the library's error here too.
  const bool from_environment = devctx::device_from_environment().has_value();
  const devctx::DeviceContext chosen;
  const std::string name = std::string(devctx::to_string(chosen.api())) + ":" + std::to_string(chosen.id());
  if (from_environment) {
    std::printf("default device: %s (from DEVCTX_DEVICE)\n", name.c_str());
  } else {
    std::printf("default device: %s, %s (set DEVCTX_DEVICE=cpu|cuda|cuda:N to choose another)\n", name.c_str(),
                chosen.backend().has_device_memory ? "the first GPU" : "as there is no GPU");
  }

  for (const auto& [backend, count] : counts)
    for (int id = 0; id < count; ++id) print_device(backend->api, id, brief);
  return Exit::ok;
}

}  // namespace devctx_tool
