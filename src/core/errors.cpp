// SPDX-License-Identifier: Apache-2.0
// src/core/errors.cpp - the names of the error codes, and the errors that public headers
// report through the seam (moved-from handles, slices and span indices out of range).
#include "core/errors.hpp"

#include <cstdint>

#include <devctx/span.hpp>

namespace devctx {

const char* to_string(Errc code) noexcept {
  switch (code) {
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::size_mismatch: return "size_mismatch";
    case Errc::invalid_launch: return "invalid_launch";
    case Errc::invalid_handle: return "invalid_handle";
    case Errc::wrong_device: return "wrong_device";
    case Errc::not_available: return "not_available";
    case Errc::out_of_memory: return "out_of_memory";
    case Errc::kernel_failed: return "kernel_failed";
    case Errc::backend_error: return "backend_error";
    case Errc::context_lost: return "context_lost";
    case Errc::check_failed: return "check_failed";
    case Errc::compile_failed: return "compile_failed";
  }
  return "unknown";
}

namespace detail {

void throw_span_out_of_range(std::size_t index, std::size_t size) {
  fail(Errc::kernel_failed, "span index ", index, " is out of range for a span of ", size,
       " elements (DEVCTX_CHECK_BOUNDS); guard the access with `if (i < s.size())`");
}

void throw_invalid_handle(const char* what) { fail(Errc::invalid_handle, "use of ", what); }

void throw_wrong_memory_kind(const char* what, bool device) {
  fail(Errc::invalid_argument, what, ": the Buffer holds ", device ? "host" : "device", " memory, and this needs ",
       device ? "device memory; make a HostBuffer or HostSlice of it instead"
              : "host memory; make a DeviceBuffer or DeviceSlice of it instead");
}

void throw_slice_out_of_range(const char* what, std::size_t offset, std::size_t count, std::size_t size) {
  fail(Errc::size_mismatch, what, "(offset ", offset, ", count ", count, ") is out of range: the buffer has ", size,
       " elements, so offset + count must be at most ", size);
}

void throw_bad_view(const char* what, const void* address, std::size_t bytes, std::size_t from_bytes,
                    std::size_t to_bytes, std::size_t to_align) {
  const auto misaligned = reinterpret_cast<std::uintptr_t>(address) % to_align;
  if (bytes % to_bytes != 0)
    fail(Errc::size_mismatch, what, ": ", bytes, " bytes (", bytes / from_bytes, " elements of ", from_bytes,
         " bytes) are not a whole number of ", to_bytes, "-byte elements; view a slice whose size is a multiple of ",
         to_bytes, " bytes");
  fail(Errc::size_mismatch, what, ": the first element's address is ", misaligned, " bytes past a multiple of ",
       to_align, ", the alignment the ", to_bytes,
       "-byte element type needs; view a slice that starts at an offset "
       "that is a multiple of ",
       to_align, " bytes");
}

}  // namespace detail
}  // namespace devctx
