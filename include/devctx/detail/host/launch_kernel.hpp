// SPDX-License-Identifier: Apache-2.0
// devctx/detail/host/launch_kernel.hpp - the per-kernel trampolines and the launch template behind
// enqueue_function. One CPU runner and (under nvcc) one __global__ entry is instantiated for
// each kernel and parameter list.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/host/launch_kernel.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/stream.hpp>) instead"
#endif

#include <atomic>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include <devctx/block.hpp>
#include <devctx/detail/base/cpu_state.hpp>
#include <devctx/detail/base/seam.hpp>
#include <devctx/detail/device/fission.hpp>
#include <devctx/detail/host/kernel_args.hpp>
#include <devctx/kernel.hpp>

namespace devctx::detail {

/// How many characters of `text` from `at` are an anonymous namespace and the "::" after it
/// ("{anonymous}::" from GCC, "(anonymous namespace)::" from Clang, "_GLOBAL__N__<hash>_<file>::"
/// from nvcc's front end), or 0.
constexpr std::size_t anonymous_scope_length(std::string_view text, std::size_t at) {
  const std::string_view rest = text.substr(at);
  std::size_t scope = 0;
  if (rest.starts_with("{anonymous}::"))
    scope = 11;
  else if (rest.starts_with("(anonymous namespace)::"))
    scope = 21;
  else if (rest.starts_with("_GLOBAL__N_"))
    scope = rest.find("::");
  return scope == 0 || scope == std::string_view::npos ? 0 : scope + 2;
}

/// The kernel's name as the compiler describes this function's template argument.
template <auto K>
constexpr std::string_view compiler_kernel_name() {
  std::string_view text = __PRETTY_FUNCTION__;
  std::size_t begin = text.find("K = ");
  if (begin == std::string_view::npos) return "kernel";
  begin += 4;
  std::size_t end = text.find_first_of(";]", begin);
  if (end == std::string_view::npos) end = text.size();
  text = text.substr(begin, end - begin);
  while (!text.empty() && (text.front() == '&' || text.front() == ' ' ||
                           (text.front() == '(' && !text.starts_with("(anonymous namespace)"))))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ')' || text.back() == ' ')) text.remove_suffix(1);
  return text;
}

/// The kernel's name as written, without anonymous namespaces, which each compiler spells its
/// own way ("vector_add", "ns::scale<float>"; "tool::step" for tool::{anonymous}::step): the
/// same on every backend, in traces, errors and profiler ranges.
template <auto K>
struct KernelName {
  static constexpr std::string_view described = compiler_kernel_name<K>();
  struct Text {
    char chars[described.size() + 1] = {};
    std::size_t size = 0;
  };
  static constexpr Text text = [] {
    Text out;
    for (std::size_t i = 0; i < described.size();) {
      const bool starts_scope = i == 0 || described[i - 1] == ':' || described[i - 1] == '<' ||
                                described[i - 1] == ' ' || described[i - 1] == ',' || described[i - 1] == '&';
      if (const std::size_t skip = starts_scope ? anonymous_scope_length(described, i) : 0; skip != 0) {
        i += skip;
        continue;
      }
      out.chars[out.size++] = described[i++];
    }
    return out;
  }();
  static constexpr std::string_view value{text.chars, text.size};
};

template <auto K>
constexpr std::string_view kernel_name() {
  return KernelName<K>::value;
}

// ---- CPU backend runners (host code; nvcc's device pass parses but never emits them) -------------------------------------------------------------------
template <auto K, class Pack, std::size_t... I>
inline __attribute__((always_inline)) void call_kernel(const Pack& pack, std::index_sequence<I...>) {
  K(pack_get<I>(pack)...);
}
template <auto K, class Pack, std::size_t... I>
inline __attribute__((always_inline)) void call_block_kernel(const Pack& pack, std::index_sequence<I...>) {
  K(Block{}, pack_get<I>(pack)...);
}

/// What a runner promises the compiler about checking mode: an unchecked runner only ever runs
/// unchecked launches, and a checked one checked launches (the executor picks). With the kernel
/// inlined into the runner (flatten), every accessor's test of in_checked_launch() folds to this
/// value, so the code of an unchecked launch has no checks at all and compiles as if checking mode
/// did not exist (docs/checking.md, "Cost").
template <bool Checked>
inline __attribute__((always_inline)) void promise_checking() {
  if (cpu::in_checked_launch() != Checked) __builtin_unreachable();
}

/// Runs thread (0, 0, 0) of the current block of an unchecked launch with the block offered to
/// K's translated twin (include/devctx/detail/device/fission.hpp). Returns whether the twin
/// took it (and so ran the whole block). A kernel without a twin ignores the offer, which is
/// withdrawn once the thread returns or the block goes cooperative.
template <auto K, class... P>
[[gnu::noinline]] __attribute__((flatten)) bool cpu_run_offered_thread(const void* packed) {
  promise_checking<false>();
  const ArgPack<P...>& pack = *static_cast<const ArgPack<P...>*>(packed);
  using cpu::fission_slot;  // thread_locals by name, never bound to a reference: see cpu_state.hpp
  fission_slot.offer = reinterpret_cast<cpu::FissionId>(K);
  cpu::tls.thread_idx = {0, 0, 0};
  call_kernel<K>(pack, std::index_sequence_for<P...>{});
  fission_slot.offer = nullptr;
  return fission_slot.taken;
}

/// Runs every thread of the current block as a plain loop. If a thread reaches a barrier or a
/// warp operation, the executor lowers `x_end` (so this loop stops after that thread) and runs
/// the rest of the block cooperatively.
template <auto K, bool Checked, class... P>
__attribute__((flatten)) void cpu_run_block(const void* packed) {
  promise_checking<Checked>();
  const ArgPack<P...> pack = *static_cast<const ArgPack<P...>*>(packed);
  using cpu::tls;  // by name, never bound to a reference: see cpu_state.hpp
  const Dim3 dim = tls.block_dim;
  unsigned x_begin = 0;
  if constexpr (!Checked) {
    if (cpu::fission_slot.enabled) {
      // Fission (docs/cpu-backend.md): thread (0, 0, 0) runs with the block offered to the
      // kernel's translated twin. When taken, the twin ran the whole block.
      if (cpu_run_offered_thread<K, P...>(&pack)) return;
      if (tls.mode != cpu::Mode::plain) return;
      x_begin = 1;
    }
  }
  for (unsigned z = 0; z < dim.z; ++z) {
    for (unsigned y = 0; y < dim.y; ++y) {
      tls.thread_idx.z = z;
      tls.thread_idx.y = y;
      // Storing x again after the call lets the compiler keep it in a register and vectorise.
      for (unsigned x = x_begin; x < tls.x_end; ++x) {
        tls.thread_idx.x = x;
        // Checked: the index is stored before any of the thread's accesses, since the SIGSEGV
        // handler reads it for a guard-page fault's report (docs/checking.md).
        if constexpr (Checked) std::atomic_signal_fence(std::memory_order_seq_cst);
        call_kernel<K>(pack, std::index_sequence_for<P...>{});
        if constexpr (Checked) cpu::checked_thread_end();
        tls.thread_idx.x = x;
      }
      x_begin = 0;
      if (tls.mode != cpu::Mode::plain) return;
    }
  }
}

/// Runs the current thread only (cooperative execution: one fiber per thread).
template <auto K, bool Checked, class... P>
__attribute__((flatten)) void cpu_run_thread(const void* packed) {
  promise_checking<Checked>();
  call_kernel<K>(*static_cast<const ArgPack<P...>*>(packed), std::index_sequence_for<P...>{});
  if constexpr (Checked) cpu::checked_thread_end();
}

/// Runs a block-level kernel once for the current block.
template <auto K, bool Checked, class... P>
__attribute__((flatten)) void cpu_run_block_level(const void* packed) {
  promise_checking<Checked>();
  call_block_kernel<K>(*static_cast<const ArgPack<P...>*>(packed), std::index_sequence_for<P...>{});
}

/// A type as written ("devctx::span<const float>"), read from the compiler's description of this
/// function's template argument, as kernel_name does.
template <class T>
constexpr std::string_view type_name() {
  std::string_view text = __PRETTY_FUNCTION__;
  std::size_t begin = text.find("T = ");
  if (begin == std::string_view::npos) return "a devctx::span";
  begin += 4;
  std::size_t end = text.find_first_of(";]", begin);
  if (end == std::string_view::npos) end = text.size();
  return text.substr(begin, end - begin);
}

/// KernelLaunch::cpu_spans for one parameter list: its span, tensor and pointer parameters.
template <class... P, std::size_t... I>
std::size_t cpu_spans(const void* packed, LaunchSpan* out, std::index_sequence<I...>) {
  const auto& pack = *static_cast<const ArgPack<P...>*>(packed);
  std::size_t n = 0;
  [[maybe_unused]] auto one = [&](const auto& leaf, unsigned argument) {
    const auto& param = leaf.value;
    using Param = std::remove_cvref_t<decltype(param)>;
    if constexpr (is_object_pointer_v<Param>) {
      // A T* parameter: the range of the buffer, slice, tensor or span it was made from.
      using T = std::remove_pointer_t<Param>;
      static constexpr std::string_view type = type_name<Param>();
      if (leaf.reach > 0) out[n++] = {param, leaf.reach, sizeof(T), argument, type, std::is_const_v<T>};
    } else if constexpr (is_devctx_span<Param>::value) {
      using T = typename Param::element_type;
      static constexpr std::string_view type = type_name<Param>();
      out[n++] = {param.data(), param.size(), sizeof(T), argument, type, std::is_const_v<T>};
    } else if constexpr (is_layout_tensor<Param>::value) {
      // A tensor reaches span_size() elements from its first: checking mode sees that range.
      using T = typename Param::element_type;
      static constexpr std::string_view type = type_name<Param>();
      out[n++] = {param.data(), param.span_size(), sizeof(T), argument, type, std::is_const_v<T>};
    }
  };
  (one(static_cast<const PackLeaf<I, P>&>(pack), unsigned(I + 1)), ...);
  return n;
}
template <class... P>
std::size_t cpu_spans_of(const void* packed, LaunchSpan* out) {
  return cpu_spans<P...>(packed, out, std::index_sequence_for<P...>{});
}
}  // namespace devctx::detail

#if defined(__CUDACC__)
// ---- CUDA backend entries --------------------------------------------------------------------
// In a top-level namespace of their own: nvcc's generated host stubs name the kernel `K`
// unqualified from the entry's namespace, so inside devctx a user's global kernel called
// `block_sum` or `barrier` would resolve to devctx's function of that name instead.
namespace devctx_kernel_entry {
template <auto K, class... P>
__global__ void cuda_entry(P... params) {
  K(params...);
}
template <auto K, class... P>
__global__ void cuda_block_entry(P... params) {
  K(::devctx::Block{}, params...);
}
}  // namespace devctx_kernel_entry
#endif

namespace devctx::detail {

/// The CPU entry points of kernel K with parameters P... (KernelLaunch::cpu): one table each.
template <auto K, bool BlockLevel, class... P>
constexpr CpuRunners make_cpu_runners() {
  if constexpr (BlockLevel)
    return {&cpu_run_block_level<K, false, P...>, nullptr, &cpu_run_block_level<K, true, P...>, nullptr,
            &cpu_spans_of<P...>};
  else
    return {&cpu_run_block<K, false, P...>, &cpu_run_thread<K, false, P...>, &cpu_run_block<K, true, P...>,
            &cpu_run_thread<K, true, P...>, &cpu_spans_of<P...>};
}
template <auto K, bool BlockLevel, class... P>
inline constexpr CpuRunners cpu_runners_of = make_cpu_runners<K, BlockLevel, P...>();

template <auto K, class... P>
struct Launcher {
  /// Builds the launch and hands it to `sink` (queue_launch, or a graph's update), which must
  /// not keep it: it refers to this call's locals.
  template <class Sink, class... A, std::size_t... I>
  static void launch(Sink&& sink, const LaunchConfig& config, std::index_sequence<I...>, A&&... args) {
    using Sig = KernelSignature<decltype(K)>;
    ArgPack<P...> pack{make_leaf<I, P>(std::forward<A>(args))...};
    Allocation* buffers[sizeof...(A) + 1] = {buffer_of(args)..., nullptr};

    KernelLaunch l;
    static constexpr std::string_view name = kernel_name<K>();
    l.name = name;
    l.config = config;
    l.block_level = Sig::block_level;
    l.args = &pack;
    l.args_size = sizeof(pack);
    l.args_align = alignof(ArgPack<P...>);
    l.cpu = &cpu_runners_of<K, Sig::block_level, P...>;
    l.param_count = sizeof...(P);
#if defined(__CUDACC__)
    void* cuda_args[sizeof...(P) + 1] = {static_cast<void*>(&pack_get<I>(pack))..., nullptr};
    if constexpr (Sig::block_level)
      l.cuda_function = reinterpret_cast<const void*>(&::devctx_kernel_entry::cuda_block_entry<K, P...>);
    else
      l.cuda_function = reinterpret_cast<const void*>(&::devctx_kernel_entry::cuda_entry<K, P...>);
    l.cuda_args = cuda_args;
#endif
    l.buffers = buffers;
    l.buffer_count = sizeof...(A);
    const void* spans[sizeof...(A) + 1] = {span_data_of(args)..., nullptr};
    std::size_t span_bytes[sizeof...(A) + 1] = {span_bytes_of(args)..., 0};
    if constexpr (any_span_v<A...>) {
      l.spans = spans;
      l.span_bytes = span_bytes;
    }
    sink(static_cast<const KernelLaunch&>(l));
  }
};

template <class... P>
struct ParamList {
  template <auto K>
  using launcher = Launcher<K, P...>;
  static constexpr std::size_t size = sizeof...(P);
};

/// Maps `args` to kernel K's parameters and hands the launch to `sink(const KernelLaunch&)`.
template <auto K, class Sink, class... A>
void build_launch(Sink&& sink, const LaunchConfig& config, A&&... args) {
  using Params = typename KernelSignature<decltype(K)>::template params<ParamList>;
  static_assert(Params::size == sizeof...(A),
                "enqueue_function: the number of arguments differs from the kernel's parameters");
  if constexpr (Params::size == sizeof...(A))
    Params::template launcher<K>::launch(sink, config, std::index_sequence_for<A...>{}, std::forward<A>(args)...);
}

template <auto K, class... A>
void launch_kernel(QueueImpl& queue, const LaunchConfig& config, A&&... args) {
  build_launch<K>([&queue](const KernelLaunch& l) { queue_launch(queue, l); }, config, std::forward<A>(args)...);
}

}  // namespace devctx::detail
