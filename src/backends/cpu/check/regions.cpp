// SPDX-License-Identifier: Apache-2.0
#include "backends/cpu/check/regions.hpp"

#include "core/errors.hpp"

namespace devctx::detail::cpu::check {

void RegionTable::clear() {
  regions_.clear();
  last_ = nullptr;
  shared_base_ = nullptr;
}

Region& RegionTable::add(Region region) {
  if (region.shared() && shared_base_ != nullptr) region.begin = shared_base_ + region.shared_offset;
  regions_.push_back(std::make_unique<Region>(std::move(region)));
  return *regions_.back();
}

void RegionTable::set_shared_base(const std::byte* base) {
  shared_base_ = base;
  for (auto& r : regions_)
    if (r->shared()) r->begin = base + r->shared_offset;
}

Region* RegionTable::find(const void* address) {
  if (last_ != nullptr && last_->contains(address)) return last_;
  for (auto& r : regions_) {
    if (r->contains(address)) {
      last_ = r.get();
      return last_;
    }
  }
  return nullptr;
}

std::vector<const Region*> RegionTable::shared_regions() const {
  std::vector<const Region*> out;
  for (const auto& r : regions_)
    if (r->shared()) out.push_back(r.get());
  return out;
}

Region* RegionTable::find_shared(std::string_view name, std::size_t offset) {
  for (auto& r : regions_)
    if (r->kind == RegionKind::shared_array && r->shared_offset == offset && r->name == name) return r.get();
  return nullptr;
}

std::string describe(const Region& region) {
  switch (region.kind) {
    case RegionKind::argument: return concat("argument ", region.argument, " (", region.type, ')');
    case RegionKind::shared_array: return concat("shared array '", region.name, '\'');
    case RegionKind::dynamic_shared: return "dynamic shared memory";
    case RegionKind::device_memory: break;
  }
  return concat("device memory at ", static_cast<const void*>(region.begin), " (not a kernel argument)");
}

std::string element_of(const Region& region, const void* address, std::size_t bytes) {
  const std::size_t offset = std::size_t(static_cast<const std::byte*>(address) - region.begin);
  if (region.row_bytes > 0 && bytes > 0 && region.row_bytes % bytes == 0 && offset % bytes == 0)
    return concat("element [", offset / region.row_bytes, "][", offset % region.row_bytes / bytes, "] of ",
                  describe(region));
  const std::size_t unit = bytes > 0 ? bytes : region.element_bytes;
  if (offset % unit == 0) return concat("element ", offset / unit, " of ", describe(region));
  return concat("bytes ", offset, "..", offset + unit - 1, " of ", describe(region));
}

}  // namespace devctx::detail::cpu::check
