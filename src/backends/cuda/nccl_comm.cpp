// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/nccl_comm.cpp - the NCCL engine: communicators of GPUs, stream-ordered on
// each rank's CUDA stream. Two kinds of group (docs/scale-out.md):
//   - one process, several GPUs (Communicator::create, ncclCommInitAll): one thread may make
//     every rank's calls, so a rank's call waits in the group's pending lists until every rank's
//     part of it is there, and then all parts go to NCCL in one ncclGroupStart/End (NCCL's rule
//     for several GPUs driven by one thread: a part launched alone may block the thread). A
//     RankGate (nccl_gate.hpp) keeps each part in its stream's order meanwhile;
//   - one GPU per process (Communicator::create_mpi, ncclCommInitRank with the unique id that
//     mpi_comm.cpp broadcast), or a group of one GPU: each call goes to NCCL at once.
// Built when CMake finds NCCL (cmake/devctxNccl.cmake); nccl_absent.cpp otherwise.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/nccl_gate.hpp"
#include "comm/comm_impl.hpp"
#include "comm/engines.hpp"
#include "core/environment.hpp"
#include "core/errors.hpp"

namespace devctx::detail {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclId), "NcclId holds one ncclUniqueId");

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::int8: return ncclInt8;
    case DataType::uint8: return ncclUint8;
    case DataType::int32: return ncclInt32;
    case DataType::uint32: return ncclUint32;
    case DataType::int64: return ncclInt64;
    case DataType::uint64: return ncclUint64;
    case DataType::float32: return ncclFloat32;
    case DataType::float64: return ncclFloat64;
  }
  return ncclInt8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::avg: return ncclAvg;
  }
  return ncclSum;
}

/// "unhandled cuda error (run with NCCL_DEBUG=INFO for details) (ncclResult 1); NCCL's last
/// error: ..." - ncclGetErrorString and ncclGetLastError (which takes a null communicator too).
std::string nccl_text(ncclResult_t result, ncclComm_t comm) {
  std::string text = concat(ncclGetErrorString(result), " (ncclResult_t ", int(result), ')');
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += concat("; NCCL's last error: ", last);
  return text;
}

void check_nccl(ncclResult_t result, ncclComm_t comm, const std::string& what) {
  if (result == ncclSuccess) [[likely]]
    return;
  const Errc code = result == ncclInvalidArgument || result == ncclInvalidUsage ? Errc::invalid_argument
                                                                                : Errc::backend_error;
  fail(code, what, " failed: ", nccl_text(result, comm));
}

cuda::CudaDevice& gpu_of(QueueImpl& queue) { return static_cast<cuda::CudaDevice&>(queue.device()); }

/// One rank's part of one call, waiting for the other ranks' (groups of several local GPUs).
struct Part {
  CollectiveCall call;
  cudaStream_t stream = nullptr;
  std::uint64_t number = 0;       ///< this rank's call count, for messages
  cuda::RankGate::Ticket ticket;  ///< its place in its stream (deferred groups)
};

bool is_p2p(const CollectiveCall& c) { return c.kind == CollectiveKind::send || c.kind == CollectiveKind::recv; }

/// Enqueues one part on its stream (inside or outside a group).
ncclResult_t launch(const CollectiveCall& c, ncclComm_t comm, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(c.type);
  const ncclRedOp_t op = nccl_op(c.op);
  switch (c.kind) {
    case CollectiveKind::all_reduce:
      return ncclAllReduce(c.send.data, c.recv.data, c.send.count, type, op, comm, stream);
    case CollectiveKind::broadcast:
      return ncclBroadcast(c.recv.data, c.recv.data, c.recv.count, type, c.root, comm, stream);
    case CollectiveKind::reduce:
      return ncclReduce(c.send.data, c.recv.data, c.send.count, type, op, c.root, comm, stream);
    case CollectiveKind::all_gather: return ncclAllGather(c.send.data, c.recv.data, c.send.count, type, comm, stream);
    case CollectiveKind::reduce_scatter:
      return ncclReduceScatter(c.send.data, c.recv.data, c.recv.count, type, op, comm, stream);
    case CollectiveKind::send: return ncclSend(c.send.data, c.send.count, type, c.root, comm, stream);
    case CollectiveKind::recv: return ncclRecv(c.recv.data, c.recv.count, type, c.root, comm, stream);
  }
  return ncclInvalidArgument;
}

/// Whether two ranks' parts of one collective agree (kind, type, operation, root, sizes).
bool same_collective(const CollectiveCall& a, const CollectiveCall& b) {
  if (a.kind != b.kind || a.type != b.type) return false;
  const bool reduces = a.kind == CollectiveKind::all_reduce || a.kind == CollectiveKind::reduce ||
                       a.kind == CollectiveKind::reduce_scatter;
  if (reduces && a.op != b.op) return false;
  if ((a.kind == CollectiveKind::broadcast || a.kind == CollectiveKind::reduce) && a.root != b.root) return false;
  return a.kind == CollectiveKind::reduce_scatter ? a.recv.count == b.recv.count : a.send.count == b.send.count;
}

std::string describe(const CollectiveCall& c) {
  const std::size_t count = c.kind == CollectiveKind::reduce_scatter || c.kind == CollectiveKind::recv ? c.recv.count
                                                                                                       : c.send.count;
  std::string text = concat(to_string(c.kind), " of ", count, ' ', to_string(c.type));
  if (c.kind != CollectiveKind::broadcast && c.kind != CollectiveKind::all_gather && !is_p2p(c))
    text += concat(" (", to_string(c.op), ')');
  if (c.kind == CollectiveKind::broadcast || c.kind == CollectiveKind::reduce) text += concat(" root ", c.root);
  if (is_p2p(c)) text += concat(c.kind == CollectiveKind::send ? " to " : " from ", c.root);
  return text;
}

/// The ranks of one process's communicators and, for a group of several local GPUs, the parts
/// that wait for the other ranks. One lock: NCCL takes one thread at a time per communicator.
class Group {
 public:
  /// `deferred`: parts wait for the other local ranks' (several GPUs of one process).
  /// `always_gate`: even a part launched within its own call goes through its rank's gate (to
  /// test the gate with one GPU).
  Group(std::vector<ncclComm_t> comms, std::vector<cuda::CudaDevice*> devices, bool deferred, bool always_gate)
      : comms_(std::move(comms)), devices_(std::move(devices)), pending_(comms_.size()), always_gate_(always_gate) {
    try {
      if (deferred)
        for (cuda::CudaDevice* d : devices_) gates_.push_back(std::make_unique<cuda::RankGate>(*d));
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~Group() {
    // Parts never launched (their partners never called): let their streams go on.
    for (std::size_t r = 0; r < pending_.size(); ++r)
      for (const Part& p : pending_[r])
        if (p.ticket.ready != nullptr) gates_[r]->release(p.ticket);
    destroy();
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  /// Rank `local`'s part of its call number `number`, on `stream`.
  void enqueue(std::size_t local, int rank, int size, const Part& part) {
    const std::lock_guard lock(mutex_);
    // The call's name, made only for a message or the deferred path (a string per call costs
    // a good part of a microsecond).
    const auto name = [&] {
      return concat("Communicator::", to_string(part.call.kind), " #", part.number, " (rank ", rank, " of ", size,
                    ", NCCL)");
    };
    if (!broken_.empty())
      fail(Errc::invalid_argument, name(), ": an earlier call broke this communicator: ", broken_,
           "; make a new communicator");
    check_async(local, name);
    if (gates_.empty()) {
      const ncclResult_t result = launch(part.call, comms_[local], part.stream);
      if (result != ncclSuccess) [[unlikely]]
        check_nccl(result, comms_[local], name());
      return;
    }
    const std::string what = name();
    devices_[local]->make_current();
    // A part launched within its own call (this call completed the round) goes straight onto
    // its stream: nothing can have been enqueued behind it. Only a part left waiting gets a
    // ticket: the work before it marked, its stream held until the side stream has run it.
    // Not when parts of this rank already wait: they run on the side stream, and NCCL joins the
    // streams of one group, which would then wait for the hold on this stream (a cycle).
    std::vector<Part>& mine = pending_[local];
    Part entry = part;
    if (always_gate_ || !mine.empty()) entry.ticket = gates_[local]->mark(part.stream);
    mine.push_back(entry);
    const auto still_waiting = [&] { return !mine.empty() && mine.back().number == part.number; };
    try {
      flush(what);
      if (still_waiting() && mine.back().ticket.ready == nullptr) mine.back().ticket = gates_[local]->mark(part.stream);
    } catch (...) {
      // The refused call is not kept; the ranks already waiting never run theirs (their
      // streams are let go).
      if (still_waiting()) {
        gates_[local]->drop(mine.back().ticket);
        mine.pop_back();
      } else if (entry.ticket.ready != nullptr) {
        gates_[local]->hold(part.stream, entry.ticket);  // let go already: passes at once
      }
      throw;
    }
    if (still_waiting())
      gates_[local]->hold(part.stream, mine.back().ticket);
    else if (entry.ticket.ready != nullptr)
      gates_[local]->hold(part.stream, entry.ticket);
  }

  /// ncclCommGetAsyncError of rank `local`: an error NCCL found in work already enqueued.
  template <class What>
  void check_async(std::size_t local, const What& what) {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comms_[local], &async);
    if (queried != ncclSuccess) [[unlikely]]
      check_nccl(queried, comms_[local], what() + ": ncclCommGetAsyncError");
    if (async != ncclSuccess) [[unlikely]]
      fail(Errc::backend_error, what(),
           ": NCCL failed in earlier work of this communicator: ", nccl_text(async, comms_[local]),
           "; the communicator cannot be used further");
  }

 private:
  void destroy() noexcept {
    for (std::size_t i = 0; i < comms_.size(); ++i) {
      cuda::ignore(cudaSetDevice(devices_[i]->id()));
      // A lost context cannot finish NCCL's work: abort instead of waiting for it.
      (void)(devices_[i]->lost() ? ncclCommAbort(comms_[i]) : ncclCommDestroy(comms_[i]));
    }
  }
  /// Launches every round of parts that is complete: all ranks' next collective, or the
  /// leading sends and receives of every rank when each send's receive is among them.
  void flush(const std::string& what) {
    for (;;) {
      const std::size_t n = pending_.size();
      bool all_collective = true;
      for (const auto& p : pending_)
        if (p.empty() || is_p2p(p.front().call)) all_collective = false;
      if (all_collective) {
        for (std::size_t r = 1; r < n; ++r)
          if (!same_collective(pending_[0].front().call, pending_[r].front().call))
            mismatch(what, concat("rank 0 called ", describe(pending_[0].front().call), " and rank ", r, ' ',
                                  describe(pending_[r].front().call)));
        std::vector<std::pair<std::size_t, Part>> round;
        for (std::size_t r = 0; r < n; ++r) {
          round.emplace_back(r, pending_[r].front());
          pending_[r].erase(pending_[r].begin());
        }
        run(round, what);
        continue;
      }
      // The leading sends and receives of each rank, and whether they pair up among themselves.
      std::vector<std::vector<std::vector<const CollectiveCall*>>> sends(
          n, std::vector<std::vector<const CollectiveCall*>>(n));
      auto recvs = sends;
      std::vector<std::size_t> lead(n, 0);
      bool any = false;
      for (std::size_t r = 0; r < n; ++r)
        for (const Part& p : pending_[r]) {
          if (!is_p2p(p.call)) break;
          ++lead[r];
          any = true;
          (p.call.kind == CollectiveKind::send ? sends : recvs)[r][std::size_t(p.call.root)].push_back(&p.call);
        }
      if (!any) return;
      for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = 0; b < n; ++b)
          if (sends[a][b].size() != recvs[b][a].size()) return;  // a partner has yet to call
      for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = 0; b < n; ++b)
          for (std::size_t k = 0; k < sends[a][b].size(); ++k) {
            const CollectiveCall &s = *sends[a][b][k], &r = *recvs[b][a][k];
            if (s.type != r.type || s.send.count != r.recv.count)
              mismatch(what, concat("rank ", a, "'s ", describe(s), " meets rank ", b, "'s ", describe(r)));
          }
      std::vector<std::pair<std::size_t, Part>> round;
      for (std::size_t r = 0; r < n; ++r) {
        for (std::size_t k = 0; k < lead[r]; ++k) round.emplace_back(r, pending_[r][k]);
        pending_[r].erase(pending_[r].begin(), pending_[r].begin() + std::ptrdiff_t(lead[r]));
      }
      run(round, what);
    }
  }

  [[noreturn]] void mismatch(const std::string& what, const std::string& how) {
    broken_ = concat("the ranks' calls do not match: ", how);
    for (std::size_t r = 0; r < pending_.size(); ++r) {
      for (const Part& p : pending_[r])
        if (p.ticket.ready != nullptr) gates_[r]->release(p.ticket);
      pending_[r].clear();
    }
    fail(Errc::invalid_argument, what, ": ", broken_, "; every rank must make the same collective calls in the same ",
         "order (the parts already waiting are dropped; this communicator refuses further calls)");
  }

  /// One ncclGroupStart/End around the round's parts, each on its rank's stream.
  void run(const std::vector<std::pair<std::size_t, Part>>& round, const std::string& what) {
    check_nccl(ncclGroupStart(), nullptr, what + ": ncclGroupStart");
    ncclResult_t first = ncclSuccess;
    ncclComm_t failed = nullptr;
    std::string ordering;
    for (const auto& [r, part] : round) {
      cudaStream_t stream = part.stream;
      try {
        if (part.ticket.ready != nullptr) stream = gates_[r]->start(part.ticket);
      } catch (const std::exception& e) {
        if (ordering.empty()) ordering = e.what();
        continue;
      }
      const ncclResult_t result = launch(part.call, comms_[r], stream);
      if (result != ncclSuccess && first == ncclSuccess) {
        first = result;
        failed = comms_[r];
      }
    }
    const ncclResult_t end = ncclGroupEnd();
    for (const auto& [r, part] : round)
      if (part.ticket.ready != nullptr) gates_[r]->release(part.ticket);
    if (!ordering.empty()) fail(Errc::backend_error, what, ": ", ordering);
    if (first != ncclSuccess) check_nccl(first, failed, what);
    check_nccl(end, comms_[round.front().first], what + ": ncclGroupEnd");
  }

  std::mutex mutex_;
  std::vector<ncclComm_t> comms_;
  std::vector<cuda::CudaDevice*> devices_;
  std::vector<std::vector<Part>> pending_;              ///< per local rank, in call order
  std::vector<std::unique_ptr<cuda::RankGate>> gates_;  ///< per local rank when deferred, else none
  bool always_gate_ = false;
  std::string broken_;  ///< why a mismatch ended the group
};

class NcclRank final : public CommImpl {
 public:
  NcclRank(DeviceImpl& device, int rank, int size, std::shared_ptr<Group> group, std::size_t local)
      : CommImpl(device, rank, size), group_(std::move(group)), local_(local) {}

  void enqueue(QueueImpl& queue, const CollectiveCall& call, std::size_t /*element_bytes*/) override {
    cuda::CudaDevice& gpu = gpu_of(queue);
    if (gpu.lost()) [[unlikely]]
      gpu.check_alive(concat("Communicator::", to_string(call.kind)));
    Part part;
    part.call = call;
    part.stream = static_cast<cudaStream_t>(queue.native_handle());
    part.number = calls_;
    group_->enqueue(local_, rank(), size(), part);
    ++calls_;
  }

 private:
  std::shared_ptr<Group> group_;
  std::size_t local_;
  std::uint64_t calls_ = 0;
};

/// Connects every pair of ranks once (a byte each way, in one group) so that a later send
/// does not wait on the host for its partner's receive to set the connection up.
void connect_pairs(ncclComm_t comm, cuda::CudaDevice& gpu, int rank, int size) {
  if (size < 2) return;
  const std::string what = concat("Communicator::create_mpi (rank ", rank, " of ", size, "): connecting the ranks");
  void* bytes = nullptr;
  cuda::check(DEVCTX_CUDA(cudaMalloc(&bytes, 2 * std::size_t(size))), gpu, what);
  cudaStream_t stream = nullptr;
  const cuda::CudaCall made = DEVCTX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (!made.ok()) {
    cuda::ignore(cudaFree(bytes));
    cuda::check(made, gpu, what);
  }
  ncclResult_t result = ncclGroupStart();
  for (int peer = 0; peer < size && result == ncclSuccess; ++peer) {
    if (peer == rank) continue;
    char* base = static_cast<char*>(bytes);
    result = ncclSend(base + peer, 1, ncclInt8, peer, comm, stream);
    if (result == ncclSuccess) result = ncclRecv(base + size + peer, 1, ncclInt8, peer, comm, stream);
  }
  const ncclResult_t end = ncclGroupEnd();
  const cuda::CudaCall synced = DEVCTX_CUDA(cudaStreamSynchronize(stream));
  cuda::ignore(cudaStreamDestroy(stream));
  cuda::ignore(cudaFree(bytes));
  check_nccl(result, comm, what);
  check_nccl(end, comm, what);
  cuda::check(synced, gpu, what);
}

}  // namespace

std::vector<std::shared_ptr<CommImpl>> create_nccl_group(QueueImpl* const* queues, std::size_t count) {
  std::vector<int> ids;
  std::vector<cuda::CudaDevice*> devices;
  for (std::size_t i = 0; i < count; ++i) {
    devices.push_back(&gpu_of(*queues[i]));
    devices.back()->check_alive("Communicator::create");
    ids.push_back(devices.back()->id());
  }
  std::vector<ncclComm_t> comms(count, nullptr);
  int current = 0;
  cuda::ignore(cudaGetDevice(&current));
  const ncclResult_t result = ncclCommInitAll(comms.data(), int(count), ids.data());
  cuda::ignore(cudaSetDevice(current));
  check_nccl(result, nullptr, concat("Communicator::create over ", count, " GPU(s): ncclCommInitAll"));
  // DEVCTX_NCCL_DEFER=1 sends a group of one GPU the way of several (to test it on one GPU).
  const bool forced = env_flag("DEVCTX_NCCL_DEFER", false);
  const bool deferred = count > 1 || forced;
  // (When it throws, the group's constructor has destroyed the communicators.)
  auto group = std::make_shared<Group>(std::move(comms), devices, deferred, forced);
  std::vector<std::shared_ptr<CommImpl>> ranks;
  for (std::size_t i = 0; i < count; ++i)
    ranks.push_back(std::make_shared<NcclRank>(*devices[i], int(i), int(count), group, i));
  return ranks;
}

NcclId nccl_unique_id() {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId");
  NcclId bytes;
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

std::shared_ptr<CommImpl> create_nccl_rank(QueueImpl& queue, int rank, int size, const NcclId& id) {
  cuda::CudaDevice& gpu = gpu_of(queue);
  gpu.check_alive("Communicator::create_mpi");
  gpu.make_current();
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), sizeof unique);
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, size, unique, rank), nullptr,
             concat("Communicator::create_mpi (rank ", rank, " of ", size, " on ", gpu.label(), "): ncclCommInitRank"));
  auto group = std::make_shared<Group>(std::vector<ncclComm_t>{comm}, std::vector<cuda::CudaDevice*>{&gpu}, false, false);
  connect_pairs(comm, gpu, rank, size);
  return std::make_shared<NcclRank>(gpu, rank, size, std::move(group), 0);
}

bool nccl_built() noexcept { return true; }
const char* nccl_absent_reason() noexcept { return ""; }

}  // namespace devctx::detail
