// SPDX-License-Identifier: Apache-2.0
// src/comm/communicator.cpp - the checked entry points behind Communicator: which engine a group
// gets, and the validation of every collective call (devices, sizes, ranks, the aliasing of send
// and recv) before an engine sees it. Each refusal throws before anything is enqueued.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <devctx/comm.hpp>
#include <devctx/detail/base/checked_size.hpp>

#include "comm/comm_impl.hpp"
#include "comm/engines.hpp"
#include "core/allocation.hpp"
#include "core/backend_descriptor.hpp"
#include "core/environment.hpp"
#include "core/errors.hpp"

namespace devctx::detail {

const char* to_string(CollectiveKind kind) noexcept {
  switch (kind) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::send: return "send";
    case CollectiveKind::recv: return "recv";
  }
  return "collective";
}

const char* to_string(DataType type) noexcept {
  switch (type) {
    case DataType::int8: return "int8";
    case DataType::uint8: return "uint8";
    case DataType::int32: return "int32";
    case DataType::uint32: return "uint32";
    case DataType::int64: return "int64";
    case DataType::uint64: return "uint64";
    case DataType::float32: return "float32";
    case DataType::float64: return "float64";
  }
  return "unknown type";
}

const char* to_string(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
    case ReduceOp::avg: return "avg";
  }
  return "unknown operation";
}

std::size_t element_bytes_of(DataType type) noexcept {
  switch (type) {
    case DataType::int8:
    case DataType::uint8: return 1;
    case DataType::int32:
    case DataType::uint32:
    case DataType::float32: return 4;
    case DataType::int64:
    case DataType::uint64:
    case DataType::float64: return 8;
  }
  return 1;
}

std::vector<std::shared_ptr<CommImpl>> comm_create_group(QueueImpl* const* queues, std::size_t count) {
  if (count == 0) fail(Errc::invalid_argument, "Communicator::create: no contexts; give one per rank");
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (&queues[i]->device() == &queues[j]->device())
        fail(Errc::invalid_argument, "Communicator::create: contexts ", j, " and ", i, " are both on ",
             queues[i]->device().label(), "; each rank needs a device of its own");
  const Api api = queues[0]->device().info().api;
  for (std::size_t i = 1; i < count; ++i)
    if (queues[i]->device().info().api != api)
      fail(Errc::not_available, "Communicator::create: context ", i, " is on ", queues[i]->device().label(),
           " but context 0 on ", queues[0]->device().label(),
           "; the ranks of one communicator are all CPU "
           "devices or all GPUs");
  if (const auto create = descriptor_of(api).create_comm_group) return create(queues, count);
  fail(Errc::not_available, "Communicator::create on ", queues[0]->device().label(), ": the ", to_string(api),
       " backend has no collectives");
}

double comm_timeout_seconds() {
  return double(env_size("DEVCTX_COMM_TIMEOUT_S", 300, 1, 86400, SizeUnit::count,
                         "seconds a collective waits for the other ranks"));
}

// comm_create_mpi is the devctx_mpi library's (src/comm/mpi_comm.cpp or mpi_absent.cpp).
bool comm_mpi_built() noexcept { return DEVCTX_MPI_BUILT != 0; }

int comm_rank(const CommImpl& comm) noexcept { return comm.rank(); }
int comm_size(const CommImpl& comm) noexcept { return comm.size(); }

void throw_empty_communicator() {
  throw_invalid_handle("a default-constructed or moved-from Communicator: make one with Communicator::create");
}

namespace {

void check_side(const CommImpl& comm, const QueueImpl& queue, const CollectiveCall& call, const MemRef& ref,
                const char* side) {
  const char* name = to_string(call.kind);
  if (ref.kind != MemKind::device || ref.allocation == nullptr)
    fail(Errc::invalid_argument, "Communicator::", name, " on ", queue.device().label(), ": the ", side, " is a ",
         ref.what, "; collectives move device memory: copy it to a DeviceBuffer first");
  if (&ref.allocation->device() != &comm.device())
    fail(Errc::wrong_device, "Communicator::", name, " (rank ", comm.rank(), " of ", comm.size(), ", on ",
         comm.device().label(), "): the ", side, ' ', ref.what, " belongs to ", ref.allocation->device().label(),
         "; each rank passes buffers of its own device");
}

[[noreturn]] void size_error(const CommImpl& comm, const CollectiveCall& call, const std::string& rule) {
  fail(Errc::size_mismatch, "Communicator::", to_string(call.kind), " (rank ", comm.rank(), " of ", comm.size(), ", on ",
       comm.device().label(), "): send has ", call.send.count, " elements and recv ", call.recv.count, "; ", rule);
}

/// The one aliasing rule of collectives, on every engine: `send` and `recv` are disjoint, or
/// exactly in place - the same memory (all_reduce, reduce), `send` at rank() * send.size() in
/// `recv` (all_gather), `recv` at rank() * recv.size() in `send` (reduce_scatter). These are the
/// forms NCCL and MPI define; any other overlap has no meaning an engine could agree on, so it is
/// refused here, before any engine sees the call (broadcast, send and recv use one buffer).
void check_aliasing(const CommImpl& comm, const CollectiveCall& c, std::size_t element_bytes) {
  if (c.kind != CollectiveKind::all_reduce && c.kind != CollectiveKind::reduce &&
      c.kind != CollectiveKind::all_gather && c.kind != CollectiveKind::reduce_scatter)
    return;
  // Both sides are buffers of this device (checked): their byte counts fit.
  const auto s = reinterpret_cast<std::uintptr_t>(c.send.data), r = reinterpret_cast<std::uintptr_t>(c.recv.data);
  const std::size_t sb = c.send.count * element_bytes, rb = c.recv.count * element_bytes;
  if (sb == 0 || rb == 0 || s >= r + rb || r >= s + sb) return;
  const auto rank = std::uintptr_t(comm.rank());
  const bool in_place = c.kind == CollectiveKind::all_gather       ? s == r + rank * sb
                        : c.kind == CollectiveKind::reduce_scatter ? r == s + rank * rb
                                                                   : s == r;
  if (in_place) return;
  const char* form = c.kind == CollectiveKind::all_gather       ? "send is recv's part at rank() * send.size()"
                     : c.kind == CollectiveKind::reduce_scatter ? "recv is send's part at rank() * recv.size()"
                                                                : "send and recv are the same memory";
  fail(Errc::invalid_argument, "Communicator::", to_string(c.kind), " (rank ", comm.rank(), " of ", comm.size(),
       ", on ", comm.device().label(),
       "): send and recv overlap without being in place; they must be disjoint or exactly in "
       "place (",
       form, "), on every engine");
}

}  // namespace

void comm_enqueue(CommImpl& comm, QueueImpl& queue, const CollectiveCall& call, std::size_t element_bytes) {
  const char* name = to_string(call.kind);
  if (&queue.device() != &comm.device())
    fail(Errc::wrong_device, "Communicator::", name, ": the stream belongs to ", queue.device().label(), " but rank ",
         comm.rank(), " of the communicator is on ", comm.device().label(), "; use a stream of the rank's device");
  if (queue.recorder() != nullptr)
    fail(Errc::invalid_argument, "Communicator::", name, " on a stream recording a devctx::Graph (",
         queue.device().label(), "): collectives are not recorded; make the call outside the graph");
  if (unsigned(call.op) > unsigned(ReduceOp::avg))
    fail(Errc::invalid_argument, "Communicator::", name, ": ReduceOp value ", int(call.op), " names no operation");
  const bool sends = call.kind != CollectiveKind::recv, receives = call.kind != CollectiveKind::send;
  if (sends) check_side(comm, queue, call, call.send, call.kind == CollectiveKind::send ? "buffer" : "send buffer");
  if (receives) check_side(comm, queue, call, call.recv, call.kind == CollectiveKind::recv ? "buffer" : "recv buffer");
  const bool rooted = call.kind == CollectiveKind::broadcast || call.kind == CollectiveKind::reduce;
  const bool p2p = call.kind == CollectiveKind::send || call.kind == CollectiveKind::recv;
  if ((rooted || p2p) && (call.root < 0 || call.root >= comm.size()))
    fail(Errc::invalid_argument, "Communicator::", name, " (rank ", comm.rank(), "): ", p2p ? "peer " : "root ",
         call.root, " is not a rank of the communicator (ranks 0..", comm.size() - 1, ')');
  if (p2p && call.root == comm.rank())
    fail(Errc::invalid_argument, "Communicator::", name, " (rank ", comm.rank(), "): the peer is this rank; a rank ",
         "cannot ", name, " to itself (use enqueue_copy)");
  const auto n = std::size_t(comm.size());
  switch (call.kind) {
    case CollectiveKind::all_reduce:
    case CollectiveKind::reduce:
      if (call.send.count != call.recv.count) size_error(comm, call, "they must be equal");
      break;
    case CollectiveKind::all_gather:
      if (checked_mul(call.send.count, n) != call.recv.count)
        size_error(comm, call, concat("recv must hold size() = ", n, " times send"));
      break;
    case CollectiveKind::reduce_scatter:
      if (checked_mul(call.recv.count, n) != call.send.count)
        size_error(comm, call, concat("send must hold size() = ", n, " times recv"));
      break;
    default: break;
  }
  check_aliasing(comm, call, element_bytes);
  // Only the buffers of this device can order their frees after this rank's part.
  if (sends) call.send.allocation->note_use(queue);
  if (receives) call.recv.allocation->note_use(queue);
  comm.enqueue(queue, call, element_bytes);
}

}  // namespace devctx::detail
