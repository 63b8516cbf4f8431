// SPDX-License-Identifier: Apache-2.0
// src/core/tensor_errors.cpp - the errors devctx/tensor.hpp and devctx/device_tensor.hpp report
// through the seam: a multi-index or tile outside a tensor, a bad reshape, a layout larger than
// its memory.
#include <cstddef>
#include <string>

#include "core/errors.hpp"

namespace devctx::detail {
namespace {

std::string tuple(const std::size_t* values, std::size_t rank) {
  std::string text = "(";
  for (std::size_t d = 0; d < rank; ++d) text += concat(d == 0 ? "" : ", ", values[d]);
  return text + ")";
}

}  // namespace

void throw_tensor_out_of_range(const char* what, const std::size_t* index, const std::size_t* bounds,
                               std::size_t rank) {
  const std::string w = what;
  if (w == "tile")
    fail(Errc::kernel_failed, "tensor tile ", tuple(index, rank), " is out of range: the tensor holds ",
         tuple(bounds, rank), " whole tiles; a tile must lie inside the tensor");
  fail(Errc::kernel_failed, "tensor index ", tuple(index, rank), " is out of range for extents ",
       tuple(bounds, rank), "; guard the access with `if (i < t.extent(0) && ...)`");
}

void throw_tensor_bad_reshape(std::size_t from, std::size_t to, bool from_contiguous, bool to_contiguous) {
  if (!from_contiguous)
    fail(Errc::kernel_failed, "tensor reshape of a view that is not contiguous (a tile or a strided view of ", from,
         " elements): only a contiguous tensor can be reshaped");
  if (!to_contiguous)
    fail(Errc::kernel_failed, "tensor reshape to a layout that is not contiguous (", to,
         " elements): reshape to a row- or column-major layout made from its extents");
  fail(Errc::kernel_failed, "tensor reshape from ", from, " elements to ", to,
       " elements: a reshape keeps the number of elements");
}

void throw_tensor_too_large(const char* what, std::size_t needed, std::size_t size) {
  fail(Errc::size_mismatch, "tensor over ", what, ": its layout reaches ", needed, " elements but the memory holds ",
       size);
}

}  // namespace devctx::detail
