// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/runner.cpp - executes ops on a DeviceContext, predicts each outcome from the
// model (success, or devctx::Error with the codes the API documents), and compares buffer
// contents with the model at every synchronize point.
#include "fuzz/runner.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <span>
#include <utility>
#include <variant>

#include "fuzz/kernels.hpp"
#include "fuzz/tensor_plan.hpp"
#include "fuzz/tensors.hpp"

namespace devctx_fuzz {
namespace {

using devctx::Errc;
using u32 = std::uint32_t;
using u8 = std::uint8_t;

/// Allocations at least this large are refused by every device this runs on (16 TiB).
constexpr std::uint64_t kAbsurdBytes = std::uint64_t{1} << 44;
/// Allocations larger than this and not absurd might or might not succeed: never run.
constexpr std::uint64_t kMaxSaneBytes = std::uint64_t{1} << 28;

using Slot = std::variant<std::monostate, devctx::DeviceBuffer<u32>, devctx::DeviceBuffer<u8>, devctx::HostBuffer<u32>,
                          devctx::HostBuffer<u8>, std::vector<u32>, std::vector<u8>>;

/// What a call may do: succeed (may_succeed), or throw devctx::Error with one of `codes`
/// (any code at all when `any_code`).
struct Expect {
  bool may_succeed = true;
  std::vector<Errc> codes;
  bool any_code = false;
  void error(Errc c) {
    may_succeed = false;
    codes.push_back(c);
  }
  [[nodiscard]] bool allows(Errc c) const {
    return any_code || std::find(codes.begin(), codes.end(), c) != codes.end();
  }
};

std::string codes_text(const std::vector<Errc>& codes) {
  std::string s;
  for (Errc c : codes) s += (s.empty() ? "" : " or ") + std::string(devctx::to_string(c));
  return s.empty() ? "nothing" : s;
}

std::string shape_expr(const Shape& s) {
  return "{" + std::to_string(s.x) + ", " + std::to_string(s.y) + ", " + std::to_string(s.z) + "}";
}

template <class T>
const char* type_name() {
  return std::is_same_v<T, u32> ? "std::uint32_t" : "std::uint8_t";
}

/// Calls f with slot `slot` as an enqueue_copy / enqueue_memset endpoint: the buffer itself,
/// a slice of it, the std::vector, or a std::span over part of it; const when `AsConst`.
template <class T, bool AsConst, class F>
void with_endpoint(Slot& slot, const View& v, F&& f) {
  auto pass = [&](auto& owner) {
    using Owner = std::decay_t<decltype(owner)>;
    if (v.whole) {
      if constexpr (AsConst)
        f(std::as_const(owner));
      else
        f(owner);
    } else if constexpr (std::is_same_v<Owner, std::vector<T>>) {
      const std::span<T> part = std::span<T>(owner).subspan(v.offset, v.count);
      if constexpr (AsConst)
        f(std::span<const T>(part));
      else
        f(part);
    } else {
      if constexpr (AsConst)
        f(std::as_const(owner).slice(v.offset, v.count));
      else
        f(owner.slice(v.offset, v.count));
    }
  };
  if (auto* b = std::get_if<devctx::DeviceBuffer<T>>(&slot))
    pass(*b);
  else if (auto* h = std::get_if<devctx::HostBuffer<T>>(&slot))
    pass(*h);
  else if (auto* vec = std::get_if<std::vector<T>>(&slot))
    pass(*vec);
}

/// The host writes fill `seed` into a HostBuffer or std::vector.
void host_write(Slot& slot, std::uint64_t seed, Elem elem) {
  std::visit(
      [&](auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (!std::is_same_v<X, std::monostate> && !std::is_same_v<X, devctx::DeviceBuffer<u32>> &&
                      !std::is_same_v<X, devctx::DeviceBuffer<u8>>) {
          using T = std::remove_reference_t<decltype(x[0])>;
          for (std::size_t i = 0; i < x.size(); ++i) x[i] = T(Model::fill_value(seed, i, elem));
        }
      },
      slot);
}

}  // namespace

struct Runner::Objects {
  explicit Objects(devctx::Api api) : ctx(api), ctx2(api), moved_ctx(api) {
    for (int s = 1; s < kSecondContext; ++s) streams.push_back(ctx.create_stream());
    devctx::Stream taken = std::move(moved_stream);
    devctx::DeviceContext taken_ctx = std::move(moved_ctx);
  }
  devctx::StreamRef& stream(int s) {
    if (s == 0) return ctx;
    if (s == kSecondContext) return ctx2;
    return streams[std::size_t(s - 1)];
  }

  devctx::DeviceContext ctx;
  devctx::DeviceContext ctx2;  // a second context of the same device
  std::vector<devctx::Stream> streams;
  std::array<Slot, kSlots> slots;
  std::array<devctx::Event, kEvents> events;
  devctx::Stream moved_stream{ctx.create_stream()};  // moved from in the constructor
  devctx::DeviceContext moved_ctx;                   // likewise
};

Limits Runner::limits_of(const devctx::DeviceContext& ctx) {
  const devctx::DeviceInfo& info = ctx.info();
  Limits l;
  l.max_grid = {info.max_grid_dim.x, info.max_grid_dim.y, info.max_grid_dim.z};
  l.max_block = {info.max_block_dim.x, info.max_block_dim.y, info.max_block_dim.z};
  l.max_threads = info.max_threads_per_block;
  l.max_shared = info.max_shared_bytes_per_block;
  l.static_shared_at_call = ctx.api() != devctx::Api::cpu;
  l.kernels_can_throw = ctx.api() == devctx::Api::cpu;
  return l;
}

Runner::Runner(devctx::Api api) : objects_(std::make_unique<Objects>(api)), model_(limits_of(objects_->ctx)) {}

Runner::~Runner() = default;

Status Runner::fail(std::string message) {
  note("// FAILED: " + message);
  failure_ = std::move(message);
  return Status::failed;
}

void Runner::note(std::string line) {
  if (keep_trace_) trace_.push_back(std::move(line));
}

std::string Runner::declare(const std::string& name) { return declared_.insert(name).second ? "auto " + name : name; }

Status Runner::apply(const Op& op) {
  try {
    refused_ = false;
    const Status st = run(op);
    const auto k = std::size_t(op.kind);
    if (st == Status::ran) ++counts_.ran[k];
    if (st == Status::ran && refused_) ++counts_.refused[k];
    if (st == Status::skipped) ++counts_.skipped[k];
    return st;
  } catch (const devctx::Error& e) {
    return fail(std::string("unexpected devctx::Error (") + devctx::to_string(e.code()) + "): " + e.what());
  } catch (const std::exception& e) {
    return fail(std::string("an exception that is not devctx::Error escaped: ") + e.what());
  }
}

Status Runner::finish() {
  Op op;
  op.kind = OpKind::sync_context;
  return apply(op);
}

namespace {

/// The C++ name of a slot's object, by its type: d3 (DeviceBuffer<uint32_t>), h3_8 (HostBuffer<uint8_t>), v3 ...
std::string slot_name(int slot, BufKind kind, Elem elem) {
  const char* prefix = kind == BufKind::device ? "d" : kind == BufKind::host ? "h" : "v";
  return prefix + std::to_string(slot) + (elem == Elem::u8 ? "_8" : "");
}

std::string view_expr(const SlotModel& s, int slot, const View& v, bool as_const) {
  std::string name = slot_name(slot, s.kind, s.elem);
  if (as_const) name = "std::as_const(" + name + ")";
  if (v.whole) return name;
  const std::string args = std::to_string(v.offset) + ", " + std::to_string(v.count);
  if (s.kind == BufKind::vec) {
    const std::string type = s.elem == Elem::u8 ? "std::uint8_t" : "std::uint32_t";
    return (as_const ? "std::span<const " : "std::span<") + type + ">(" + slot_name(slot, s.kind, s.elem) +
           ").subspan(" + args + ")";
  }
  return name + ".slice(" + args + ")";
}

std::string stream_name(int s) { return s == 0 ? "ctx" : s == kSecondContext ? "ctx2" : "s" + std::to_string(s); }

/// One stream's synchronize: for a context's own stream that is StreamRef::synchronize, which
/// DeviceContext::synchronize (every stream of the context) hides.
std::string stream_sync_expr(int s) {
  if (s == 0 || s == kSecondContext) return "static_cast<devctx::StreamRef&>(" + stream_name(s) + ").synchronize()";
  return stream_name(s) + ".synchronize()";
}

}  // namespace

Status Runner::run(const Op& op) {
  Objects& o = *objects_;
  const std::string at = "/* " + std::string(to_string(op.kind)) + " */ ";

  // Runs `f`, which makes one devctx call, and checks that it succeeds or throws as `e` says:
  // true when it succeeded, false when it threw as allowed, nothing (and failure_ set) otherwise.
  auto call = [&](const Expect& e, const std::string& expr, auto&& f) -> std::optional<bool> {
    try {
      f();
    } catch (const devctx::Error& err) {
      if (!e.allows(err.code())) {
        fail(expr + " threw " + devctx::to_string(err.code()) + " (" + err.what() + "); the model expected " +
             (e.may_succeed ? "success" : codes_text(e.codes)));
        return std::nullopt;
      }
      if (std::string(err.what()).empty()) {
        fail(expr + " threw devctx::Error with an empty message");
        return std::nullopt;
      }
      note(at + "EXPECT_THROW(" + expr + ", devctx::Error);  // " + devctx::to_string(err.code()));
      refused_ = true;
      return false;
    }
    if (!e.may_succeed) {
      note(at + expr + ";");
      fail(expr + " succeeded; the model expected devctx::Error " + codes_text(e.codes));
      return std::nullopt;
    }
    note(at + expr + ";");
    return true;
  };

  switch (op.kind) {
    // ---- buffers ---------------------------------------------------------------------------
    case OpKind::create: {
      if (op.slot >= kSlots) return Status::skipped;
      const std::uint64_t eb = elem_bytes(op.elem);
      const bool overflows = op.count > std::numeric_limits<std::size_t>::max() / eb;
      const std::uint64_t bytes = overflows ? 0 : op.count * eb;
      Expect e;
      if (op.buf_kind == BufKind::vec) {
        if (overflows || bytes > kMaxSaneBytes) return Status::skipped;  // std::bad_alloc is not devctx's
      } else if (overflows || bytes >= kAbsurdBytes) {
        e.error(Errc::out_of_memory);
      } else if (bytes > kMaxSaneBytes) {
        return Status::skipped;
      }
      const std::string name = slot_name(op.slot, op.buf_kind, op.elem);
      const std::string tname = op.elem == Elem::u32 ? "std::uint32_t" : "std::uint8_t";
      const std::size_t count = std::size_t(op.count);
      if (op.buf_kind == BufKind::vec) {
        if (op.elem == Elem::u32)
          o.slots[op.slot] = std::vector<u32>(count);
        else
          o.slots[op.slot] = std::vector<u8>(count);
        model_.create(op.slot, op.buf_kind, op.elem, op.count);
        model_.host_fill(op.slot, op.value);
        host_write(o.slots[op.slot], op.value, op.elem);
        note(at + declare(name) + " = fuzz_values<" + tname + ">(" + std::to_string(op.count) + ", " +
             std::to_string(op.value) + ");");
        return Status::ran;
      }
      devctx::StreamRef& s = o.stream(op.stream);
      const char* verb = op.buf_kind == BufKind::device ? "enqueue_create_buffer" : "enqueue_create_host_buffer";
      const std::string expr = declare(name) + " = " + stream_name(op.stream) + "." + verb + "<" + tname + ">(" +
                               std::to_string(op.count) + ")";
      const auto ok = call(e, expr, [&] {
        if (op.buf_kind == BufKind::device) {
          if (op.elem == Elem::u32)
            o.slots[op.slot] = s.enqueue_create_buffer<u32>(count);
          else
            o.slots[op.slot] = s.enqueue_create_buffer<u8>(count);
        } else {
          if (op.elem == Elem::u32)
            o.slots[op.slot] = s.enqueue_create_host_buffer<u32>(count);
          else
            o.slots[op.slot] = s.enqueue_create_host_buffer<u8>(count);
        }
      });
      if (!ok) return Status::failed;
      if (*ok) {
        model_.create(op.slot, op.buf_kind, op.elem, op.count);
        const std::uint64_t seq = model_.enqueue(op.stream);
        model_.add_access(op.slot, op.stream, seq, {0, op.count}, true);
      }
      return Status::ran;
    }

    case OpKind::drop: {
      if (op.slot >= kSlots) return Status::skipped;
      const SlotModel& s = model_.slot(op.slot);
      if (s.state != SlotModel::State::empty) note(at + slot_name(op.slot, s.kind, s.elem) + " = {};  // dropped");
      o.slots[op.slot] = std::monostate{};
      model_.drop(op.slot);
      return Status::ran;
    }

    case OpKind::move: {
      if (op.slot >= kSlots || op.slot2 >= kSlots || op.slot == op.slot2) return Status::skipped;
      const SlotModel& s = model_.slot(op.slot);
      if (s.state == SlotModel::State::empty) return Status::skipped;
      note(at + declare(slot_name(op.slot2, s.kind, s.elem)) + " = std::move(" + slot_name(op.slot, s.kind, s.elem) + ");");
      o.slots[op.slot2] = std::move(o.slots[op.slot]);
      if (s.kind == BufKind::vec) o.slots[op.slot] = std::monostate{};
      model_.move(op.slot, op.slot2);
      return Status::ran;
    }

    case OpKind::host_fill: {
      if (op.slot >= kSlots) return Status::skipped;
      const SlotModel& s = model_.slot(op.slot);
      if (!s.live() || s.kind == BufKind::device) return Status::skipped;
      if (!model_.host_racing_queues({{op.slot, {0, s.size()}, true}}).empty()) return Status::skipped;
      host_write(o.slots[op.slot], op.value, s.elem);
      note(at + "fuzz_fill(" + slot_name(op.slot, s.kind, s.elem) + ", " + std::to_string(op.value) + ");");
      model_.host_fill(op.slot, op.value);
      return Status::ran;
    }

    // ---- stream work -------------------------------------------------------------------------
    case OpKind::copy: {
      if (op.dst.slot >= kSlots || op.src.slot >= kSlots) return Status::skipped;
      const SlotModel& d = model_.slot(op.dst.slot);
      const SlotModel& s = model_.slot(op.src.slot);
      if (d.state == SlotModel::State::empty || s.state == SlotModel::State::empty || d.elem != s.elem)
        return Status::skipped;
      const bool as_const = (op.value & 1) != 0;
      Range dr, sr;
      const bool d_fits = Model::resolve(d, op.dst, dr), s_fits = Model::resolve(s, op.src, sr);
      if ((!d_fits && d.kind == BufKind::vec) || (!s_fits && s.kind == BufKind::vec)) return Status::skipped;
      Expect e;
      if (d.state == SlotModel::State::moved || s.state == SlotModel::State::moved) e.error(Errc::invalid_handle);
      if (!d_fits || !s_fits) e.error(Errc::size_mismatch);
      if (e.may_succeed && dr.size() != sr.size()) e.error(Errc::size_mismatch);
      if (e.may_succeed) {
        if (op.dst.slot == op.src.slot && dr.overlaps(sr)) e.any_code = true;  // memmove, or refused
        if (!model_.racing_queues(op.stream, {{op.src.slot, sr, false}, {op.dst.slot, dr, true}}).empty())
          return Status::skipped;
      }
      const std::string expr = stream_name(op.stream) + ".enqueue_copy(" + view_expr(d, op.dst.slot, op.dst, false) +
                               ", " + view_expr(s, op.src.slot, op.src, as_const) + ")";
      devctx::StreamRef& st = o.stream(op.stream);
      auto go = [&]<class T>() {
        with_endpoint<T, false>(o.slots[op.dst.slot], op.dst, [&](auto&& dv) {
          auto to_dv = [&](auto&& sv) { st.enqueue_copy(dv, sv); };
          if (as_const)
            with_endpoint<T, true>(o.slots[op.src.slot], op.src, to_dv);
          else
            with_endpoint<T, false>(o.slots[op.src.slot], op.src, to_dv);
        });
      };
      const auto ok = call(e, expr, [&] {
        if (d.elem == Elem::u32)
          go.template operator()<u32>();
        else
          go.template operator()<u8>();
      });
      if (!ok) return Status::failed;
      if (*ok) {
        const std::uint64_t seq = model_.enqueue(op.stream);
        model_.copy(op.dst.slot, dr, op.src.slot, sr);
        if (s.kind != BufKind::vec) model_.add_access(op.src.slot, op.stream, seq, sr, false);
        if (d.kind != BufKind::vec) model_.add_access(op.dst.slot, op.stream, seq, dr, true);
        // A copy to or from ordinary host memory returns once it is done, and so is everything
        // before it on the stream.
        if ((d.kind == BufKind::vec || s.kind == BufKind::vec) && dr.size() > 0) model_.stream_done_on_host(op.stream);
      }
      return Status::ran;
    }

    case OpKind::memset: {
      if (op.dst.slot >= kSlots) return Status::skipped;
      const SlotModel& d = model_.slot(op.dst.slot);
      if (d.state == SlotModel::State::empty) return Status::skipped;
      Range dr;
      const bool fits = Model::resolve(d, op.dst, dr);
      if (!fits && d.kind == BufKind::vec) return Status::skipped;
      Expect e;
      if (d.state == SlotModel::State::moved) e.error(Errc::invalid_handle);
      if (!fits) e.error(Errc::size_mismatch);
      if (e.may_succeed && d.kind == BufKind::vec) e.error(Errc::invalid_argument);
      if (e.may_succeed && !model_.racing_queues(op.stream, {{op.dst.slot, dr, true}}).empty()) return Status::skipped;
      const u32 value = u32(op.value);
      const std::string expr = stream_name(op.stream) + ".enqueue_memset(" + view_expr(d, op.dst.slot, op.dst, false) +
                               ", " + std::to_string(d.elem == Elem::u8 ? (value & 0xFF) : value) + "u)";
      devctx::StreamRef& st = o.stream(op.stream);
      const auto ok = call(e, expr, [&] {
        if (d.elem == Elem::u32)
          with_endpoint<u32, false>(o.slots[op.dst.slot], op.dst, [&](auto&& dv) { st.enqueue_memset(dv, value); });
        else
          with_endpoint<u8, false>(o.slots[op.dst.slot], op.dst, [&](auto&& dv) { st.enqueue_memset(dv, u8(value)); });
      });
      if (!ok) return Status::failed;
      if (*ok) {
        const std::uint64_t seq = model_.enqueue(op.stream);
        model_.fill(op.dst.slot, dr, value);
        model_.add_access(op.dst.slot, op.stream, seq, dr, true);
      }
      return Status::ran;
    }

    case OpKind::kernel: {
      const Limits& lim = model_.limits();
      const devctx::LaunchConfig config{.grid_dim = {op.grid.x, op.grid.y, op.grid.z},
                                        .block_dim = {op.block.x, op.block.y, op.block.z},
                                        .shared_bytes = std::size_t(op.shared_bytes)};
      const bool bad_shape = op.grid.x == 0 || op.grid.y == 0 || op.grid.z == 0 || op.block.x == 0 || op.block.y == 0 ||
                             op.block.z == 0 || op.grid.x > lim.max_grid.x || op.grid.y > lim.max_grid.y ||
                             op.grid.z > lim.max_grid.z || op.block.x > lim.max_block.x ||
                             op.block.y > lim.max_block.y || op.block.z > lim.max_block.z ||
                             op.block.volume() > lim.max_threads || op.shared_bytes > lim.max_shared;
      // Valid launches are kept small: the model runs every one of them too.
      if (!bad_shape && op.grid.volume() * op.block.volume() > (std::uint64_t{1} << 20)) return Status::skipped;
      const std::string cfg = "{.grid_dim = " + shape_expr(op.grid) + ", .block_dim = " + shape_expr(op.block) +
                              ", .shared_bytes = " + std::to_string(op.shared_bytes) + "}";
      devctx::StreamRef& st = o.stream(op.stream);
      if (op.kernel == KernelId::fail) {
        if (!lim.kernels_can_throw) return Status::skipped;
        Expect e;
        if (bad_shape) e.error(Errc::invalid_launch);
        const std::string expr = stream_name(op.stream) + ".enqueue_function<fuzz_fail>(" + cfg + ", " +
                                 std::to_string(op.value) + "ull)";
        const auto ok = call(e, expr, [&] { launch_fail(st, config, op.value); });
        if (!ok) return Status::failed;
        if (*ok) {
          const std::uint64_t seq = model_.enqueue(op.stream);
          if ((op.value & 0xFFFFFFFFu) < op.grid.volume() * op.block.volume())
            model_.add_failure(op.stream, seq, Errc::kernel_failed);
        }
        return Status::ran;
      }
      if (op.src.slot >= kSlots || op.dst.slot >= kSlots) return Status::skipped;
      const SlotModel& in = model_.slot(op.src.slot);
      const SlotModel& out = model_.slot(op.dst.slot);
      auto usable = [](const SlotModel& s) {
        return s.state != SlotModel::State::empty && s.kind == BufKind::device && s.elem == Elem::u32;
      };
      if (!usable(in) || !usable(out)) return Status::skipped;
      if (op.kernel == KernelId::warp_sum && !bad_shape && op.block.volume() % 32 != 0) return Status::skipped;
      Range ir, orr;
      const bool in_fits = Model::resolve(in, op.src, ir), out_fits = Model::resolve(out, op.dst, orr);
      Expect e;
      if (in.state == SlotModel::State::moved || out.state == SlotModel::State::moved) e.error(Errc::invalid_handle);
      if (!in_fits || !out_fits) e.error(Errc::size_mismatch);
      if (bad_shape) e.error(Errc::invalid_launch);
      const bool uses_static_shared = op.kernel == KernelId::block_reduce || op.kernel == KernelId::block_reverse;
      const bool shared_over = uses_static_shared && !bad_shape && op.shared_bytes + kKernelStaticShared > lim.max_shared;
      if (shared_over && lim.static_shared_at_call) e.error(Errc::invalid_launch);
      if (e.may_succeed && op.src.slot == op.dst.slot && ir.overlaps(orr)) {
        // Elementwise kernels may work in place; the others would race with themselves.
        const bool in_place_ok = (op.kernel == KernelId::scale_add || op.kernel == KernelId::block_reverse) &&
                                 ir.lo == orr.lo && ir.hi == orr.hi;
        if (!in_place_ok) return Status::skipped;
      }
      if (e.may_succeed && !model_.racing_queues(op.stream, {{op.src.slot, ir, false}, {op.dst.slot, orr, true}}).empty())
        return Status::skipped;
      const std::string expr = stream_name(op.stream) + ".enqueue_function<" + kernel_function_name(op.kernel) + ">(" +
                               cfg + ", " + view_expr(in, op.src.slot, op.src, true) + ", " +
                               view_expr(out, op.dst.slot, op.dst, false) +
                               (op.kernel == KernelId::scale_add ? ", " + std::to_string(u32(op.value)) + "u" : "") + ")";
      const auto ok = call(e, expr, [&] {
        auto& ib = std::get<devctx::DeviceBuffer<u32>>(o.slots[op.src.slot]);
        auto& ob = std::get<devctx::DeviceBuffer<u32>>(o.slots[op.dst.slot]);
        const InArg ia = op.src.whole ? InArg{&std::as_const(ib)}
                                      : InArg{std::as_const(ib).slice(op.src.offset, op.src.count)};
        const OutArg oa = op.dst.whole ? OutArg{&ob} : OutArg{ob.slice(op.dst.offset, op.dst.count)};
        launch(st, op.kernel, config, ia, oa, op.value);
      });
      if (!ok) return Status::failed;
      if (*ok) {
        const std::uint64_t seq = model_.enqueue(op.stream);
        if (shared_over) {
          model_.add_failure(op.stream, seq, Errc::invalid_launch);  // reported when it runs; writes nothing
        } else {
          model_.kernel(op.kernel, op.grid, op.block, op.src.slot, ir, op.dst.slot, orr, u32(op.value));
        }
        model_.add_access(op.src.slot, op.stream, seq, ir, false);
        model_.add_access(op.dst.slot, op.stream, seq, orr, true);
      }
      return Status::ran;
    }

    case OpKind::tensor: {
      // A layout of the op's extents over a u32 slot: refused (unrepresentable, or larger than
      // the memory) with size_mismatch, or accepted and, when the model can follow, written.
      if (op.dst.slot >= kSlots) return Status::skipped;
      const SlotModel& d = model_.slot(op.dst.slot);
      if (!d.live() || d.elem != Elem::u32) return Status::skipped;
      Range dr;
      if (!Model::resolve(d, op.dst, dr)) return Status::skipped;
      const TensorPlan plan = plan_tensor(op, dr.size());
      const bool device = d.kind == BufKind::device;
      Expect e;
      if (plan.verdict != TensorPlan::Verdict::fits) e.error(Errc::size_mismatch);
      bool write = plan.writes;
      if (write && device && !model_.racing_queues(op.stream, {{op.dst.slot, dr, true}}).empty()) write = false;
      if (write && !device && !model_.host_racing_queues({{op.dst.slot, dr, true}}).empty()) write = false;
      const std::string tensor_expr = "devctx::tensor(" + view_expr(d, op.dst.slot, op.dst, false) + ", " +
                                      layout_expr(op) + ")";
      const std::string expr = !write ? "(void)" + tensor_expr
                               : device
                                   ? stream_name(op.stream) +
                                         ".enqueue_function<fuzz_tensor_write>({.grid_dim = " + shape_expr(op.grid) +
                                         ", .block_dim = " + shape_expr(op.block) + "}, " + tensor_expr + ", " +
                                         std::to_string(u32(op.value)) + "u, " + std::to_string(op.value >> 32) + "u)"
                                   : "fuzz_tensor_write_on_host(" + tensor_expr + ", " + std::to_string(u32(op.value)) +
                                         "u, " + std::to_string(op.value >> 32) + "u)";
      const auto ok = call(e, expr, [&] {
        Slot& slot = o.slots[op.dst.slot];
        if (device) {
          auto& b = std::get<devctx::DeviceBuffer<u32>>(slot);
          const TensorDeviceArg m = op.dst.whole ? TensorDeviceArg{&b}
                                                 : TensorDeviceArg{b.slice(op.dst.offset, op.dst.count)};
          tensor_on_device(o.stream(op.stream), op, m, write);
        } else {
          std::span<u32> all;
          devctx::HostBuffer<u32>* whole = nullptr;
          if (auto* h = std::get_if<devctx::HostBuffer<u32>>(&slot)) {
            all = std::span<u32>(h->data(), h->size());
            whole = h;
          } else {
            all = std::span<u32>(std::get<std::vector<u32>>(slot));
          }
          const TensorHostArg m = op.dst.whole && whole != nullptr ? TensorHostArg{whole}
                                                                   : TensorHostArg{all.subspan(dr.lo, dr.size())};
          tensor_on_host(op, m, write);
        }
      });
      if (!ok) return Status::failed;
      if (*ok && write) {
        if (device) {
          const std::uint64_t seq = model_.enqueue(op.stream);
          model_.tensor(op.dst.slot, dr, plan.offsets, u32(op.value));
          model_.add_access(op.dst.slot, op.stream, seq, dr, true);
        } else {
          model_.tensor(op.dst.slot, dr, plan.offsets, u32(op.value));
        }
      }
      return Status::ran;
    }

    // ---- events and waits ----------------------------------------------------------------------
    case OpKind::record_event: {
      if (op.slot >= kEvents) return Status::skipped;
      const std::string expr = "e" + std::to_string(op.slot) + " = " + stream_name(op.stream) + ".record_event()";
      if (!call(Expect{}, expr, [&] { o.events[op.slot] = o.stream(op.stream).record_event(); })) return Status::failed;
      model_.record_event(op.stream, op.slot);
      return Status::ran;
    }

    case OpKind::wait_event: {
      if (op.slot >= kEvents) return Status::skipped;
      Expect e;
      if (!model_.event(op.slot).recorded) e.error(Errc::invalid_handle);
      const std::string expr = stream_name(op.stream) + ".enqueue_wait_for(e" + std::to_string(op.slot) + ")";
      const auto ok = call(e, expr, [&] { o.stream(op.stream).enqueue_wait_for(o.events[op.slot]); });
      if (!ok) return Status::failed;
      if (*ok) model_.wait_event(op.stream, op.slot);
      return Status::ran;
    }

    case OpKind::sync_context:
    case OpKind::sync_stream:
    case OpKind::sync_event: {
      if (op.kind == OpKind::sync_event && op.slot >= kEvents) return Status::skipped;
      const std::string expr = op.kind == OpKind::sync_context  ? "ctx.synchronize()"
                               : op.kind == OpKind::sync_stream ? stream_sync_expr(op.stream)
                                                                : "e" + std::to_string(op.slot) + ".synchronize()";
      if (op.kind == OpKind::sync_event && !model_.event(op.slot).recorded) {
        Expect e;
        e.error(Errc::invalid_handle);
        return call(e, expr, [&] { o.events[op.slot].synchronize(); }) ? Status::ran : Status::failed;
      }
      // The failures this wait must (definite) or may (possible) report; it forgets them.
      const ExpectedFailures f = op.kind == OpKind::sync_context  ? model_.take_failures_context()
                                 : op.kind == OpKind::sync_stream ? model_.take_failures_stream(op.stream)
                                                                  : model_.take_failures_event(op.slot);
      Expect e;
      e.may_succeed = f.definite.empty();
      e.codes = f.definite;
      e.codes.insert(e.codes.end(), f.possible.begin(), f.possible.end());
      std::string message;
      const auto ok = call(e, expr, [&] {
        try {
          if (op.kind == OpKind::sync_context)
            o.ctx.synchronize();
          else if (op.kind == OpKind::sync_stream)
            o.stream(op.stream).synchronize();
          else
            o.events[op.slot].synchronize();
        } catch (const devctx::Error& err) {
          message = err.what();
          throw;
        }
      });
      if (!ok) return Status::failed;
      if (!*ok && message.find("fuzz_") == std::string::npos)
        return fail(expr + " reported a kernel's failure without naming the kernel: " + message);
      if (op.kind == OpKind::sync_context) {
        model_.context_done_on_host();
        return check_all("ctx.synchronize()");
      }
      if (op.kind == OpKind::sync_stream)
        model_.stream_done_on_host(op.stream);
      else
        model_.event_done_on_host(op.slot);
      return check_host_visible(expr.c_str());
    }

    case OpKind::query_event: {
      if (op.slot >= kEvents) return Status::skipped;
      Expect e;
      if (!model_.event(op.slot).recorded) e.error(Errc::invalid_handle);
      bool done = false;
      const std::string expr = "(void)e" + std::to_string(op.slot) + ".query()";
      const auto ok = call(e, expr, [&] { done = o.events[op.slot].query(); });
      if (!ok) return Status::failed;
      if (*ok && !done && model_.host_knows_event_done(op.slot))
        return fail("e" + std::to_string(op.slot) + ".query() is false after the host waited for the event");
      return Status::ran;
    }

    case OpKind::elapsed: {
      if (op.slot >= kEvents || op.slot2 >= kEvents) return Status::skipped;
      Expect e;
      if (!model_.event(op.slot).recorded || !model_.event(op.slot2).recorded) e.error(Errc::invalid_handle);
      double ms = 0;
      const std::string expr = "(void)devctx::elapsed_ms(e" + std::to_string(op.slot) + ", e" +
                               std::to_string(op.slot2) + ")";
      const auto ok = call(e, expr, [&] { ms = devctx::elapsed_ms(o.events[op.slot], o.events[op.slot2]); });
      if (!ok) return Status::failed;
      if (*ok) {
        if (!std::isfinite(ms)) return fail(expr + " returned " + std::to_string(ms));
        model_.event_done_on_host(op.slot);
        model_.event_done_on_host(op.slot2);
      }
      return Status::ran;
    }

    case OpKind::new_stream: {
      if (op.stream == 0) return Status::skipped;
      if (op.stream == kSecondContext) {
        // The old second context is dropped with its work in flight.
        if (!call(Expect{}, "ctx2 = devctx::DeviceContext{api}", [&] { o.ctx2 = devctx::DeviceContext(o.ctx.api()); }))
          return Status::failed;
        model_.new_stream(op.stream);
        return Status::ran;
      }
      const std::string expr = stream_name(op.stream) + " = ctx.create_stream()";
      if (!call(Expect{}, expr, [&] { o.streams[std::size_t(op.stream - 1)] = o.ctx.create_stream(); }))
        return Status::failed;
      model_.new_stream(op.stream);
      return Status::ran;
    }

    case OpKind::moved_from_use: {
      if (o.moved_stream) return fail("a moved-from Stream converts to true");
      Expect e;
      e.error(Errc::invalid_handle);
      std::vector<u32> a(4), b(4);
      // Each verb on a moved-from Stream or DeviceContext (e0 may be empty too: invalid_handle either way).
      const std::array<std::pair<const char*, std::function<void()>>, 9> verbs = {{
          {"moved_stream.enqueue_create_buffer<std::uint32_t>(4)",
           [&] { (void)o.moved_stream.enqueue_create_buffer<u32>(4); }},
          {"moved_stream.enqueue_copy(a, b)", [&] { o.moved_stream.enqueue_copy(a, b); }},
          {"moved_stream.synchronize()", [&] { o.moved_stream.synchronize(); }},
          {"moved_stream.record_event()", [&] { (void)o.moved_stream.record_event(); }},
          {"moved_stream.enqueue_wait_for(e0)", [&] { o.moved_stream.enqueue_wait_for(o.events[0]); }},
          {"moved_stream.enqueue_function<fuzz_fail>({.grid_dim = 1, .block_dim = 1}, 0ull)",
           [&] { launch_fail(o.moved_stream, {.grid_dim = 1, .block_dim = 1}, 0); }},
          {"moved_ctx.synchronize()", [&] { o.moved_ctx.synchronize(); }},
          {"(void)moved_ctx.create_stream()", [&] { (void)o.moved_ctx.create_stream(); }},
          {"moved_ctx.enqueue_create_host_buffer<std::uint8_t>(1)",
           [&] { (void)o.moved_ctx.enqueue_create_host_buffer<u8>(1); }},
      }};
      const auto& [expr, f] = verbs[op.value % verbs.size()];
      return call(e, expr, f) ? Status::ran : Status::failed;
    }
  }
  return Status::skipped;
}

// ---- checks ---------------------------------------------------------------------------------

Status Runner::check_slot(int slot, const char* when) {
  const SlotModel& m = model_.slot(slot);
  if (!m.live() || m.size() == 0) return Status::ran;
  std::vector<u32> actual(m.size());
  Objects& o = *objects_;
  std::visit(
      [&](auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, devctx::DeviceBuffer<u32>>) {
          o.ctx.enqueue_copy(actual, x);  // returns once done
        } else if constexpr (std::is_same_v<X, devctx::DeviceBuffer<u8>>) {
          std::vector<u8> bytes(m.size());
          o.ctx.enqueue_copy(bytes, x);
          std::copy(bytes.begin(), bytes.end(), actual.begin());
        } else if constexpr (!std::is_same_v<X, std::monostate>) {
          std::copy(x.begin(), x.end(), actual.begin());
        }
      },
      o.slots[std::size_t(slot)]);
  checked_elements_ += m.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m.known[i] && actual[i] != m.value[i] && bad++ == 0) first = i;
  if (bad == 0) return Status::ran;
  const std::string name = slot_name(slot, m.kind, m.elem);
  return fail("after " + std::string(when) + ": " + name + " (" + to_string(m.kind) + " " + to_string(m.elem) + ", " +
              std::to_string(m.size()) + " elements): " + std::to_string(bad) +
              " element(s) differ from the model; first " + name + "[" + std::to_string(first) +
              "] = " + std::to_string(actual[first]) + ", expected " + std::to_string(m.value[first]));
}

Status Runner::check_all(const char* when) {
  for (int s = 0; s < kSlots; ++s) {
    const SlotModel& m = model_.slot(s);
    // Work of the second context that ctx.synchronize() does not cover may still use it.
    if (!m.live() || !model_.host_racing_queues({{s, {0, m.size()}, false}}).empty()) continue;
    if (check_slot(s, when) == Status::failed) return Status::failed;
  }
  return Status::ran;
}

Status Runner::check_host_visible(const char* when) {
  for (int s = 0; s < kSlots; ++s) {
    const SlotModel& m = model_.slot(s);
    if (!m.live() || m.kind == BufKind::device) continue;
    if (!model_.host_racing_queues({{s, {0, m.size()}, false}}).empty()) continue;
    if (check_slot(s, when) == Status::failed) return Status::failed;
  }
  return Status::ran;
}

}  // namespace devctx_fuzz
