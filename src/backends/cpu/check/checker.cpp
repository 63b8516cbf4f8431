// SPDX-License-Identifier: Apache-2.0
#include "backends/cpu/check/checker.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include <devctx/detail/base/checked_size.hpp>
#include <devctx/detail/base/cpu_state.hpp>
#include <devctx/detail/base/source_site.hpp>

#include "core/errors.hpp"

namespace devctx::detail::cpu::check {

namespace {
/// Every checking-mode message ends with this, so that a report is recognisable as one.
constexpr std::string_view kSuffix = " (devctx checking mode)";
/// The guard page after a checked shared array (arenas.hpp) is this long.
constexpr std::size_t kGuardBytes = 4096;
/// The running thread's rank in its block (also in a second, reversed run).
std::uint32_t running_rank() noexcept {
  const Dim3 t = tls.thread_idx, d = tls.block_dim;
  return t.x + d.x * (t.y + d.y * t.z);
}
Dim3 coords(std::uint64_t linear, const Dim3& dims) {
  return {unsigned(linear % dims.x), unsigned(linear / dims.x % dims.y),
          unsigned(linear / (std::uint64_t(dims.x) * dims.y))};
}
}  // namespace

Report::Report(std::string message, bool about_current_thread)
    : Error(kCode, std::move(message)), about_current_thread_(about_current_thread) {}

BarrierSite site_of(const SourceSite& site) noexcept {
  std::string_view file = site.file;
  if (const auto slash = file.find_last_of('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return {file, site.line, site.column};
}

void Checker::begin_launch(std::string_view kernel, Dim3 grid, Dim3 block, std::span<const SpanArgument> arguments,
                           std::size_t dynamic_shared_bytes, const ShadowRegistry* registry) {
  registry_ = registry;
  arguments_ = arguments;
  kernel_ = kernel;
  grid_ = grid;
  block_ = block;
  regions_.clear();
  log_.begin_launch();
  order_.begin_launch();
  for (const SpanArgument& a : arguments) {
    Region r;
    r.begin = static_cast<const std::byte*>(a.data);
    r.bytes = a.count * a.element_bytes;
    r.kind = RegionKind::argument;
    r.argument = a.argument;
    r.type = a.type;
    r.element_bytes = a.element_bytes;
    if (!a.read_only) order_.add_writable(a.data, r.bytes);
    if (registry_ != nullptr && r.bytes > 0) {
      ShadowRegistry::Hit hit = registry_->find(a.data);
      r.init = std::move(hit.shadow);
      r.init_offset = hit.offset;
    }
    regions_.add(std::move(r));
  }
  if (dynamic_shared_bytes > 0) {
    Region r;
    r.kind = RegionKind::dynamic_shared;
    r.bytes = dynamic_shared_bytes;
    r.shared_offset = 0;
    order_.add_region(regions_.add(std::move(r)), false);
  }
}

void Checker::add_shared_array(std::string_view name, std::size_t offset, std::size_t bytes, std::size_t element_bytes) {
  if (regions_.find_shared(name, offset) != nullptr) return;
  Region r;
  r.kind = RegionKind::shared_array;
  r.name = name;
  r.bytes = bytes;
  r.element_bytes = element_bytes;
  r.shared_offset = offset;
  order_.add_region(regions_.add(std::move(r)), regions_.shared_base() != nullptr);
}

void Checker::begin_block(Dim3 index, const std::byte* shared_base) {
  block_idx_ = index;
  block_linear_ = index.x + std::uint64_t(grid_.x) * (index.y + std::uint64_t(grid_.y) * index.z);
  regions_.set_shared_base(shared_base);
  log_.begin_block(block_linear_);
  barriers_.begin_block(std::uint32_t(block_.volume()));
  order_.begin_block();
}

Region* Checker::region_of(const void* address) {
  if (Region* r = regions_.find(address); r != nullptr) return r;
  // Device memory that no argument covers (an atomic through a pointer computed in the kernel):
  // name it by its allocation, when it is one the checked context made.
  if (registry_ == nullptr) return nullptr;
  ShadowRegistry::Hit hit = registry_->find(address);
  if (!hit.shadow) return nullptr;
  Region r;
  r.begin = hit.base;
  r.bytes = hit.shadow->bytes();
  r.kind = RegionKind::device_memory;
  r.init = std::move(hit.shadow);
  return &regions_.add(std::move(r));
}

void* Checker::span_element(std::uint32_t rank, const void* data, std::size_t index, std::size_t count,
                            std::size_t element_bytes, bool read_only) {
  Region* r = region_of(data);
  if (index >= count) {
    std::string what;
    if (r != nullptr && static_cast<const std::byte*>(data) == r->begin &&
        checked_mul(count, element_bytes) == std::optional<std::size_t>(r->bytes)) {
      what = concat(describe(*r), ", which has ", count, " elements");
    } else {
      // A subspan (or a span the kernel built): name the span, and where it lies.
      what = concat("a span of ", count, " elements");
      if (r != nullptr)
        what += concat(" starting at ", element_of(*r, data, element_bytes));
      else
        what += concat(" at ", data);
    }
    throw Report(concat("out-of-bounds access: index ", index, " of ", what,
                        "; guard the access with `if (i < s.size())`", kSuffix),
                 true);
  }
  auto* element = const_cast<std::byte*>(static_cast<const std::byte*>(data)) + index * element_bytes;
  if (order_.second_run() || r == nullptr) return element;
  if (auto found = log_.touch(rank, *r, element, element_bytes, read_only)) report(*found);
  return element;
}

void Checker::segment_end() {
  if (auto found = order_.segment_end(running_rank())) report(*found);
}

void Checker::thread_switch() { segment_end(); }

std::optional<std::string> Checker::guard_fault_text(const void* address) const {
  const auto* p = static_cast<const std::byte*>(address);
  for (const Region* r : regions_.shared_regions()) {
    const std::byte* end = r->begin + r->bytes;
    if (p < end || p >= end + kGuardBytes) continue;
    const std::size_t unit = std::max<std::size_t>(1, r->element_bytes);
    const std::size_t index = std::size_t(p - r->begin) / unit, count = r->bytes / unit;
    return concat("out-of-bounds access: index ", index, " of ", describe(*r), ", which has ", count,
                  " elements (found at the guard page after it)", kSuffix);
  }
  return std::nullopt;
}

std::string Checker::allocation_fault_text(const void* address, const GuardedHit& hit, Access access) const {
  const auto* p = static_cast<const std::byte*>(address);
  const std::byte *begin = hit.data, *end = hit.data + hit.bytes;
  const char* what = access == Access::read ? "a read" : access == Access::write ? "a write" : "an access";
  const char* side = hit.before ? "before its start (found at the guard page before it)"
                                : "past its end (found at the guard page after it)";
  // The arguments whose pointer points into the allocation, pointer parameters first (a span's
  // own accesses are checked before they happen; its data() used as a pointer lands here too).
  std::vector<const SpanArgument*> into;
  for (int pointers = 1; pointers >= 0; --pointers)
    for (const SpanArgument& a : arguments_) {
      const auto* d = static_cast<const std::byte*>(a.data);
      if (d >= begin && d <= end && (!a.type.empty() && a.type.back() == '*') == (pointers == 1)) into.push_back(&a);
    }
  if (into.empty()) {
    const std::string where = hit.before ? concat(begin - p, hit.before && begin - p == 1 ? " byte" : " bytes",
                                                  " before the start")
                                         : concat("at byte ", p - begin);
    return concat("out-of-bounds access: ", what, ' ', where, " of a device buffer of ", hit.bytes, " bytes at ",
                  static_cast<const void*>(begin), ", ", side, "; no argument of the kernel points into this buffer",
                  kSuffix);
  }
  const SpanArgument& a = *into.front();
  const auto* data = static_cast<const std::byte*>(a.data);
  const auto unit = std::ptrdiff_t(std::max<std::size_t>(1, a.element_bytes));
  const std::ptrdiff_t diff = p - data;
  const std::ptrdiff_t index = diff >= 0 ? diff / unit : -((-diff + unit - 1) / unit);
  const auto offset = std::size_t(data - begin);
  const bool whole = hit.bytes % std::size_t(unit) == 0 && offset % std::size_t(unit) == 0;
  const std::size_t elements = hit.bytes / std::size_t(unit);
  const std::string buffer = whole ? concat("a device buffer of ", elements, elements == 1 ? " element (" : " elements (",
                                            hit.bytes, hit.bytes == 1 ? " byte)" : " bytes)")
                                   : concat("a device buffer of ", hit.bytes, " bytes");
  std::string text = concat("out-of-bounds access: ", what, " at index ", index, " of argument ", a.argument, " (",
                            a.type, "), which points to ");
  if (offset == 0)
    text += concat("the start of ", buffer);
  else
    text += concat(whole ? "element " : "byte ", whole ? offset / std::size_t(unit) : offset, " of ", buffer);
  if (offset + a.count * std::size_t(unit) != hit.bytes)
    text += concat(" (the argument passed ", a.count, a.count == 1 ? " element" : " elements", " from there)");
  text += concat(": ", side);
  for (std::size_t i = 1; i < into.size(); ++i)
    text += concat(i == 1 ? "; " : ", ", "argument ", into[i]->argument, " (", into[i]->type, ')',
                   i + 1 == into.size() ? (i == 1 ? " points into the same buffer" : " point into the same buffer") : "");
  if (!hit.before) text += "; guard the access with `if (i < n)`";
  return text + std::string(kSuffix);
}

void Checker::atomic(std::uint32_t rank, const void* address, std::size_t bytes) {
  Region* r = region_of(address);
  if (r == nullptr) return;
  order_.note_atomic(address, bytes, r->shared());
  if (order_.second_run()) return;
  if (auto found = log_.atomic(rank, *r, address, bytes)) report(*found);
}

void Checker::barrier_arrive(std::uint32_t rank, const BarrierSite& site) {
  segment_end();
  if (order_.second_run()) return;
  if (auto d = barriers_.arrive(rank, site)) throw Report(divergence_text(*d), false);
}

void Checker::barrier_complete() {
  if (!order_.second_run())
    if (auto found = log_.end_interval()) report(*found);
  if (auto found = order_.barrier()) report(*found);
  if (!order_.second_run()) barriers_.complete();
}

std::optional<std::string> Checker::thread_exit(std::uint32_t rank) {
  segment_end();
  if (order_.second_run()) return std::nullopt;
  if (auto d = barriers_.exit(rank)) return divergence_text(*d);
  return std::nullopt;
}

void Checker::block_end() {
  if (order_.second_run()) {
    if (auto found = order_.end_second_run()) report(*found);
    return;
  }
  if (auto found = log_.end_interval()) report(*found);
}

std::string Checker::thread_text(std::uint32_t rank) const {
  return concat("thread ", to_string(coords(rank, block_)));
}

std::string Checker::thread_text(const ThreadRef& t) const {
  return concat("thread ", to_string(coords(t.rank, block_)), " of block ", to_string(coords(t.block, grid_)));
}

std::string Checker::interval_text(std::uint32_t interval) const {
  if (interval == 0) return "before the block's first barrier";
  std::string text = concat("after the block's barrier #", interval);
  if (interval == barriers_.completed() && !barriers_.last_site().file.empty())
    text += concat(" (the barrier() at ", describe(barriers_.last_site()), ')');
  return text;
}

void Checker::report(const Finding& f) const {
  const std::string element = element_of(*f.region, f.address, f.bytes);
  if (f.kind == Finding::Kind::uninitialised_read) {
    throw Report(concat("read of uninitialised device memory: ", thread_text(f.first.rank), " read ", element,
                        ", which nothing wrote since the buffer was created (no copy, memset or kernel)", kSuffix),
                 false);
  }
  const bool shared = f.region->shared();
  if (f.first.block == f.second.block) {
    throw Report(concat(shared ? "shared-memory race: " : "global-memory race: ", thread_text(f.first.rank), " wrote ",
                        element, " and ", thread_text(f.second.rank), f.second_wrote ? " wrote it too" : " accessed it",
                        " with no barrier() between the two (both ", interval_text(f.interval),
                        "); separate them with devctx::barrier()", kSuffix),
                 false);
  }
  throw Report(concat("global-memory race between blocks: ", thread_text(f.first),
                      f.first_wrote ? " wrote " : " accessed ", element, " and ", thread_text(f.second),
                      f.second_wrote ? (f.first_wrote ? " wrote it too" : " wrote it") : " accessed it",
                      "; the blocks of a launch run in no fixed order and cannot wait for each other: use atomics, "
                      "or split the work into two launches",
                      kSuffix),
               false);
}

void Checker::report(const OrderFinding& f) {
  const auto thread = [&](std::uint32_t rank1) { return rank1 == 0 ? std::string("no thread") : thread_text(rank1 - 1); };
  if (f.kind == OrderFinding::Kind::write_write)
    throw Report(concat("shared-memory race: ", thread(f.first), " wrote ", element_of(*f.region, f.address, f.bytes),
                        " and ", thread(f.second), " wrote it too with no barrier() between the two (both ",
                        interval_text(f.interval), "); separate them with devctx::barrier()", kSuffix),
                 false);
  if (f.kind == OrderFinding::Kind::shared_differs)
    throw Report(concat("shared-memory race: ", element_of(*f.region, f.address, f.bytes),
                        " differs at the block's barrier #", f.interval,
                        " between running the block's threads in index order (last written by ", thread(f.first),
                        ") and in reverse order (last written by ", thread(f.second),
                        "): a thread read an element that another thread writes between the same two barriers; "
                        "separate them with devctx::barrier()",
                        kSuffix),
                 false);
  const Region* r = region_of(f.address);
  std::string element = concat("the byte at ", static_cast<const void*>(f.address));
  if (r != nullptr) {
    const std::size_t unit = std::max<std::size_t>(1, r->element_bytes);
    element = element_of(*r, r->begin + std::size_t(f.address - r->begin) / unit * unit, unit);
  }
  throw Report(concat("shared-memory race: ", element,
                      " differs at the block's end between running the block's threads in index order and in "
                      "reverse order: a thread read a shared-memory element that another thread writes between the "
                      "same two barriers; separate them with devctx::barrier()",
                      kSuffix),
               false);
}

std::string Checker::divergence_text(const Divergence& d) const {
  if (d.kind == Divergence::Kind::exited)
    return concat("barrier divergence: ", thread_text(d.other), " returned after passing ", d.other_passed,
                  d.other_passed == 1 ? " barrier" : " barriers", " while ", thread_text(d.waiting),
                  " waits at the block's barrier #", d.barrier, " (the barrier() at ", describe(d.waiting_site),
                  "); a thread that took part in a barrier must reach every later barrier of its block (returning "
                  "before the first barrier is allowed)",
                  kSuffix);
  return concat("barrier divergence: ", thread_text(d.waiting), " waits at the barrier() at ", describe(d.waiting_site),
                " and ", thread_text(d.other), " at the one at ", describe(d.other_site), " (the block's barrier #",
                d.barrier, "); every thread of a block must reach the same barrier() call", kSuffix);
}

}  // namespace devctx::detail::cpu::check
