// SPDX-License-Identifier: Apache-2.0
// devctx/comm.hpp - Communicator: collectives (all-reduce, broadcast, reduce, all-gather,
// reduce-scatter) and send/recv between the devices of a group, on DeviceBuffers, stream-ordered
// like every other enqueue verb. docs/scale-out.md explains the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <devctx/context.hpp>
#include <devctx/stream.hpp>

namespace devctx {

/// How a reduction combines the ranks' elements. `avg` is the sum divided by the number of
/// ranks (integer division for integer types).
enum class ReduceOp : unsigned char { sum, prod, min, max, avg };

/// The element types collectives move and reduce.
enum class DataType : unsigned char { int8, uint8, int32, uint32, int64, uint64, float32, float64 };

namespace detail {

class CommImpl;  // one rank of a communicator (src/comm/comm_impl.hpp)

enum class CollectiveKind : unsigned char { all_reduce, broadcast, reduce, all_gather, reduce_scatter, send, recv };

/// One rank's part of one collective call, type-erased; validated by core before a backend sees it.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::all_reduce;
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;  ///< broadcast/reduce: the root rank; send/recv: the peer rank
  MemRef send;   ///< what this rank contributes (unused by recv)
  MemRef recv;   ///< where this rank's result goes (unused by send)
};

template <class T>
constexpr DataType data_type_of() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, std::int8_t>)
    return DataType::int8;
  else if constexpr (std::is_same_v<U, std::uint8_t>)
    return DataType::uint8;
  else if constexpr (std::is_same_v<U, std::int32_t>)
    return DataType::int32;
  else if constexpr (std::is_same_v<U, std::uint32_t>)
    return DataType::uint32;
  else if constexpr (std::is_same_v<U, std::int64_t>)
    return DataType::int64;
  else if constexpr (std::is_same_v<U, std::uint64_t>)
    return DataType::uint64;
  else if constexpr (std::is_same_v<U, float>)
    return DataType::float32;
  else if constexpr (std::is_same_v<U, double>)
    return DataType::float64;
  else
    static_assert(sizeof(U) == 0,
                  "devctx collectives: the element type must be one of int8_t, uint8_t, int32_t, "
                  "uint32_t, int64_t, uint64_t, float, double");
}

/// One communicator per queue, rank i on queues[i] (Communicator::create).
[[nodiscard]] std::vector<std::shared_ptr<CommImpl>> comm_create_group(QueueImpl* const* queues, std::size_t count);
/// One rank per MPI process (Communicator::create_mpi).
[[nodiscard]] std::shared_ptr<CommImpl> comm_create_mpi(QueueImpl& queue);
[[nodiscard]] bool comm_mpi_built() noexcept;
[[nodiscard]] int comm_rank(const CommImpl& comm) noexcept;
[[nodiscard]] int comm_size(const CommImpl& comm) noexcept;
/// Validates `call` (devices, sizes, ranks) and enqueues this rank's part on `queue`.
void comm_enqueue(CommImpl& comm, QueueImpl& queue, const CollectiveCall& call, std::size_t element_bytes);
[[noreturn]] void throw_empty_communicator();

}  // namespace detail

/// One rank of a group of devices that exchange data: every rank makes the same collective calls
/// in the same order, each with its own buffers (DeviceBuffers, or slices or views of them, of
/// the rank's device). Each call is stream-ordered: it enqueues this rank's part on the stream
/// (the context's default stream unless one is given) and returns at once; the part starts after
/// the work enqueued before it on that stream, and the result is ready for work enqueued after
/// it, as for every other verb. Nothing waits for the other ranks on the host: a rank's stream
/// waits for them at the collective.
///
/// Groups (docs/scale-out.md):
/// - `Communicator::create(contexts)`: one communicator per context of one process (CPU devices,
///   DeviceContext::set_cpu_device_count; or GPUs through NCCL when devctx was built with it).
///   One thread may make every rank's calls, one rank after another. On several GPUs a rank's
///   part is launched when the last rank has made the call (NCCL's group rule); its stream
///   keeps its order meanwhile, but synchronizing it before every rank has called waits forever.
/// - `Communicator::create_mpi(ctx)`: one rank per MPI process, ranks and size of MPI_COMM_WORLD
///   (built when CMake finds MPI: mpi_available()); on a GPU, an NCCL communicator whose unique
///   id MPI broadcasts. It lives in a library of its own, so that programs that do not call it
///   need no MPI: link `devctx::mpi` (find_package(devctx COMPONENTS mpi), pkg-config
///   devctx-mpi); without it a program that calls create_mpi fails to link (undefined
///   devctx::detail::comm_create_mpi).
///
/// Misuse throws devctx::Error before anything is enqueued on the calling rank: buffers of
/// another device (wrong_device), sizes that do not fit the collective (size_mismatch), a root or
/// peer out of range (invalid_argument). A call that does not match the other ranks' call at the
/// same position (another collective, type, operation, root or size) throws Error(invalid_argument)
/// on the rank that found it and makes the ranks already waiting fail at their next synchronize;
/// a rank whose partners never arrive fails after DEVCTX_COMM_TIMEOUT_S seconds (default 300)
/// rather than hang. A failed collective reports Error(backend_error) at synchronize. On GPUs
/// (NCCL) a failed NCCL call throws with NCCL's error text, an error NCCL finds later in enqueued
/// work throws Error(backend_error) at the communicator's next call, and there is no timeout;
/// mismatches are found among the GPUs of one process only.
///
/// Move-only handle; the contexts must outlive their communicators.
class Communicator {
 public:
  /// One communicator per context, rank i for contexts[i]. Throws Error(invalid_argument) for no
  /// contexts or one device twice, (not_available) for a mix of CPU devices and GPUs, or GPUs
  /// in a build without NCCL.
  [[nodiscard]] static std::vector<Communicator> create(std::span<DeviceContext> contexts) {
    std::vector<detail::QueueImpl*> queues;
    queues.reserve(contexts.size());
    for (DeviceContext& c : contexts) queues.push_back(&detail::Access::queue(c));
    std::vector<Communicator> result;
    for (auto& impl : detail::comm_create_group(queues.data(), queues.size()))
      result.push_back(Communicator(std::move(impl), queues[result.size()]));
    return result;
  }
  /// This process's rank of MPI_COMM_WORLD on `context`'s device (MPI is initialised if the
  /// program has not done so). Throws Error(not_available) when devctx was built without MPI,
  /// or, for a GPU, without NCCL. Needs the devctx::mpi library (see above).
  [[nodiscard]] static Communicator create_mpi(DeviceContext& context) {
    return Communicator(detail::comm_create_mpi(detail::Access::queue(context)), &detail::Access::queue(context));
  }
  /// Whether devctx was built with MPI (create_mpi works).
  [[nodiscard]] static bool mpi_available() noexcept { return detail::comm_mpi_built(); }

  Communicator() noexcept = default;
  [[nodiscard]] int rank() const { return detail::comm_rank(impl()); }
  [[nodiscard]] int size() const { return detail::comm_size(impl()); }

  /// Every rank's `recv` becomes the element-wise `op` of all ranks' `send` (equal sizes; `recv`
  /// may be `send`: in place).
  ///
  /// Aliasing, for every collective and every engine: `send` and `recv` are disjoint or exactly
  /// in place (the same memory; all_gather: `send` is `recv`'s part at rank() * send.size();
  /// reduce_scatter: `recv` is `send`'s part at rank() * recv.size()). Any other overlap throws
  /// Error(invalid_argument) and enqueues nothing, as does a call on a stream recording a Graph.
  template <class S, class R>
  void all_reduce(const S& send, R&& recv, ReduceOp op) {
    all_reduce(detail::Access::make<StreamRef>(queue_), send, recv, op);
  }
  template <class S, class R>
  void all_reduce(StreamRef stream, const S& send, R&& recv, ReduceOp op) {
    call(stream, detail::CollectiveKind::all_reduce, send, recv, op, 0);
  }
  /// Every rank's `buffer` becomes `root`'s.
  template <class B>
  void broadcast(B&& buffer, int root) {
    broadcast(detail::Access::make<StreamRef>(queue_), buffer, root);
  }
  template <class B>
  void broadcast(StreamRef stream, B&& buffer, int root) {
    call(stream, detail::CollectiveKind::broadcast, buffer, buffer, ReduceOp::sum, root);
  }
  /// `root`'s `recv` becomes the element-wise `op` of all ranks' `send`; other ranks' `recv`
  /// (which must have the size of `send` too) is left alone.
  template <class S, class R>
  void reduce(const S& send, R&& recv, ReduceOp op, int root) {
    reduce(detail::Access::make<StreamRef>(queue_), send, recv, op, root);
  }
  template <class S, class R>
  void reduce(StreamRef stream, const S& send, R&& recv, ReduceOp op, int root) {
    call(stream, detail::CollectiveKind::reduce, send, recv, op, root);
  }
  /// Every rank's `recv` (size() times the size of `send`) becomes all ranks' `send`, in rank order.
  template <class S, class R>
  void all_gather(const S& send, R&& recv) {
    all_gather(detail::Access::make<StreamRef>(queue_), send, recv);
  }
  template <class S, class R>
  void all_gather(StreamRef stream, const S& send, R&& recv) {
    call(stream, detail::CollectiveKind::all_gather, send, recv, ReduceOp::sum, 0);
  }
  /// Rank r's `recv` becomes the element-wise `op` of all ranks' r-th part of `send` (`send` is
  /// size() times the size of `recv`).
  template <class S, class R>
  void reduce_scatter(const S& send, R&& recv, ReduceOp op) {
    reduce_scatter(detail::Access::make<StreamRef>(queue_), send, recv, op);
  }
  template <class S, class R>
  void reduce_scatter(StreamRef stream, const S& send, R&& recv, ReduceOp op) {
    call(stream, detail::CollectiveKind::reduce_scatter, send, recv, op, 0);
  }
  /// Sends `buffer` to rank `peer`, whose matching recv (the same size) receives it. The k-th
  /// send from a to b matches b's k-th recv from a.
  template <class S>
  void send(const S& buffer, int peer) {
    send(detail::Access::make<StreamRef>(queue_), buffer, peer);
  }
  template <class S>
  void send(StreamRef stream, const S& buffer, int peer) {
    call(stream, detail::CollectiveKind::send, buffer, buffer, ReduceOp::sum, peer);
  }
  template <class R>
  void recv(R&& buffer, int peer) {
    recv(detail::Access::make<StreamRef>(queue_), buffer, peer);
  }
  template <class R>
  void recv(StreamRef stream, R&& buffer, int peer) {
    call(stream, detail::CollectiveKind::recv, buffer, buffer, ReduceOp::sum, peer);
  }

 private:
  Communicator(std::shared_ptr<detail::CommImpl> impl, detail::QueueImpl* queue) noexcept
      : impl_(std::move(impl)), queue_(queue) {}

  [[nodiscard]] detail::CommImpl& impl() const {
    if (!impl_) detail::throw_empty_communicator();
    return *impl_;
  }

  template <class S, class R>
  void call(StreamRef stream, detail::CollectiveKind kind, const S& send, R& recv, ReduceOp op, int root) {
    // An empty communicator is named first: its own stream (detail::Access::make<StreamRef>(queue_)) is empty too.
    detail::CommImpl& comm = impl();
    constexpr bool send_ok = detail::is_endpoint_v<S>;
    constexpr bool recv_ok = detail::is_endpoint_v<std::remove_const_t<R>>;
    static_assert(send_ok && recv_ok, "devctx collectives take DeviceBuffers, their slices or DeviceViews");
    if constexpr (send_ok && recv_ok) {
      using ST = detail::endpoint_element_t<S>;
      using RT = detail::endpoint_element_t<std::remove_const_t<R>>;
      static_assert(std::is_same_v<std::remove_const_t<ST>, std::remove_const_t<RT>>,
                    "devctx collectives: the element types of send and recv differ");
      detail::CollectiveCall c;
      c.kind = kind;
      c.type = detail::data_type_of<ST>();
      c.op = op;
      c.root = root;
      c.send = detail::endpoint(send).ref;
      c.recv = detail::endpoint(recv).ref;
      detail::comm_enqueue(comm, detail::Access::queue(stream), c, sizeof(ST));
    }
  }

  std::shared_ptr<detail::CommImpl> impl_;
  detail::QueueImpl* queue_ = nullptr;
};

}  // namespace devctx
