#include "core/errors.hpp"

#include <cstdio>

#include <devctx/detail/runtime.hpp>
#include <devctx/device_info.hpp>
#include <devctx/span.hpp>

#include "core/backend.hpp"

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
  }
  return "unknown";
}

const char* to_string(Api api) noexcept {
  switch (api) {
    case Api::cpu: return "cpu";
    case Api::cuda: return "cuda";
  }
  return "unknown";
}

namespace detail {

std::string to_string(const Dim3& d) { return concat('(', d.x, ", ", d.y, ", ", d.z, ')'); }

std::string bytes_text(std::size_t bytes) {
  static constexpr const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return concat(bytes, " bytes");
  char text[64];
  std::snprintf(text, sizeof text, "%.1f %s (%zu bytes)", value, units[unit], bytes);
  return text;
}

void throw_span_out_of_range(std::size_t index, std::size_t size) {
  fail(Errc::kernel_failed, "span index ", index, " is out of range for a span of ", size,
       " elements (DEVCTX_CHECK_BOUNDS); guard the access with `if (i < s.size())`");
}

void throw_invalid_handle(const char* what) {
  fail(Errc::invalid_handle, "use of ", what);
}

void throw_slice_out_of_range(const char* what, std::size_t offset, std::size_t count, std::size_t size) {
  fail(Errc::size_mismatch, what, "(offset ", offset, ", count ", count, ") is out of range: the buffer has ",
       size, " elements, so offset + count must be at most ", size);
}

void throw_allocation_too_large(QueueImpl& queue, const char* operation, std::size_t count, std::size_t element_bytes) {
  fail(Errc::out_of_memory, operation, " on ", queue.device().label(), ": cannot allocate ", count, " elements of ",
       element_bytes, " bytes: the size in bytes does not fit in 64 bits, far beyond the device's ",
       bytes_text(queue.device().info().total_memory_bytes));
}

}  // namespace detail
}  // namespace devctx
