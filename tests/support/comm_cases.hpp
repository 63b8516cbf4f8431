// SPDX-License-Identifier: Apache-2.0
// tests/support/comm_cases.hpp - every collective x operation x element type, checked against a
// host reference: shared by the in-process test (every rank local) and the MPI test (one rank per
// process). Each rank's inputs follow from (seed, rank, case), so every process knows every
// rank's inputs; outputs are poisoned first and every element is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

namespace devctx_test::comm {

using devctx::Communicator;
using devctx::DeviceContext;
using devctx::ReduceOp;

/// Small values: sums and products of up to 4 ranks fit every type exactly, so every engine
/// (whatever order it combines in) must give the reference's bits.
template <class T>
std::vector<T> inputs(std::uint64_t seed, int rank, int which, std::size_t count) {
  std::mt19937_64 rng(seed * 1000003u + std::uint64_t(rank) * 7919u + std::uint64_t(which));
  std::vector<T> v(count);
  const int low = std::is_signed_v<T> ? -3 : 0;
  std::uniform_int_distribution<int> d(low, 3);
  for (auto& x : v) x = T(d(rng));
  return v;
}

template <class T>
T combine(ReduceOp op, const std::vector<T>& values) {
  T acc = values[0];
  for (std::size_t k = 1; k < values.size(); ++k) {
    const T v = values[k];
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: acc = T(acc + v); break;
      case ReduceOp::prod: acc = T(acc * v); break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      case ReduceOp::max: acc = std::max(acc, v); break;
    }
  }
  if (op == ReduceOp::avg) acc = T(acc / T(values.size()));
  return acc;
}

/// The ranks this process holds: their contexts and communicators (index = position in
/// `ranks`, which lists their rank numbers).
struct Local {
  std::vector<int> ranks;
  std::vector<DeviceContext*> contexts;
  std::vector<Communicator*> comms;
  int size = 1;
};

/// Reports a mismatch: the case, the rank, the element, expected and got.
using Report = std::function<void(const std::string&)>;

template <class T>
void check(const Report& report, const std::string& what, int rank, const std::vector<T>& got, const std::vector<T>& want) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      report(what + ": rank " + std::to_string(rank) + " element " + std::to_string(i) + " is " +
             std::to_string(double(got[i])) + ", expected " + std::to_string(double(want[i])));
      return;
    }
}

/// Runs every collective of type T with every operation on `local`, checking each local rank.
template <class T>
void run_type(Local& local, std::uint64_t seed, const char* type, const Report& report) {
  const int n = local.size;
  const std::size_t c = 37;  // not a multiple of anything
  const T poison = T(101);
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};
  const std::size_t L = local.ranks.size();
  auto all_inputs = [&](int which, std::size_t count) {
    std::vector<std::vector<T>> in;
    for (int r = 0; r < n; ++r) in.push_back(inputs<T>(seed, r, which, count));
    return in;
  };
  auto upload = [&](std::size_t i, const std::vector<T>& v) {
    auto b = local.contexts[i]->template enqueue_create_buffer<T>(v.size());
    local.contexts[i]->enqueue_copy(b, std::span<const T>(v));
    return b;
  };
  auto poisoned = [&](std::size_t i, std::size_t count) {
    auto b = local.contexts[i]->template enqueue_create_buffer<T>(count);
    local.contexts[i]->enqueue_memset(b, poison);
    return b;
  };
  auto download = [&](std::size_t i, devctx::DeviceBuffer<T>& b) {
    std::vector<T> v(b.size());
    local.contexts[i]->enqueue_copy(std::span<T>(v), b);
    local.contexts[i]->synchronize();
    return v;
  };
  int which = 0;
  for (const ReduceOp op : ops) {
    const char* names[] = {"sum", "prod", "min", "max", "avg"};
    const std::string on = std::string(type) + " " + names[int(op)];
    // The host reference: element e of every rank's input, combined.
    const auto reduced = [&](const auto& in) {
      std::vector<T> want(c);
      for (std::size_t e = 0; e < c; ++e) {
        std::vector<T> col;
        for (int r = 0; r < n; ++r) col.push_back(in[std::size_t(r)][e]);
        want[e] = combine(op, col);
      }
      return want;
    };
    // all_reduce, out of place and in place
    for (const bool in_place : {false, true}) {
      const auto in = all_inputs(++which, c);
      const std::vector<T> want = reduced(in);
      std::vector<devctx::DeviceBuffer<T>> send, recv;
      for (std::size_t i = 0; i < L; ++i) {
        send.push_back(upload(i, in[std::size_t(local.ranks[i])]));
        if (!in_place) recv.push_back(poisoned(i, c));
      }
      for (std::size_t i = 0; i < L; ++i) local.comms[i]->all_reduce(send[i], in_place ? send[i] : recv[i], op);
      for (std::size_t i = 0; i < L; ++i)
        check(report, "all_reduce " + on + (in_place ? " in place" : ""), local.ranks[i],
              download(i, in_place ? send[i] : recv[i]), want);
    }
    // reduce to the last rank
    {
      const int root = n - 1;
      const auto in = all_inputs(++which, c);
      const std::vector<T> want = reduced(in);
      std::vector<devctx::DeviceBuffer<T>> send, recv;
      for (std::size_t i = 0; i < L; ++i) {
        send.push_back(upload(i, in[std::size_t(local.ranks[i])]));
        recv.push_back(poisoned(i, c));
      }
      for (std::size_t i = 0; i < L; ++i) local.comms[i]->reduce(send[i], recv[i], op, root);
      for (std::size_t i = 0; i < L; ++i)
        check(report, "reduce " + on, local.ranks[i], download(i, recv[i]),
              local.ranks[i] == root ? want : std::vector<T>(c, poison));
    }
    // reduce_scatter
    {
      const auto in = all_inputs(++which, c * std::size_t(n));
      std::vector<devctx::DeviceBuffer<T>> send, recv;
      for (std::size_t i = 0; i < L; ++i) {
        send.push_back(upload(i, in[std::size_t(local.ranks[i])]));
        recv.push_back(poisoned(i, c));
      }
      for (std::size_t i = 0; i < L; ++i) local.comms[i]->reduce_scatter(send[i], recv[i], op);
      for (std::size_t i = 0; i < L; ++i) {
        const auto r = std::size_t(local.ranks[i]);
        std::vector<T> want(c);
        for (std::size_t e = 0; e < c; ++e) {
          std::vector<T> col;
          for (int q = 0; q < n; ++q) col.push_back(in[std::size_t(q)][r * c + e]);
          want[e] = combine(op, col);
        }
        check(report, "reduce_scatter " + on, local.ranks[i], download(i, recv[i]), want);
      }
    }
  }
  // broadcast from each root
  for (int root = 0; root < n; ++root) {
    const auto in = all_inputs(++which, c);
    std::vector<devctx::DeviceBuffer<T>> buf;
    for (std::size_t i = 0; i < L; ++i)
      buf.push_back(local.ranks[i] == root ? upload(i, in[std::size_t(root)]) : poisoned(i, c));
    for (std::size_t i = 0; i < L; ++i) local.comms[i]->broadcast(buf[i], root);
    for (std::size_t i = 0; i < L; ++i)
      check(report, std::string("broadcast ") + type + " root " + std::to_string(root), local.ranks[i],
            download(i, buf[i]), in[std::size_t(root)]);
  }
  // all_gather
  {
    const auto in = all_inputs(++which, c);
    std::vector<T> want;
    for (int r = 0; r < n; ++r) want.insert(want.end(), in[std::size_t(r)].begin(), in[std::size_t(r)].end());
    std::vector<devctx::DeviceBuffer<T>> send, recv;
    for (std::size_t i = 0; i < L; ++i) {
      send.push_back(upload(i, in[std::size_t(local.ranks[i])]));
      recv.push_back(poisoned(i, c * std::size_t(n)));
    }
    for (std::size_t i = 0; i < L; ++i) local.comms[i]->all_gather(send[i], recv[i]);
    for (std::size_t i = 0; i < L; ++i)
      check(report, std::string("all_gather ") + type, local.ranks[i], download(i, recv[i]), want);
  }
  // send/recv around a ring: rank r sends to r+1, receives from r-1 (all sends first: each
  // is stream-ordered and does not block the host)
  if (n > 1) {
    const auto in = all_inputs(++which, c);
    std::vector<devctx::DeviceBuffer<T>> send, recv;
    for (std::size_t i = 0; i < L; ++i) {
      send.push_back(upload(i, in[std::size_t(local.ranks[i])]));
      recv.push_back(poisoned(i, c));
    }
    // Receives on a stream of their own: a send's stream waits until its partner has received,
    // so a ring of sends on the receivers' streams would wait for itself.
    std::vector<devctx::Stream> receiving;
    for (std::size_t i = 0; i < L; ++i) receiving.push_back(local.contexts[i]->create_stream());
    for (std::size_t i = 0; i < L; ++i) {
      receiving[i].enqueue_wait_for(local.contexts[i]->record_event());  // after the poisoning
      local.comms[i]->send(send[i], (local.ranks[i] + 1) % n);
    }
    for (std::size_t i = 0; i < L; ++i) local.comms[i]->recv(receiving[i], recv[i], (local.ranks[i] + n - 1) % n);
    for (std::size_t i = 0; i < L; ++i) receiving[i].synchronize();
    for (std::size_t i = 0; i < L; ++i)
      check(report, std::string("send/recv ") + type, local.ranks[i], download(i, recv[i]),
            in[std::size_t((local.ranks[i] + n - 1) % n)]);
  }
}

/// The one aliasing rule of every engine (src/comm/communicator.cpp): send and recv disjoint or
/// exactly in place. all_gather with send at rank * c in recv and reduce_scatter with recv at
/// rank * c in send, against the host reference; then a partial overlap, refused on every rank
/// with Error(invalid_argument) before anything is enqueued, after which a matched call works.
inline void run_aliasing(Local& local, std::uint64_t seed, const Report& report) {
  using T = std::int32_t;
  const int n = local.size;
  const std::size_t c = 29, L = local.ranks.size();
  const T poison = T(-101);
  auto download = [&](std::size_t i, devctx::DeviceBuffer<T>& b) {
    std::vector<T> v(b.size());
    local.contexts[i]->enqueue_copy(std::span<T>(v), b);
    local.contexts[i]->synchronize();
    return v;
  };
  auto poisoned = [&](std::size_t i, std::size_t count) {
    auto b = local.contexts[i]->template enqueue_create_buffer<T>(count);
    local.contexts[i]->enqueue_memset(b, poison);
    return b;
  };
  // all_gather in place: each rank's input already sits at its part of recv.
  {
    std::vector<std::vector<T>> in;
    for (int r = 0; r < n; ++r) in.push_back(inputs<T>(seed, r, 900, c));
    std::vector<T> want;
    for (int r = 0; r < n; ++r) want.insert(want.end(), in[std::size_t(r)].begin(), in[std::size_t(r)].end());
    std::vector<devctx::DeviceBuffer<T>> buf;
    for (std::size_t i = 0; i < L; ++i) {
      buf.push_back(poisoned(i, c * std::size_t(n)));
      const auto r = std::size_t(local.ranks[i]);
      local.contexts[i]->enqueue_copy(buf[i].slice(r * c, c), std::span<const T>(in[r]));
    }
    for (std::size_t i = 0; i < L; ++i)
      local.comms[i]->all_gather(buf[i].slice(std::size_t(local.ranks[i]) * c, c), buf[i]);
    for (std::size_t i = 0; i < L; ++i) check(report, "all_gather in place", local.ranks[i], download(i, buf[i]), want);
  }
  // reduce_scatter in place: recv is this rank's part of send.
  {
    std::vector<std::vector<T>> in;
    for (int r = 0; r < n; ++r) in.push_back(inputs<T>(seed, r, 901, c * std::size_t(n)));
    std::vector<devctx::DeviceBuffer<T>> buf;
    for (std::size_t i = 0; i < L; ++i) {
      const auto& mine = in[std::size_t(local.ranks[i])];
      buf.push_back(local.contexts[i]->template enqueue_create_buffer<T>(mine.size()));
      local.contexts[i]->enqueue_copy(buf[i], std::span<const T>(mine));
    }
    for (std::size_t i = 0; i < L; ++i)
      local.comms[i]->reduce_scatter(buf[i], buf[i].slice(std::size_t(local.ranks[i]) * c, c), ReduceOp::sum);
    for (std::size_t i = 0; i < L; ++i) {
      const auto r = std::size_t(local.ranks[i]);
      std::vector<T> want(c);
      for (std::size_t e = 0; e < c; ++e) {
        T sum = 0;
        for (int q = 0; q < n; ++q) sum = T(sum + in[std::size_t(q)][r * c + e]);
        want[e] = sum;
      }
      const auto got = download(i, buf[i]);
      check(report, "reduce_scatter in place", local.ranks[i],
            std::vector<T>(got.begin() + std::ptrdiff_t(r * c), got.begin() + std::ptrdiff_t(r * c + c)), want);
    }
  }
  // A partial overlap: refused on every rank, nothing enqueued.
  {
    std::vector<devctx::DeviceBuffer<T>> buf;
    for (std::size_t i = 0; i < L; ++i) buf.push_back(poisoned(i, c + 1));
    for (std::size_t i = 0; i < L; ++i) {
      try {
        local.comms[i]->all_reduce(buf[i].slice(0, c), buf[i].slice(1, c), ReduceOp::sum);
        report("all_reduce with send and recv overlapping by all but one element: rank " +
               std::to_string(local.ranks[i]) + " accepted it");
      } catch (const devctx::Error& e) {
        if (e.code() != devctx::Errc::invalid_argument || std::string(e.what()).find("in place") == std::string::npos)
          report(std::string("a partial overlap was refused with the wrong error: ") + e.what());
      }
    }
    for (std::size_t i = 0; i < L; ++i) local.comms[i]->all_reduce(buf[i], buf[i], ReduceOp::max);
    for (std::size_t i = 0; i < L; ++i)
      check(report, "all_reduce in place after a refused call", local.ranks[i], download(i, buf[i]),
            std::vector<T>(c + 1, poison));
  }
}

inline void run_all(Local& local, std::uint64_t seed, const Report& report) {
  run_aliasing(local, seed, report);
  run_type<std::int8_t>(local, seed, "int8", report);
  run_type<std::uint8_t>(local, seed, "uint8", report);
  run_type<std::int32_t>(local, seed, "int32", report);
  run_type<std::uint32_t>(local, seed, "uint32", report);
  run_type<std::int64_t>(local, seed, "int64", report);
  run_type<std::uint64_t>(local, seed, "uint64", report);
  run_type<float>(local, seed, "float32", report);
  run_type<double>(local, seed, "float64", report);
}

}  // namespace devctx_test::comm
