// SPDX-License-Identifier: Apache-2.0
// devctx/detail/runtime/entry.hpp - what the translation unit generated for a runtime-compiled
// kernel (src/runtime/wrapper.cpp) adds after the user's source: per requested kernel, the CPU
// entry table (the same runners a compiled-in launch uses, and the signature) exported from the
// shared object, or under nvcc the __global__ entry taking the wire and the signature as a
// __device__ constant. Included only by that generated code.
#pragma once

#if !defined(DEVCTX_RUNTIME_ENTRY_OK)
#error "<devctx/detail/runtime/entry.hpp> is private to devctx: include <devctx/devctx.hpp> (this one is for the code devctx generates around runtime-compiled kernels)"
#endif

#define DEVCTX_DETAIL_HEADERS_OK 1

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/runtime/signature.hpp>
#include <devctx/kernel.hpp>

#if !defined(__CUDACC__)
#include <devctx/detail/host/launch_kernel.hpp>
#endif

namespace devctx::detail::rt {

#if !defined(__CUDACC__)
/// The table a kernel's shared object exports (extern "C" devctx_rt_entry). Plain C layout; its
/// version is kAbiVersion, which is part of every cache key.
struct CpuEntry {
  unsigned abi;
  const char* signature;  ///< the signature text (null-terminated, static)
  const char* name;       ///< the kernel's name as devctx reports it (null-terminated, static)
  std::size_t name_size;
  std::size_t pack_size;  ///< the ArgPack the runners read
  std::size_t pack_align;
  /// Writes the ArgPack made from the wire bytes at `wire` to `out` (pack_size bytes, aligned).
  void (*pack)(void* out, const unsigned char* wire);
  bool block_level;
  CpuRunners runners;  ///< launch_kernel.hpp's table of this kernel and parameter list
};

template <std::size_t I, class P>
inline PackLeaf<I, P> leaf_from_wire(const unsigned char* w) {
  if constexpr (ParamTraits<P>::wire == ParamWire::pointer)
    return {from_wire<P>(w), reach_from_wire(w)};
  else
    return {from_wire<P>(w)};
}

template <auto K, bool BlockLevel, class... P>
struct CpuEntryFor {
  template <std::size_t... I>
  static void pack_impl(void* out, const unsigned char* wire, std::index_sequence<I...>) {
    constexpr WireOffsets<sizeof...(P)> w = wire_offsets<P...>();
    ::new (out) ArgPack<P...>{leaf_from_wire<I, P>(wire + w.offset[I])...};
  }
  static void pack(void* out, const unsigned char* wire) { pack_impl(out, wire, std::index_sequence_for<P...>{}); }

  static constexpr CpuEntry make() {
    CpuEntry e{};
    e.abi = kAbiVersion;
    e.signature = SignatureOf<BlockLevel, P...>::text.chars;
    e.name = KernelName<K>::text.chars;
    e.name_size = KernelName<K>::text.size;
    e.pack_size = sizeof(ArgPack<P...>);
    e.pack_align = alignof(ArgPack<P...>);
    e.pack = &pack;
    e.block_level = BlockLevel;
    e.runners = make_cpu_runners<K, BlockLevel, P...>();
    return e;
  }
  static constexpr CpuEntry entry = make();
};

template <auto K>
struct CpuEntryOf {
  template <bool B, class... P>
  using For = CpuEntryFor<K, B, P...>;
  static constexpr const CpuEntry* get() { return &FunctionParams<decltype(K)>::template apply<For>::entry; }
};

#else  // nvcc: the kernel's cubin

template <auto K, bool BlockLevel, class... P>
struct CudaEntryFor {
  static constexpr WireOffsets<sizeof...(P)> layout = wire_offsets<P...>();
  using Wire = WireBytes<layout.size, layout.align>;
  /// Offsets as constants of their own: device code may not read a host constexpr array.
  template <std::size_t I>
  static constexpr std::size_t offset = layout.offset[I];
  template <std::size_t... I>
  __device__ static void run(const unsigned char* wire, std::index_sequence<I...>) {
    if constexpr (BlockLevel)
      K(::devctx::Block{}, from_wire<P>(wire + offset<I>)...);
    else
      K(from_wire<P>(wire + offset<I>)...);
  }
  __device__ static void run(const Wire& wire) { run(wire.bytes(), std::index_sequence_for<P...>{}); }
  using Signature = SignatureOf<BlockLevel, P...>;
};

template <auto K>
struct CudaEntryOf {
  template <bool B, class... P>
  using For = CudaEntryFor<K, B, P...>;
  using Entry = typename FunctionParams<decltype(K)>::template apply<For>;
  using Wire = typename Entry::Wire;
  using Text = typename Entry::Signature::Text;
};

#endif

}  // namespace devctx::detail::rt
