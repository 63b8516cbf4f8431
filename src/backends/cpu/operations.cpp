// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/operations.cpp - what each operation of a CPU queue does with its parts and
// when it completes; a kernel's trace line (DEVCTX_TRACE).
#include "backends/cpu/operations.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <devctx/detail/device/fission.hpp>

#include "backends/cpu/check/guarded_memory.hpp"
#include "backends/cpu/cpu_queue.hpp"
#include "backends/cpu/settings.hpp"
#include "core/errors.hpp"
#include "core/text.hpp"
#include "core/trace/hooks.hpp"

namespace devctx::detail::cpu {
namespace {

/// The smallest part of a copy or fill worth handing to another thread.
constexpr std::size_t kCopyChunk = std::size_t{1} << 20;
/// Parts per worker: enough for threads that finish early to take over from late ones, few
/// enough that claiming a part stays a small cost.
constexpr std::size_t kKernelPartsPerWorker = 16;
constexpr std::size_t kCopyPartsPerWorker = 4;
/// The unit of a copy's parts, from the copy's destination: into memory aligned to 64 bytes (the
/// start of every buffer the CPU backend allocates), two threads never write one cache line.
constexpr std::size_t kLine = 64;

/// Marks written each element of `span` whose bytes differ from `before`.
void mark_changed_elements(check::ShadowRegistry& registry, const LaunchSpan& span, const std::vector<std::byte>& before) {
  const auto* now = static_cast<const std::byte*>(span.data);
  const std::size_t e = span.element_bytes;
  for (std::size_t i = 0; i < span.count;) {
    if (std::memcmp(now + i * e, before.data() + i * e, e) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i + 1;  // a run of changed elements, marked at once
    while (j < span.count && std::memcmp(now + j * e, before.data() + j * e, e) != 0) ++j;
    registry.mark_written(now + i * e, (j - i) * e);
    i = j;
  }
}

}  // namespace

// ---- KernelOp -----------------------------------------------------------------------------------

KernelOp::KernelOp(const KernelLaunch& launch, std::size_t workers, const std::string& label, std::size_t stack_bytes,
                   std::size_t shared_limit, check::ShadowRegistry& registry, bool checked)
    : name_(launch.name), device_label_(&label), stack_bytes_(stack_bytes), shared_limit_(shared_limit), failure_slot_(1) {
  std::byte* args = inline_args_;
  if (launch.args_size > sizeof inline_args_ || launch.args_align > alignof(decltype(inline_args_))) [[unlikely]] {
    const std::size_t align = std::max<std::size_t>(launch.args_align, 16);
    args_.reset(static_cast<std::byte*>(std::aligned_alloc(align, (launch.args_size + align) / align * align)));
    if (!args_) throw std::bad_alloc();
    args = args_.get();
  }
  std::memcpy(args, launch.args, launch.args_size);
  // The launch as enqueued, except what lives only as long as the enqueue call: the arguments
  // are this op's copy (the name is static), and the CUDA and buffer fields (never read here)
  // are dropped.
  task_.launch = launch;
  task_.launch.name = name_;
  task_.launch.args = args;
  task_.launch.cuda_args = nullptr;
  task_.launch.buffers = nullptr;
  task_.launch.buffer_count = 0;
  static std::atomic<std::uint64_t> launches{0};
  task_.launch_id = ++launches;
  blocks_ = launch.config.grid_dim.volume();
  partition_ = Partition(blocks_, workers, kKernelPartsPerWorker, 1);
  parts = partition_.parts;
  task_.run_block = launch.cpu->run_block;
  task_.run_thread = launch.cpu->run_thread;
  if (checked) [[unlikely]] {
    tracking_ = std::make_unique<Tracking>(registry);
    std::vector<LaunchSpan>& spans = tracking_->checked.spans;
    spans.resize(launch.param_count);
    spans.resize(launch.cpu->spans(args, spans.data()));
    tracking_->checked.registry = &registry;
    task_.checked = &tracking_->checked;
    task_.run_block = launch.cpu->run_block_checked;
    task_.run_thread = launch.cpu->run_thread_checked;
    partition_ = Partition(blocks_, 1, 1, blocks_);  // one part
    parts = partition_.parts;
  } else if (!registry.empty()) [[unlikely]] {
    // Unchecked code may write checked memory: afterwards, all it could write counts as written.
    tracking_ = std::make_unique<Tracking>(registry);
    std::vector<LaunchSpan>& writable = tracking_->writable;
    writable.resize(launch.param_count);
    writable.resize(launch.cpu->spans(args, writable.data()));
    std::erase_if(writable, [](const LaunchSpan& s) { return s.read_only; });
  }
  task_.fission = !checked && fission_enabled();
  trace_ = trace_enabled();
  if (trace_) trace_start_ = Clock::now();
  note_ = trace::kernel_note();
}

bool KernelOp::can_run_here() noexcept {
  try {
    BlockExecutor::prepare_for_this_thread(stack_bytes_, shared_limit_);
    return true;
  } catch (...) {
    return false;
  }
}

void KernelOp::run_part(std::size_t part) noexcept {
  try {
    run_range(part);
  } catch (...) {
    // The part could not start (the thread's executor could not be made): the launch fails
    // with that reason at synchronize, and the worker goes on with other work.
    record_failure(failure_of_current_exception());
  }
}

void KernelOp::run_range(std::size_t part) {
  BlockExecutor::prepare_for_this_thread(stack_bytes_, shared_limit_);
  const auto [begin, end] = partition_.range(part);
  RangeResult result = task_.checked != nullptr
                           ? run_checked_range(begin, end)
                           : BlockExecutor::of_this_thread().run_range(task_, begin, end, failed_, !why_known_);
  if (result.failure) record_failure(std::move(*result.failure));
  cooperative_blocks_ += result.cooperative;
  plain_blocks_ += result.plain + result.block_level;
  translated_blocks_ += result.translated;
  if (result.declined != nullptr) declined_.store(result.declined, std::memory_order_relaxed);
  if (!result.why.empty()) {
    const std::lock_guard lock(why_mutex_);
    if (why_.empty()) why_ = std::move(result.why);
    why_known_ = true;
  }
}

[[gnu::noinline, gnu::cold]] RangeResult KernelOp::run_checked_range(std::uint64_t begin, std::uint64_t end) {
  // A checked launch counts as written every element of its writable span arguments that it
  // changed, however it wrote it (through a pointer, in a block that failed): the checker sees
  // only accesses through span[i], and an unchanged element is one it cannot tell was written.
  std::vector<std::vector<std::byte>> before;
  for (const LaunchSpan& s : task_.checked->spans)
    if (!s.read_only) {
      const auto* data = static_cast<const std::byte*>(s.data);
      before.emplace_back(data, data + s.count * s.element_bytes);
    }
  RangeResult result = BlockExecutor::of_this_thread().run_range(task_, begin, end, failed_, !why_known_);
  auto copy = before.begin();
  for (const LaunchSpan& s : task_.checked->spans)
    if (!s.read_only) mark_changed_elements(tracking_->registry, s, *copy++);
  return result;
}

void KernelOp::record_failure(BlockFailure&& failure) noexcept {
  // Only the first failing part writes the slot; finish() reads it once every part is done.
  if (!failed_.exchange(true)) failure_slot_.front().failure = std::move(failure);
}

BlockFailure KernelOp::failure_of_current_exception() const noexcept {
  BlockFailure failure{Errc::out_of_memory, {}};
  try {
    const std::string where = concat("kernel '", name_, "' could not run on a worker of ", *device_label_, ": ");
    try {
      throw;
    } catch (const Error& e) {
      failure = {e.code(), where + e.what()};
    } catch (const std::bad_alloc&) {
      failure.message = where + "out of memory";
    } catch (const std::exception& e) {
      failure = {Errc::backend_error, where + e.what()};
    } catch (...) {
      failure = {Errc::backend_error, where + "an exception of unknown type"};
    }
  } catch (...) {
    // No memory for the message: the code alone (CpuQueue's report says what it means).
  }
  return failure;
}

void KernelOp::finish(std::list<QueuedFailure>& failures) noexcept {
  if (trace_ || note_) {
    try {
      const std::string path = execution_path();
      if (trace_) {
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - trace_start_).count();
        const LaunchConfig& c = task_.launch.config;
        // The time through fixed_text: a '.' under any locale the program set (tools read this line).
        std::fprintf(stderr, "devctx trace: %s %.*s grid %s block %s shared %zu B: %s; %s ms from enqueue\n",
                     device_label_->c_str(), int(name_.size()), name_.data(), to_string(c.grid_dim).c_str(),
                     to_string(c.block_dim).c_str(), c.shared_bytes, path.c_str(), fixed_text(ms, 3).c_str());
      }
      if (note_) {
        const std::lock_guard lock(note_->mutex);
        note_->text = path;
      }
    } catch (...) {
      // The trace is best effort: no memory to format it.
    }
  }
  if (tracking_ != nullptr) [[unlikely]]
    for (const LaunchSpan& s : tracking_->writable) tracking_->registry.mark_written(s.data, s.count * s.element_bytes);
  if (!failed_) return;
  failure_slot_.front().seq = seq;
  failures.splice(failures.end(), failure_slot_);
}

std::string KernelOp::fission_reason() const {
  if (task_.checked != nullptr) return "a checked launch never runs a translated twin";
  if (!task_.fission) return "DEVCTX_CPU_FISSION=0 turned translated twins off";
  if (const char* declined = declined_.load(std::memory_order_relaxed)) return concat("not translated: ", declined);
  if (task_.launch.fission_off != nullptr) return concat("not translated: ", task_.launch.fission_off);
  if (const char* off = fission_off_reason())
    return concat("not translated: the fission translator did not run on this program's kernel files (", off, ")");
  return "not translated: the kernel's file was not processed by devctx's fission translator (files added with "
         "devctx_add_kernels are, when the translator is on: see the configure step's 'devctx: fission' line)";
}

std::string KernelOp::execution_path() const {
  const KernelLaunch& launch = task_.launch;
  std::string path;
  if (launch.block_level)
    path = "block-level: each for_each_thread phase ran as a loop over the block's threads";
  else if (translated_blocks_ > 0)
    path = concat("translated: the kernel's block-level twin ran ",
                  translated_blocks_ == blocks_ ? std::string("every block")
                                                : concat(translated_blocks_.load(), " of ", blocks_, " blocks"),
                  " as loops over its threads (between barriers, if it has any)");
  else if (cooperative_blocks_ == 0)
    path = "plain loop: no thread reached barrier() or a warp operation";
  else
    path = concat("cooperative fibers for ", cooperative_blocks_.load(), " of ", blocks_, " blocks (", why_, ")",
                  plain_blocks_ > 0 ? concat("; plain loop for the other ", plain_blocks_.load()) : std::string(),
                  "; fibers: ", fission_reason());
  return path;
}

// ---- copies and fills ---------------------------------------------------------------------------

CopyOp::CopyOp(void* dst, const void* src, std::size_t bytes, std::size_t workers, check::ShadowRegistry& registry)
    : registry_(registry), dst_(static_cast<std::byte*>(dst)), src_(static_cast<const std::byte*>(src)), bytes_(bytes) {
  partition_ = Partition((bytes_ + kLine - 1) / kLine, workers, kCopyPartsPerWorker, kCopyChunk / kLine);
  parts = partition_.parts;
}

void CopyOp::run_part(std::size_t part) noexcept {
  const auto [first, last] = partition_.range(part);
  const std::size_t begin = std::size_t(first) * kLine, end = std::min(bytes_, std::size_t(last) * kLine);
  if (begin >= end) return;
  std::memmove(dst_ + begin, src_ + begin, end - begin);
  if (!registry_.empty()) [[unlikely]]
    registry_.mark_written(dst_ + begin, end - begin);
}

FillOp::FillOp(void* dst, std::size_t count, const void* value, std::size_t element_bytes, std::size_t workers,
               check::ShadowRegistry& registry)
    : registry_(registry), dst_(static_cast<std::byte*>(dst)), count_(count), element_bytes_(element_bytes) {
  pattern_.resize(element_bytes);
  std::memcpy(pattern_.data(), value, element_bytes);
  uniform_ = std::all_of(pattern_.begin(), pattern_.end(), [&](std::byte b) { return b == pattern_[0]; });
  partition_ = Partition(count_, workers, kCopyPartsPerWorker, std::max<std::size_t>(1, kCopyChunk / element_bytes));
  parts = partition_.parts;
}

void FillOp::run_part(std::size_t part) noexcept {
  const auto [first, last] = partition_.range(part);
  const std::size_t begin = std::size_t(first), end = std::size_t(last);
  if (begin >= end) return;
  std::byte* out = dst_ + begin * element_bytes_;
  const std::size_t n = end - begin;
  if (uniform_) {
    std::memset(out, int(pattern_[0]), n * element_bytes_);
  } else if (element_bytes_ == 4) {
    std::uint32_t v;
    std::memcpy(&v, pattern_.data(), 4);
    std::fill_n(reinterpret_cast<std::uint32_t*>(out), n, v);
  } else if (element_bytes_ == 8) {
    std::uint64_t v;
    std::memcpy(&v, pattern_.data(), 8);
    std::fill_n(reinterpret_cast<std::uint64_t*>(out), n, v);
  } else {
    for (std::size_t i = 0; i < n; ++i) std::memcpy(out + i * element_bytes_, pattern_.data(), element_bytes_);
  }
  if (!registry_.empty()) [[unlikely]]
    registry_.mark_written(out, n * element_bytes_);
}

// ---- operations without parts -------------------------------------------------------------------

void MarkerOp::finish(std::list<QueuedFailure>&) noexcept { event->when = Clock::now(); }

void MarkerOp::enqueued() noexcept { event->seq = seq; }

void FreeOp::finish(std::list<QueuedFailure>&) noexcept {
  if (!registry.empty()) registry.remove(data);
  if (guarded)
    check::guarded_free(data);
  else
    std::free(data);
}

}  // namespace devctx::detail::cpu
