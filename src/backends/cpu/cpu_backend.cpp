// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/cpu_backend.cpp - the CPU backend's descriptor (core/backend_descriptor.hpp):
// always built, always at least one device, device memory that is host memory, collectives of
// CPU devices in this process.
#include <memory>
#include <string>
#include <string_view>

#include "backends/cpu/cpu_device.hpp"
#include "backends/cpu/settings.hpp"
#include "comm/engines.hpp"
#include "core/backend_descriptor.hpp"

namespace devctx::detail {
namespace {

int device_count() { return cpu::device_count(); }

std::string absent_reason() {
  return "the CPU backend always has a device (DEVCTX_CPU_DEVICES, DeviceContext::set_cpu_device_count)";
}

std::shared_ptr<DeviceImpl> open_device(int id) { return std::make_shared<cpu::CpuDevice>(id, cpu::device_count()); }

}  // namespace

constinit const BackendDescriptor cpu_backend_descriptor{
    .backend =
        {
            .api = Api::cpu,
            .name = "cpu",
            .aliases = {},
            .built = true,
            .default_preference = 0,  // the device of last resort
            .has_device_memory = false,
            .dlpack_device_type = 1,          // kDLCPU: device memory is host memory
            .dlpack_host_device_type = 1,     // kDLCPU
            .dlpack_managed_device_type = 1,  // kDLCPU
            .device_count = &device_count,
            .absent_reason = &absent_reason,
        },
    .open_device = &open_device,
    .create_comm_group = &create_cpu_group,
};

}  // namespace devctx::detail
