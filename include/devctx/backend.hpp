// SPDX-License-Identifier: Apache-2.0
// devctx/backend.hpp - the backends this libdevctx knows, each describing itself: its name and
// the other names devices are given by, whether it was built and how many devices it has (and
// why none), which one the default device comes from, whether its device memory is apart from
// the host's, and the DLPack device types of its memory. Code that must treat backends apart
// asks these fields (or picks a backend by name) instead of comparing Api values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <devctx/device_info.hpp>

namespace devctx {

/// One backend as it describes itself (each backend folder of the library defines its own).
///
/// Lifetime: every Backend lives in static storage for the whole program, constant-initialized
/// (usable before main and during static destruction); references and pointers to it never
/// dangle. Thread safety: the fields never change; calling device_count and absent_reason from
/// any number of threads at once is safe. A backend that was not built is still listed (built
/// false, no devices, absent_reason says how to build it), so that names and messages know it.
struct Backend {
  /// The enum value that DeviceContext{api, id}, DeviceContext::count and DeviceInfo use for it.
  Api api = Api::cpu;
  /// Its name: to_string(api), the prefix of device names ("cuda:1", parse_device, DEVCTX_DEVICE)
  /// and of devctx's messages. Views a string literal, so name.data() is null-terminated.
  std::string_view name;
  /// Other names parse_device and DEVCTX_DEVICE accept for it ("gpu" for "cuda"); may be empty.
  std::span<const std::string_view> aliases;
  /// Whether this libdevctx was built with the backend (the CPU backend always is).
  bool built = false;
  /// The default device (`DeviceContext ctx;` without DEVCTX_DEVICE) is device 0 of the backend
  /// with at least one device and the highest preference: a GPU before the CPU.
  int default_preference = 0;
  /// True when its device memory is apart from the host's: the host cannot read a DeviceBuffer,
  /// copies between the two cross a bus (a GPU). False when device memory is host memory and
  /// copies are memcpy (the CPU backend).
  bool has_device_memory = false;
  /// The DLPack device type (DLDeviceType: kDLCPU 1, kDLCUDA 2, ...) of its device memory, as
  /// to_dlpack exports a DeviceBuffer and from_dlpack accepts one. When has_device_memory, the
  /// DLPack device id is the device's id; otherwise the memory is the host's, DLPack device 0.
  std::int32_t dlpack_device_type = 0;
  /// The DLPack device type of its HostBuffer memory (kDLCPU, or kDLCUDAHost 3: page-locked).
  std::int32_t dlpack_host_device_type = 0;
  /// The DLPack device type of memory both the host and its kernels read (kDLCUDAManaged 13),
  /// which from_dlpack accepts for a view of device memory; equal to dlpack_device_type when
  /// the backend has no such memory of its own.
  std::int32_t dlpack_managed_device_type = 0;
  /// The number of its devices now (DeviceContext::count(api)): 0 when none is present or the
  /// backend was not built. Throws Error(invalid_argument) for a malformed setting it reads
  /// (the CPU backend: DEVCTX_CPU_DEVICES). Never blocks for long (asks the driver once).
  int (*device_count)() = nullptr;
  /// Why it has no device, for messages ("devctx was built without CUDA (configure with ...)"):
  /// meaningful when device_count() is 0. Never throws but std::bad_alloc.
  std::string (*absent_reason)() = nullptr;
};

/// Every backend this libdevctx knows, built or not, in the order of their Api values. Never
/// throws; the list and its entries live for the whole program.
[[nodiscard]] std::span<const Backend* const> backends() noexcept;

/// The backend of `api`. Throws Error(invalid_argument) for a value that names no backend (a
/// cast integer).
[[nodiscard]] const Backend& backend(Api api);

/// The backend called `name` or one of its aliases ("cpu", "cuda", "gpu"): lower case, exact.
/// Throws Error(invalid_argument) naming the backends when none is called so.
[[nodiscard]] const Backend& backend(std::string_view name);

}  // namespace devctx
