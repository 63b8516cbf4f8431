// SPDX-License-Identifier: Apache-2.0
// src/core/tensor_errors.cpp - the errors devctx/tensor.hpp and devctx/device_tensor.hpp report
// through the seam: a multi-index or tile outside a tensor, a bad reshape, a layout larger than
// its memory, a layout whose size, span or strides do not fit in std::size_t.
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

void throw_tensor_out_of_range(const char* what, const std::size_t* index, const std::size_t* bounds, std::size_t rank) {
  const std::string w = what;
  if (w == "tile")
    fail(Errc::kernel_failed, "tensor tile ", tuple(index, rank), " is out of range: the tensor holds ",
         tuple(bounds, rank), " whole tiles; a tile must lie inside the tensor");
  fail(Errc::kernel_failed, "tensor index ", tuple(index, rank), " is out of range for extents ", tuple(bounds, rank),
       "; guard the access with `if (i < t.extent(0) && ...)`");
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

void throw_tensor_too_large(const char* what, const char* layout, const std::size_t* extents,
                            const std::size_t* strides, std::size_t rank, std::size_t needed, std::size_t size) {
  fail(Errc::size_mismatch, "tensor over ", what, ": its layout (devctx::", layout, " with extents ", tuple(extents, rank),
       " and strides ", tuple(strides, rank), ") reaches ", needed, " elements but the memory holds ", size);
}

void throw_tensor_layout_overflow(const char* layout, const std::size_t* extents, const std::size_t* strides,
                                  std::size_t rank, std::size_t fault, bool in_kernel) {
  std::string what = concat("devctx::", layout, " layout with extents ", tuple(extents, rank));
  if (strides != nullptr) what += concat(" and strides ", tuple(strides, rank));
  std::string why;
  if (fault < rank)
    why = concat("the stride of dimension ", fault, " (the product of the extents inside it)");
  else if (fault == rank)
    why = "its size (the product of its extents)";
  else
    why = "its span (the offset of its last element, the sum of (extent - 1) * stride, plus 1)";
  fail(in_kernel ? Errc::kernel_failed : Errc::size_mismatch, what, ": ", why,
       " is more than a 64-bit size can count (it would wrap around past 2^64), so no memory holds such a tensor; "
       "a layout's size, span and strides must each fit in std::size_t");
}

void throw_tensor_static_extent(const char* layout, std::size_t dim, std::size_t given, std::size_t fixed, bool in_kernel) {
  fail(in_kernel ? Errc::kernel_failed : Errc::invalid_argument, "devctx::", layout, "::from_parts: extent ", dim,
       " is given as ", given, " but the layout's static extent ", dim, " is ", fixed);
}

}  // namespace devctx::detail
