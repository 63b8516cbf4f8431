// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/generator.cpp - random programs over devctx: which op comes next, its operands,
// and the orderings that keep the program free of races.
#include "fuzz/generator.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

namespace devctx_fuzz {
namespace {

constexpr std::uint64_t kLarge = std::uint64_t{1} << 18;  // elements of u32: 1 MiB

Op make(OpKind k) {
  Op op;
  op.kind = k;
  return op;
}

/// The accesses `op` makes if it runs (none for ops that touch no buffer).
std::vector<Use> uses_of(const Model& m, const Op& op) {
  std::vector<Use> uses;
  auto add = [&](const View& v, bool write) {
    const SlotModel& s = m.slot(v.slot);
    Range r;
    if (s.live() && Model::resolve(s, v, r)) uses.push_back({v.slot, r, write});
  };
  switch (op.kind) {
    case OpKind::copy:
      add(op.src, false);
      add(op.dst, true);
      break;
    case OpKind::memset: add(op.dst, true); break;
    case OpKind::kernel:
      if (op.kernel != KernelId::fail) {
        add(op.src, false);
        add(op.dst, true);
      }
      break;
    case OpKind::tensor: add(op.dst, true); break;
    case OpKind::host_fill: add(View{op.slot, true, 0, 0}, true); break;
    default: break;
  }
  return uses;
}

}  // namespace

template <class Pred>
int Generator::pick_slot(const Model& m, Pred ok) {
  std::array<int, kSlots> candidates{};
  int n = 0;
  for (int s = 0; s < kSlots; ++s)
    if (ok(m.slot(s))) candidates[std::size_t(n++)] = s;
  return n == 0 ? -1 : candidates[std::size_t(c_.below(std::uint64_t(n)))];
}

Op Generator::next(const Model& m) {
  if (!queued_.empty()) {
    const Op op = queued_.front();
    queued_.pop_front();
    return op;
  }
  if (!intent_) {
    for (int attempt = 0; attempt < 8 && !intent_; ++attempt) intent_ = intent(m);
    if (!intent_) return make(OpKind::sync_context);
    orderings_ = 0;
  }
  abandon_ = false;
  if (auto order = ordering_for(m, *intent_)) {
    ++orderings_;
    return *order;
  }
  if (abandon_) {
    intent_.reset();
    return make(OpKind::sync_context);
  }
  const Op op = *intent_;
  intent_.reset();
  return op;
}

std::optional<Op> Generator::ordering_for(const Model& m, Op& op) {
  const std::vector<Use> uses = uses_of(m, op);
  if (uses.empty()) return std::nullopt;
  const bool host = op.kind == OpKind::host_fill ||
                    (op.kind == OpKind::tensor && m.slot(op.dst.slot).kind != BufKind::device);
  for (int tries = 0;; ++tries) {
    const std::vector<int> racing = host ? m.host_racing_queues(uses) : m.racing_queues(op.stream, uses);
    if (racing.empty()) return std::nullopt;
    const int queue = racing[std::size_t(c_.below(racing.size()))];
    const int owner = m.stream_of(queue);
    // ctx.synchronize() waits for the first context's streams, dropped ones included.
    const bool context_sync_covers = m.queue_context(queue) == 0;
    auto sync_owner = [&] {
      Op s = make(OpKind::sync_stream);
      s.stream = std::uint8_t(owner);
      return s;
    };
    auto sync_some = [&] { return context_sync_covers && c_.percent(50) ? make(OpKind::sync_context) : sync_owner(); };
    auto record_then = [&](OpKind then) {
      Op rec = make(OpKind::record_event), after = make(then);
      rec.stream = std::uint8_t(owner);
      after.stream = op.stream;
      rec.slot = after.slot = std::uint8_t(c_.below(kEvents));
      queued_.push_back(after);
      return rec;
    };
    if (owner < 0) {
      if (context_sync_covers) return make(OpKind::sync_context);
      abandon_ = true;  // a dropped second context: nothing can wait for its work any more
      return std::nullopt;
    }
    if (orderings_ >= 4) return sync_owner();
    const std::uint64_t r = c_.below(100);
    if (host) return r < 40 ? sync_owner() : r < 75 ? record_then(OpKind::sync_event) : sync_some();
    if (r < 45) return record_then(OpKind::wait_event);
    if (r < 70 || tries >= 2) return sync_some();
    op.stream = std::uint8_t(owner);  // run it where the work it depends on runs
  }
}

std::optional<Op> Generator::intent(const Model& m) {
  // Weights per op kind, in OpKind's order.
  static constexpr std::array<unsigned, kOpKinds> kWeights = {70, 25, 10, 40, 260, 60, 170, 50, 50,
                                                              25, 25, 25, 15, 8,   4,  8,   60};
  unsigned total = 0;
  for (unsigned w : kWeights) total += w;
  unsigned pick = unsigned(c_.below(total));
  std::size_t k = 0;
  while (pick >= kWeights[k]) pick -= kWeights[k++];
  const auto kind = OpKind(k);
  auto nonempty = [](const SlotModel& s) { return s.state != SlotModel::State::empty; };
  Op op = make(kind);
  op.stream = std::uint8_t(c_.below(kStreams));
  switch (kind) {
    case OpKind::create: return make_create(m);
    case OpKind::drop: {
      const int s = pick_slot(m, nonempty);
      if (s < 0) return std::nullopt;
      op.slot = std::uint8_t(s);
      return op;
    }
    case OpKind::move: {
      const int s = pick_slot(m, nonempty);
      if (s < 0) return std::nullopt;
      op.slot = std::uint8_t(s);
      op.slot2 = std::uint8_t((s + 1 + int(c_.below(kSlots - 1))) % kSlots);
      return op;
    }
    case OpKind::host_fill: {
      const int s = pick_slot(m, [](const SlotModel& x) { return x.live() && x.kind != BufKind::device; });
      if (s < 0) return std::nullopt;
      op.slot = std::uint8_t(s);
      op.value = c_.below(std::uint64_t{1} << 32);
      return op;
    }
    case OpKind::copy: return make_copy(m);
    case OpKind::memset: return make_memset(m);
    case OpKind::kernel: return make_kernel(m);
    case OpKind::tensor: return make_tensor(m);
    case OpKind::record_event:
    case OpKind::wait_event:
    case OpKind::sync_event:
    case OpKind::query_event: op.slot = std::uint8_t(c_.below(kEvents)); return op;
    case OpKind::elapsed:
      op.slot = std::uint8_t(c_.below(kEvents));
      op.slot2 = std::uint8_t(c_.below(kEvents));
      return op;
    case OpKind::new_stream:
      op.stream = std::uint8_t(1 + c_.below(kStreams - 1));  // 4: a new second context
      return op;
    case OpKind::moved_from_use: op.value = c_.below(9); return op;
    case OpKind::sync_context:
    case OpKind::sync_stream: return op;
  }
  return std::nullopt;
}

std::optional<Op> Generator::make_create(const Model& m) {
  Op op = make(OpKind::create);
  op.slot = std::uint8_t(c_.below(kSlots));
  op.stream = std::uint8_t(c_.below(kStreams));
  const std::uint64_t k = c_.below(100);
  op.buf_kind = k < 50 ? BufKind::device : k < 80 ? BufKind::host : BufKind::vec;
  op.elem = c_.percent(80) ? Elem::u32 : Elem::u8;
  op.value = c_.below(std::uint64_t{1} << 32);
  int large = 0;
  for (int s = 0; s < kSlots; ++s) large += m.slot(s).size() >= kLarge ? 1 : 0;
  const std::uint64_t r = c_.below(1000);
  const std::uint64_t eb = elem_bytes(op.elem);
  if (r < 100) {
    op.count = c_.below(5);
  } else if (r < 700) {
    op.count = c_.between(1, 64);
  } else if (r < 975 || (r < 980 && (!opt_.large_buffers || large >= 2))) {
    op.count = c_.between(65, std::max<std::uint64_t>(65, opt_.max_elements));
  } else if (r < 980) {
    op.count = c_.between(kLarge * 4 / eb, kLarge * 8 / eb + 1000);  // 1-2 MiB
  } else if (op.buf_kind != BufKind::vec) {
    // Sizes every device must refuse with out_of_memory: byte counts that overflow 64 bits,
    // absurd ones, and ones whose rounding up to the allocation's alignment wraps past 2^64
    // (a known defect, issue 10 item 1: kept out by --no-huge-sizes).
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::array<std::uint64_t, 9> huge = {max,
                                               max / eb + 1,
                                               max - 4,
                                               max / eb,
                                               max / eb - 99,
                                               (std::uint64_t{1} << 62) - 1,
                                               (std::uint64_t{1} << 44) / eb,
                                               (std::uint64_t{1} << 50) / eb,
                                               std::uint64_t{1} << 61};
    op.count = huge[c_.below(huge.size())];
    const bool wraps = op.count <= max / eb && op.count * eb > max - (std::uint64_t{1} << 20);
    if (wraps && !opt_.huge_sizes) op.count = (std::uint64_t{1} << 46) / eb;
  } else {
    op.count = c_.between(1, 64);
  }
  return op;
}

View Generator::make_view(const SlotModel& s, int slot, std::uint64_t count, bool out_of_range) {
  View v;
  v.slot = std::uint8_t(slot);
  const std::uint64_t size = s.size();
  if (out_of_range) {
    v.whole = false;
    switch (c_.below(4)) {
      case 0:
        v.offset = size - std::min<std::uint64_t>(size, c_.below(3));
        v.count = size - v.offset + 1 + c_.below(3);
        break;
      case 1:
        v.offset = size + 1 + c_.below(3);
        v.count = 0;
        break;
      case 2:
        v.offset = std::numeric_limits<std::uint64_t>::max() - c_.below(2);
        v.count = 2 + c_.below(3);
        break;
      default:
        v.offset = c_.below(size + 1);
        v.count = std::numeric_limits<std::uint64_t>::max() - c_.below(3);
        break;
    }
    return v;
  }
  count = std::min(count, size);
  v.offset = c_.below(size - count + 1);
  v.count = count;
  v.whole = v.offset == 0 && count == size && c_.percent(60);
  return v;
}

std::optional<Op> Generator::make_copy(const Model& m) {
  Op op = make(OpKind::copy);
  op.stream = std::uint8_t(c_.below(kStreams));
  op.value = c_.below(2);  // bit 0: the source is passed as const
  const bool use_moved = c_.percent(3);
  const int d = pick_slot(m, [&](const SlotModel& s) {
    return s.live() || (use_moved && s.state == SlotModel::State::moved);
  });
  if (d < 0) return make_create(m);
  const SlotModel& ds = m.slot(d);
  const int s = c_.percent(15) ? d : pick_slot(m, [&](const SlotModel& x) {
    return x.elem == ds.elem && (x.live() || (use_moved && x.state == SlotModel::State::moved));
  });
  if (s < 0) return std::nullopt;
  const SlotModel& ss = m.slot(s);
  const std::uint64_t mode = c_.below(100);
  if (mode < 6) {  // sizes that differ
    const std::uint64_t a = c_.below(ds.size() + 1);
    std::uint64_t b = c_.below(ss.size() + 1);
    if (a == b && b > 0)
      --b;
    else if (a == b)
      return std::nullopt;
    op.dst = make_view(ds, d, a, false);
    op.src = make_view(ss, s, b, false);
    return op;
  }
  if (mode < 10) {  // a slice out of range (a std::span's would be the caller's undefined behaviour)
    const bool on_dst = c_.percent(50);
    const SlotModel& target = on_dst ? ds : ss;
    if (target.kind == BufKind::vec) return std::nullopt;
    op.dst = make_view(ds, d, ds.size(), on_dst);
    op.src = make_view(ss, s, ss.size(), !on_dst);
    return op;
  }
  std::uint64_t n = std::min(ds.size(), ss.size());
  if (c_.percent(30)) n = c_.below(n + 1);
  op.dst = make_view(ds, d, n, false);
  op.src = make_view(ss, s, n, false);
  if (d == s && !opt_.overlap_copies) {
    Range a, b;
    if (Model::resolve(ds, op.dst, a) && Model::resolve(ss, op.src, b) && a.overlaps(b)) return std::nullopt;
  }
  return op;
}

std::optional<Op> Generator::make_memset(const Model& m) {
  Op op = make(OpKind::memset);
  op.stream = std::uint8_t(c_.below(kStreams));
  const bool odd = c_.percent(8);  // a moved-from buffer or a std::vector: refused
  const int d = pick_slot(m, [&](const SlotModel& s) {
    return odd ? s.state != SlotModel::State::empty : (s.live() && s.kind != BufKind::vec);
  });
  if (d < 0) return std::nullopt;
  const SlotModel& ds = m.slot(d);
  const bool oor = ds.kind != BufKind::vec && c_.percent(4);
  op.dst = make_view(ds, d, c_.percent(50) ? ds.size() : c_.below(ds.size() + 1), oor);
  const std::uint64_t v = c_.below(4);
  op.value = v == 0 ? 0 : v == 1 ? 0xFFFFFFFFu : c_.below(std::uint64_t{1} << 32);
  return op;
}

Shape Generator::block_shape(const Limits& l, bool warps) {
  static constexpr std::array<unsigned, 16> kSizes = {1,   2,   3,   7,   31,  32,  33,   64,
                                                      100, 128, 255, 256, 257, 512, 1000, 1024};
  const unsigned max = unsigned(std::min<std::uint64_t>(l.max_threads, 1024));
  Shape b;
  const std::uint64_t mode = c_.below(10);
  if (warps) {
    const unsigned warps_max = std::max(1u, max / 32);
    if (mode < 6)
      b.x = 32 * unsigned(c_.between(1, warps_max));
    else if (mode < 8) {
      b.x = 32;
      b.y = unsigned(c_.between(1, std::min(warps_max, l.max_block.y)));
    } else {
      b.x = 8;
      b.y = 4;
      b.z = unsigned(c_.between(1, std::min({warps_max, l.max_block.z, 8u})));
    }
    return b;
  }
  if (mode < 6) {
    b.x = c_.percent(70) ? kSizes[c_.below(kSizes.size())] : unsigned(c_.between(1, max));
    b.x = std::min(b.x, max);
  } else if (mode < 8) {
    b.x = unsigned(c_.between(1, 32));
    b.y = unsigned(c_.between(1, std::max(1u, max / b.x)));
  } else {
    b.x = unsigned(c_.between(1, 16));
    b.y = unsigned(c_.between(1, 8));
    b.z = unsigned(c_.between(1, std::min({8u, l.max_block.z, std::max(1u, max / (b.x * b.y))})));
  }
  return b;
}

Shape Generator::grid_shape(const Limits& l, std::uint64_t blocks_wanted, std::uint64_t max_blocks) {
  Shape g;
  const std::uint64_t mode = c_.below(10);
  if (mode < 7) {
    g.x = unsigned(std::min(max_blocks, c_.between(1, std::max<std::uint64_t>(1, blocks_wanted + 1))));
  } else if (mode < 9) {
    g.x = unsigned(c_.between(1, 4));
    g.y = unsigned(c_.between(1, std::min<std::uint64_t>(4, l.max_grid.y)));
  } else {
    g.x = unsigned(c_.between(1, 3));
    g.y = unsigned(c_.between(1, std::min<std::uint64_t>(3, l.max_grid.y)));
    g.z = unsigned(c_.between(1, std::min<std::uint64_t>(3, l.max_grid.z)));
  }
  return g;
}

void Generator::invalid_shape(const Limits& l, Op& op) {
  op.grid = {1, 1, 1};
  op.block = {32, 1, 1};
  op.shared_bytes = 0;
  switch (c_.below(10)) {
    case 0: op.grid.x = 0; break;
    case 1: op.block.y = 0; break;
    case 2: op.grid.z = 0; break;
    case 3: op.block.x = l.max_block.x + 1 + unsigned(c_.below(3)); break;
    case 4: op.block = {l.max_block.x, 1, l.max_block.z + 1}; break;
    case 5: op.block = {32, 32, 2}; break;  // 2048 threads
    case 6: op.grid.y = l.max_grid.y + 1; break;
    case 7: op.grid = {l.max_grid.x == 0xFFFFFFFFu ? 0 : l.max_grid.x + 1, 1, 1}; break;
    case 8: op.shared_bytes = l.max_shared + 1 + c_.below(3); break;
    default: op.shared_bytes = std::numeric_limits<std::uint64_t>::max() - c_.below(2); break;
  }
}

std::optional<Op> Generator::make_kernel(const Model& m) {
  const Limits& l = m.limits();
  Op op = make(OpKind::kernel);
  op.stream = std::uint8_t(c_.below(kStreams));
  const bool can_fail = l.kernels_can_throw && opt_.throwing_kernels;
  const std::uint64_t k = c_.below(can_fail ? 100 : 92);
  op.kernel = k < 35   ? KernelId::scale_add
              : k < 60 ? KernelId::block_reduce
              : k < 80 ? KernelId::block_reverse
              : k < 92 ? KernelId::warp_sum
                       : KernelId::fail;
  const bool invalid = c_.percent(8);
  if (op.kernel == KernelId::fail) {
    if (invalid) {
      invalid_shape(l, op);
    } else {
      op.block = block_shape(l, false);
      op.grid = grid_shape(l, 3, std::max<std::uint64_t>(1, 4096 / op.block.volume()));
    }
    const std::uint64_t threads = op.grid.volume() * op.block.volume();
    const bool behind_barrier = c_.percent(50) && opt_.throws_in_fibers;
    op.value = c_.below(std::min<std::uint64_t>(threads, 0xFFFFFFFFu) + 2) | (behind_barrier ? std::uint64_t{1} << 32 : 0);
    return op;
  }
  const bool use_moved = c_.percent(3);
  auto usable = [&](const SlotModel& s) {
    return s.kind == BufKind::device && s.elem == Elem::u32 &&
           (s.live() || (use_moved && s.state == SlotModel::State::moved));
  };
  const int in = pick_slot(m, usable);
  if (in < 0) {
    Op c = make(OpKind::create);
    c.slot = std::uint8_t(c_.below(kSlots));
    c.stream = op.stream;
    c.buf_kind = BufKind::device;
    c.count = c_.between(1, 512);
    return c;
  }
  const int out = c_.percent(20) ? in : pick_slot(m, usable);
  const SlotModel& is = m.slot(in);
  const SlotModel& os = m.slot(out);
  const bool oor = c_.percent(3);
  const bool oor_in = c_.percent(50);
  op.src = make_view(is, in, c_.percent(70) ? is.size() : c_.below(is.size() + 1), oor && oor_in);
  op.dst = make_view(os, out, c_.percent(70) ? os.size() : c_.below(os.size() + 1), oor && !oor_in);
  if (in == out && !oor) {
    const bool in_place_ok = op.kernel == KernelId::scale_add || op.kernel == KernelId::block_reverse;
    if (in_place_ok && c_.percent(50)) {
      op.dst = op.src;
    } else {
      // Two disjoint parts of the one buffer.
      const std::uint64_t size = is.size(), cut = c_.below(size + 1);
      const View low{std::uint8_t(in), false, 0, cut}, high{std::uint8_t(in), false, cut, size - cut};
      const bool low_in = c_.percent(50);
      op.src = low_in ? low : high;
      op.dst = low_in ? high : low;
    }
  }
  op.value = c_.below(std::uint64_t{1} << 32);
  if (invalid) {
    invalid_shape(l, op);
    return op;
  }
  op.block = block_shape(l, op.kernel == KernelId::warp_sum);
  const std::uint64_t per_block = op.block.volume();
  Range ir, orr;
  const std::uint64_t n = std::max(Model::resolve(is, op.src, ir) ? ir.size() : 0,
                                   Model::resolve(os, op.dst, orr) ? orr.size() : 0);
  const std::uint64_t max_blocks = std::max<std::uint64_t>(1, (std::uint64_t{1} << 16) / per_block);
  op.grid = grid_shape(l, (n + per_block - 1) / per_block, max_blocks);
  const std::uint64_t sh = c_.below(100);
  const std::uint64_t free_shared = l.max_shared > kKernelStaticShared ? l.max_shared - kKernelStaticShared : 0;
  if (sh < 85)
    op.shared_bytes = 0;
  else if (sh < 95)
    op.shared_bytes = c_.below(free_shared + 1);
  else
    op.shared_bytes = c_.between(free_shared + 1, l.max_shared);  // over the limit with DEVCTX_SHARED
  return op;
}

std::uint64_t Generator::tensor_extent() {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t r = c_.below(100);
  if (r < 10) return 0;
  if (r < 70) return c_.between(1, 24);
  const std::uint64_t near = c_.below(3);  // just below, at, just above
  switch (c_.below(6)) {
    case 0: return (std::uint64_t{1} << 32) - 1 + near;
    case 1: return (std::uint64_t{1} << 62) - 1 + near;
    case 2: return (std::uint64_t{1} << 63) - 1 + near;
    case 3: return max - near;
    case 4: return std::uint64_t{1} << c_.below(64);
    default: return c_.between(1, max);
  }
}

std::optional<Op> Generator::make_tensor(const Model& m) {
  Op op = make(OpKind::tensor);
  op.stream = std::uint8_t(c_.below(kStreams));
  const int slot = pick_slot(m, [](const SlotModel& s) { return s.live() && s.elem == Elem::u32; });
  if (slot < 0) return std::nullopt;
  const SlotModel& s = m.slot(slot);
  op.dst = make_view(s, slot, c_.percent(60) ? s.size() : c_.below(s.size() + 1), false);
  op.layout = LayoutId(c_.below(kLayoutIds));
  const std::size_t rank = layout_rank(op.layout);
  for (std::size_t d = 0; d < rank; ++d) op.ext[d] = tensor_extent();
  Range r;
  const std::uint64_t room = Model::resolve(s, op.dst, r) ? r.size() : 0;
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  switch (c_.below(4)) {
    case 0: {  // extents whose product straddles 2^64: e1 = floor(max / e0) + {0, 1}
      const std::uint64_t e0 = c_.between(2, max);
      op.ext[0] = e0;
      op.ext[1] = max / e0 + c_.below(2);
      break;
    }
    case 1: {  // extents that fit the memory, so that the tensor is written
      std::uint64_t left = std::max<std::uint64_t>(room, 1);
      for (std::size_t d = 0; d < rank; ++d) {
        op.ext[d] = c_.below(std::min<std::uint64_t>(left, 32) + 1);
        left = op.ext[d] == 0 ? left : left / op.ext[d];
      }
      break;
    }
    default: break;
  }
  if (op.layout == LayoutId::strided2) {
    for (std::uint64_t& st : op.strides) {
      const std::uint64_t k = c_.below(10);
      st = k < 6 ? c_.below(std::max<std::uint64_t>(room, 2)) : k < 8 ? max / c_.between(1, 4) : c_.below(max);
    }
  }
  // A launch over up to 4096 elements (the model writes each one).
  op.block = {unsigned(32 * c_.between(1, 8)), 1, 1};
  op.grid = {unsigned(c_.between(1, 8)), unsigned(c_.between(1, 2)), 1};
  op.value = c_.below(std::uint64_t{1} << 32) | (c_.below(3) << 32);
  return op;
}

}  // namespace devctx_fuzz
