// SPDX-License-Identifier: Apache-2.0
// src/comm/mpi_comm.cpp - the MPI engine: one rank per process, MPI_COMM_WORLD, on a CPU device
// (on a GPU, the NCCL engine's rank, whose unique id this file broadcasts with MPI). Built into
// the devctx_mpi library (devctx::mpi, cmake/devctxMpi.cmake), so that only programs that call
// Communicator::create_mpi link MPI.
// Each call is a host task in the rank's stream order that runs MPI's own nonblocking
// collective on the buffers (CPU device memory is host memory) and polls it against
// DEVCTX_COMM_TIMEOUT_S, so that a rank whose partners never call fails instead of hanging.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm_impl.hpp"
#include "comm/engines.hpp"
#include "comm/host_reduce.hpp"
#include "core/errors.hpp"

namespace devctx::detail {
namespace {

/// MPI calls of all ranks' tasks in this process go through one lock, whatever thread level the
/// MPI library gave (a task polls with it released in between).
std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}

void check_mpi(int status, const char* what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  fail(Errc::backend_error, what, " failed: ", std::string(text, std::size_t(length)));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

/// Initialises MPI (MPI_THREAD_MULTIPLE) unless the program did; devctx then finalises it at exit.
void ensure_initialized() {
  const std::lock_guard lock(mpi_mutex());
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
    if (provided < MPI_THREAD_SERIALIZED)
      fail(Errc::not_available, "Communicator::create_mpi: the MPI library supports only thread level ", provided,
           "; devctx runs MPI calls on its worker threads and needs MPI_THREAD_SERIALIZED or more");
    return;
  }
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED)
    fail(Errc::not_available, "Communicator::create_mpi: MPI was initialised with thread level ", provided,
         "; devctx runs MPI calls on its worker threads: initialise MPI with MPI_Init_thread(..., "
         "MPI_THREAD_MULTIPLE, ...) or let devctx initialise it");
}

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::int8: return MPI_INT8_T;
    case DataType::uint8: return MPI_UINT8_T;
    case DataType::int32: return MPI_INT32_T;
    case DataType::uint32: return MPI_UINT32_T;
    case DataType::int64: return MPI_INT64_T;
    case DataType::uint64: return MPI_UINT64_T;
    case DataType::float32: return MPI_FLOAT;
    case DataType::float64: return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return MPI_SUM;  // avg divides afterwards
    case ReduceOp::prod: return MPI_PROD;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
  }
  return MPI_SUM;
}

/// Divides `count` elements at `data` by `n` (the avg of a sum).
void divide(DataType type, void* data, std::size_t count, int n) {
  auto run = [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    for (std::size_t i = 0; i < count; ++i) p[i] = T(p[i] / T(n));
  };
  switch (type) {
    case DataType::int8: return run(static_cast<std::int8_t*>(data));
    case DataType::uint8: return run(static_cast<std::uint8_t*>(data));
    case DataType::int32: return run(static_cast<std::int32_t*>(data));
    case DataType::uint32: return run(static_cast<std::uint32_t*>(data));
    case DataType::int64: return run(static_cast<std::int64_t*>(data));
    case DataType::uint64: return run(static_cast<std::uint64_t*>(data));
    case DataType::float32: return run(static_cast<float*>(data));
    case DataType::float64: return run(static_cast<double*>(data));
  }
}

class MpiRank final : public CommImpl {
 public:
  MpiRank(DeviceImpl& device, int rank, int size) : CommImpl(device, rank, size) {}

  void enqueue(QueueImpl& queue, const CollectiveCall& call, std::size_t element_bytes) override {
    const double timeout = comm_timeout_seconds();
    const std::uint64_t number = calls_++;
    const std::string what = concat("Communicator::", to_string(call.kind), " #", number, " (MPI rank ", rank(), " of ",
                                    size(), ')');
    const int n = size(), me = rank();
    queue.enqueue_host_task(
        [call, element_bytes, timeout, what, n, me] { run(call, element_bytes, timeout, what, n, me); });
  }

 private:
  static void run(const CollectiveCall& c, std::size_t eb, double timeout, const std::string& what, int n, int me) {
    const MPI_Datatype type = mpi_type(c.type);
    const MPI_Op op = mpi_op(c.op);
    const auto count = int(c.kind == CollectiveKind::reduce_scatter ? c.recv.count : c.send.count);
    if (c.send.count > std::size_t(INT32_MAX) || c.recv.count > std::size_t(INT32_MAX))
      fail(Errc::invalid_argument, what, ": more than 2^31 - 1 elements; MPI counts are int");
    const bool in_place = c.send.data == c.recv.data;
    // core allows only disjoint or exactly in-place buffers (communicator.cpp). MPI_IN_PLACE
    // covers send == recv; the other in-place forms (all_gather's send at rank x send.size() in
    // recv, reduce_scatter's recv at rank x recv.size() in send, on ranks other than 0) are
    // copied first, as MPI forbids aliased buffers.
    std::vector<std::byte> copy;
    const void* send = c.send.data;
    const std::size_t send_bytes = c.send.count * eb;
    const auto s = reinterpret_cast<std::uintptr_t>(c.send.data), r = reinterpret_cast<std::uintptr_t>(c.recv.data);
    if (!in_place && send_bytes > 0 && s < r + c.recv.count * eb && r < s + send_bytes) {
      copy.assign(static_cast<const std::byte*>(c.send.data), static_cast<const std::byte*>(c.send.data) + send_bytes);
      send = copy.data();
    }
    const void* send_arg = in_place ? MPI_IN_PLACE : send;
    MPI_Request request = MPI_REQUEST_NULL;
    {
      const std::lock_guard lock(mpi_mutex());
      int status = MPI_SUCCESS;
      switch (c.kind) {
        case CollectiveKind::all_reduce:
          status = MPI_Iallreduce(send_arg, c.recv.data, count, type, op, MPI_COMM_WORLD, &request);
          break;
        case CollectiveKind::reduce:
          status = MPI_Ireduce(me == c.root ? send_arg : send, c.recv.data, count, type, op, c.root, MPI_COMM_WORLD,
                               &request);
          break;
        case CollectiveKind::broadcast:
          status = MPI_Ibcast(c.recv.data, count, type, c.root, MPI_COMM_WORLD, &request);
          break;
        case CollectiveKind::all_gather:
          status = MPI_Iallgather(send, count, type, c.recv.data, count, type, MPI_COMM_WORLD, &request);
          break;
        case CollectiveKind::reduce_scatter:
          status = MPI_Ireduce_scatter_block(send_arg, c.recv.data, count, type, op, MPI_COMM_WORLD, &request);
          break;
        case CollectiveKind::send:
          status = MPI_Isend(c.send.data, count, type, c.root, 0, MPI_COMM_WORLD, &request);
          break;
        case CollectiveKind::recv:
          status = MPI_Irecv(c.recv.data, int(c.recv.count), type, c.root, 0, MPI_COMM_WORLD, &request);
          break;
      }
      check_mpi(status, what.c_str());
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    for (auto pause = std::chrono::microseconds(1);; pause = std::min(pause * 2, std::chrono::microseconds(1000))) {
      int done = 0;
      MPI_Status st;
      {
        const std::lock_guard lock(mpi_mutex());
        check_mpi(MPI_Test(&request, &done, &st), what.c_str());
      }
      if (done) break;
      if (std::chrono::steady_clock::now() >= deadline)
        fail(Errc::backend_error, what, ": timed out after ", timeout, " s (DEVCTX_COMM_TIMEOUT_S) waiting for the other ",
             "ranks; every rank must make the same collective calls in the same order. MPI cannot cancel a ",
             "collective: end the program");
      std::this_thread::sleep_for(pause);
    }
    if (c.op == ReduceOp::avg && (c.kind == CollectiveKind::all_reduce || c.kind == CollectiveKind::reduce_scatter ||
                                  (c.kind == CollectiveKind::reduce && me == c.root)))
      divide(c.type, c.recv.data, c.recv.count, n);
  }

  std::uint64_t calls_ = 0;
};

}  // namespace

std::shared_ptr<CommImpl> comm_create_mpi(QueueImpl& queue) {
  const bool gpu = backend(queue.device().info().api).has_device_memory;  // GPUs talk through NCCL
  // Every rank runs the same build: all of them refuse here, none waits in MPI_Bcast for rank 0.
  if (gpu && !nccl_built())
    fail(Errc::not_available, "Communicator::create_mpi on ", queue.device().label(), ": ", nccl_absent_reason());
  ensure_initialized();
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!gpu) return std::make_shared<MpiRank>(queue.device(), rank, size);
  // One GPU per rank, bootstrapped through MPI: rank 0's NCCL unique id goes to every rank.
  // Rank 0 sends an empty id when it could not make one, so that no rank waits in vain.
  NcclId id{};
  std::string failure;
  if (rank == 0) {
    try {
      id = nccl_unique_id();
    } catch (const std::exception& e) {
      failure = e.what();
      id.fill(0);
    }
  }
  {
    const std::lock_guard lock(mpi_mutex());
    check_mpi(MPI_Bcast(id.data(), int(id.size()), MPI_CHAR, 0, MPI_COMM_WORLD), "Communicator::create_mpi: MPI_Bcast");
  }
  if (rank == 0 && !failure.empty()) fail(Errc::backend_error, "Communicator::create_mpi: ", failure);
  if (std::all_of(id.begin(), id.end(), [](char c) { return c == 0; }))
    fail(Errc::backend_error, "Communicator::create_mpi (rank ", rank, "): rank 0 could not make NCCL's unique id (",
         "its message says why)");
  return create_nccl_rank(queue, rank, size, id);
}

}  // namespace devctx::detail
