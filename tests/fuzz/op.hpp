// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/op.hpp - the fuzzers' op language: one operation of a random program over devctx.
//
// An Op is an intention ("copy slot 3's elements [4, 14) into slot 1 on stream 2"), written
// against numbered slots (buffers), streams and events rather than objects, so that any op is
// meaningful in any state: the runner resolves it against what the slots hold when it runs,
// expecting an error where the API must refuse it and skipping it where the program would
// have undefined behaviour (a cross-stream race). That is what lets a sequence be replayed from
// text, shortened by the minimizer, or decoded from arbitrary bytes by the libFuzzer harness.
//
// Text form (one op per line, `devctx_fuzz_diff --replay FILE` reads it back):
//   create slot=3 kind=device elem=u32 count=100 s=1
//   copy s=2 dst=1[4+10] src=3        a view is a slot, whole, or slot[offset+count]
//   kernel s=0 k=scale_add grid=2,1,1 block=64,1,1 shared=0 in=3 out=1[0+16] value=7
//   tensor s=0 layout=row2 ext=4611686018427387904,4,0 strides=0,0 grid=1,1,1 block=64,1,1 out=3 value=7
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace devctx_fuzz {

inline constexpr int kSlots = 10;  ///< buffer slots
/// Streams: 0 is the context's own stream, 1-3 its create_stream() streams, and 4 a second
/// DeviceContext of the same device (whose synchronize() the first one's does not cover).
inline constexpr int kStreams = 5;
inline constexpr int kSecondContext = 4;
inline constexpr int kEvents = 4;  ///< event slots

enum class OpKind : std::uint8_t {
  create,          ///< slot = s.enqueue_create_*(count) (or a std::vector); the old buffer is dropped
  drop,            ///< the slot's buffer is destroyed (work using it may still be queued)
  move,            ///< slot2 = std::move(slot); slot is left moved-from
  host_fill,       ///< the host writes fresh values into a HostBuffer or std::vector (value = seed)
  copy,            ///< s.enqueue_copy(dst, src)
  memset,          ///< s.enqueue_memset(dst, value)
  kernel,          ///< s.enqueue_function<k>(grid, block, shared, ...)
  record_event,    ///< event[slot] = s.record_event()
  wait_event,      ///< s.enqueue_wait_for(event[slot])
  sync_context,    ///< ctx.synchronize(), then every buffer the host may read is checked
  sync_stream,     ///< s.synchronize()
  sync_event,      ///< event[slot].synchronize()
  query_event,     ///< event[slot].query()
  elapsed,         ///< devctx::elapsed_ms(event[slot], event[slot2])
  new_stream,      ///< stream s (1-3) = ctx.create_stream(), or (4) a new second context; the old one is dropped
  moved_from_use,  ///< a verb (value) called on a moved-from Stream or DeviceContext
  tensor,          ///< a layout of extents `ext` (near 2^64 at times) over `dst` (devctx::tensor); written if accepted
};

inline constexpr std::size_t kOpKinds = std::size_t(OpKind::tensor) + 1;

enum class BufKind : std::uint8_t { device, host, vec };
enum class Elem : std::uint8_t { u32, u8 };
enum class KernelId : std::uint8_t {
  scale_add,      ///< out[i] = value * in[i] + out[i], grid-stride
  block_reduce,   ///< out[b] = sum of block b's grid-stride elements; shared memory + barrier()
  block_reverse,  ///< block-level form: each block's chunk of `in` reversed into `out`
  warp_sum,       ///< out[w] = sum of warp w's 32 elements (warp_sum); block volume a multiple of 32
  fail,           ///< throws in global thread (value & 0xffffffff), CPU only; bit 32 of value: behind barrier()
};

/// The layouts a tensor op makes (tests/fuzz/tensors.cpp), every extent dynamic unless named.
enum class LayoutId : std::uint8_t {
  row1,      ///< RowMajor<dyn>
  row2,      ///< RowMajor<dyn, dyn>
  row3,      ///< RowMajor<dyn, dyn, dyn>
  col2,      ///< ColMajor<dyn, dyn>
  col3,      ///< ColMajor<dyn, dyn, dyn>
  row_x4,    ///< RowMajor<dyn, 4> (ext[1] is 4)
  col_3x,    ///< ColMajor<3, dyn> (ext[0] is 3)
  strided2,  ///< Strided<dyn, dyn>::from_parts(ext, strides)
};
inline constexpr std::size_t kLayoutIds = std::size_t(LayoutId::strided2) + 1;
[[nodiscard]] std::size_t layout_rank(LayoutId l);

/// How a tensor op writes an accepted tensor's elements (Op::value bits 32-33).
enum class TensorAccess : std::uint8_t {
  direct,     ///< t(i, j, k)
  tile,       ///< t.tile<1, 1, 1>(i, j, k)(0, 0, 0)
  transpose,  ///< t.transpose()(j, i) (rank 2; else direct)
};

/// A slot, whole (`whole`) or a slice [offset, offset + count).
struct View {
  std::uint8_t slot = 0;
  bool whole = true;
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};

struct Shape {
  unsigned x = 1, y = 1, z = 1;
  [[nodiscard]] std::uint64_t volume() const { return std::uint64_t(x) * y * z; }
};

struct Op {
  OpKind kind = OpKind::sync_context;
  std::uint8_t stream = 0;
  std::uint8_t slot = 0;   ///< create/drop/move/host_fill: buffer slot; event ops: event slot
  std::uint8_t slot2 = 0;  ///< move: destination slot; elapsed: second event
  BufKind buf_kind = BufKind::device;
  Elem elem = Elem::u32;
  std::uint64_t count = 0;  ///< create
  View dst;                 ///< copy, memset; kernel: out
  View src;                 ///< copy; kernel: in
  std::uint64_t value = 0;  ///< memset value, host_fill seed, kernel scalar, moved_from_use verb
  KernelId kernel = KernelId::scale_add;
  Shape grid, block;
  std::uint64_t shared_bytes = 0;
  LayoutId layout = LayoutId::row1;  ///< tensor
  std::uint64_t ext[3] = {};         ///< tensor: the extents (those past the layout's rank unused)
  std::uint64_t strides[2] = {};     ///< tensor, strided2: the strides given to from_parts
};

[[nodiscard]] std::string to_text(const Op& op);
/// Parses one line of to_text's form; nullopt (with `error` set) when it is not one.
[[nodiscard]] std::optional<Op> parse_op(std::string_view line, std::string& error);
/// Parses a whole file's text: blank lines and lines starting with '#' are ignored.
[[nodiscard]] std::optional<std::vector<Op>> parse_ops(std::string_view text, std::string& error);

[[nodiscard]] const char* to_string(OpKind k);
[[nodiscard]] const char* to_string(BufKind k);
[[nodiscard]] const char* to_string(Elem e);
[[nodiscard]] const char* to_string(KernelId k);
[[nodiscard]] const char* to_string(LayoutId l);
[[nodiscard]] std::size_t elem_bytes(Elem e);

}  // namespace devctx_fuzz
