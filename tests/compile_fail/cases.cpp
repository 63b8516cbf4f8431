// SPDX-License-Identifier: Apache-2.0
// tests/compile_fail/cases.cpp - misuse that must not compile. Each ctest compiles this file
// with one -DCASE_<name> and expects the static_assert text given in tests/CMakeLists.txt;
// CASE_ok is the control that must compile.
#include <array>
#include <span>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

DEVCTX_KERNEL void takes_span(devctx::span<float> out) {
  if (devctx::global_idx().x < out.size()) out[devctx::global_idx().x] = 1.0f;
}
DEVCTX_KERNEL void takes_const_span(devctx::span<const float> in, devctx::span<float> out) { out[0] = in[0]; }
DEVCTX_KERNEL void takes_pointer(float* p) { p[0] = 1.0f; }
DEVCTX_KERNEL void takes_const_pointer(const float* in, float* out) { out[0] = in[0]; }
DEVCTX_KERNEL void takes_scalar(int v, devctx::span<int> out) { out[0] = v; }
DEVCTX_KERNEL void takes_reference(const int& v, devctx::span<int> out) { out[0] = v; }
DEVCTX_KERNEL void takes_string(std::string s, devctx::span<int> out) { out[0] = int(s.size()); }
DEVCTX_KERNEL int returns_int(devctx::span<int> out) { return out[0]; }
using DynMat = devctx::RowMajor<devctx::dyn, devctx::dyn>;
DEVCTX_KERNEL void takes_tensor(devctx::LayoutTensor<float, DynMat> t) { t(0, 0) = 1.0f; }
DEVCTX_KERNEL void takes_static_tensor(devctx::LayoutTensor<float, devctx::RowMajor<4, 8>> t) { t(0, 0) = 1.0f; }
// Kernels that misuse an atomic (compiled only in their own case: a kernel body always is).
#if defined(CASE_atomic_and_float)
DEVCTX_KERNEL void float_and(devctx::span<float> out) { devctx::atomic_and(&out[0], 1.0f); }
#elif defined(CASE_atomic_inc_signed)
DEVCTX_KERNEL void signed_inc(devctx::span<int> out) { devctx::atomic_inc(&out[0], 10); }
#elif defined(CASE_atomic_add_short)
DEVCTX_KERNEL void short_add(devctx::span<short> out) { devctx::atomic_add(&out[0], short(1)); }
#endif

void cases(devctx::DeviceContext& ctx) {
  const devctx::LaunchConfig cfg{.grid_dim = 1, .block_dim = 32};
  auto d = ctx.enqueue_create_buffer<float>(32);
  auto di = ctx.enqueue_create_buffer<int>(32);
  auto h = ctx.enqueue_create_host_buffer<float>(32);
  std::vector<float> v(32);
  std::array<float, 32> a{};
  float* p = v.data();
  (void)d;
  (void)di;
  (void)h;
  (void)v;
  (void)a;
  (void)p;
  (void)cfg;
#if defined(CASE_ok)
  ctx.enqueue_function<takes_span>(cfg, d);
  ctx.enqueue_function<takes_span>(cfg, d.slice(0, 16));
  const auto& cd = d;
  ctx.enqueue_function<takes_const_span>(cfg, cd, d);
  ctx.enqueue_function<takes_scalar>(cfg, 3, di);
  ctx.enqueue_function<takes_tensor>(cfg, devctx::tensor(d, DynMat(4, 8)));
  ctx.enqueue_function<takes_static_tensor>(cfg, d);
  ctx.enqueue_copy(d, h);
  ctx.enqueue_copy(v, d);
  ctx.enqueue_copy(std::span<float>(v), cd);
  ctx.enqueue_memset(d, 0.0f);
  (void)d.map_to_host([](std::span<const float> s) { return s.size(); });
  d.map_to_host([](std::span<float> s) { s[0] = 1.0f; });
  d.enqueue_copy_to(h);
  d.enqueue_fill(1.0f);
  (void)d.view_as<int>();
  ctx.enqueue_function<takes_pointer>(cfg, d);
  ctx.enqueue_function<takes_pointer>(cfg, d.slice(4, 8));
  ctx.enqueue_function<takes_pointer>(cfg, devctx::tensor(d, DynMat(4, 8)));
  ctx.enqueue_function<takes_const_pointer>(cfg, cd, d);
  ctx.enqueue_function<takes_const_pointer>(cfg, cd.slice(0, 4), d.span());
  ctx.enqueue_function<takes_const_pointer>(cfg, nullptr, d);
  auto const_view = devctx::wrap_device_memory(ctx, static_cast<const float*>(d.data()), 8);
  ctx.enqueue_function<takes_const_pointer>(cfg, const_view, d);
  // Launches of runtime-compiled kernels compile for device memory and scalars (an empty
  // DeviceFunction throws at run time; this case is only compiled).
  if (v.empty())
    ctx.enqueue_function(devctx::DeviceFunction{}, cfg, d, cd, d.slice(0, 4), cd.slice(0, 4), d.span(), 1, 2.0f);
#elif defined(CASE_map_const_buffer_mutably)
  const auto& cd = d;
  cd.map_to_host([](std::span<float> s) { s[0] = 1.0f; });
#elif defined(CASE_map_host_buffer)
  h.map_to_host([](std::span<const float>) {});
#elif defined(CASE_copy_from_into_const_buffer)
  const auto& cd = d;
  cd.enqueue_copy_from(h);
#elif defined(CASE_view_const_as_mutable)
  const auto& cd = d;
  devctx::DeviceSlice<int> s = cd.view_as<int>();
  (void)s;
#elif defined(CASE_atomic_and_float)
  ctx.enqueue_function<float_and>(cfg, d);
#elif defined(CASE_atomic_inc_signed)
  ctx.enqueue_function<signed_inc>(cfg, di);
#elif defined(CASE_atomic_add_short)
  auto ds = ctx.enqueue_create_buffer<short>(32);
  ctx.enqueue_function<short_add>(cfg, ds);
#elif defined(CASE_host_buffer_to_kernel)
  ctx.enqueue_function<takes_span>(cfg, h);
#elif defined(CASE_host_buffer_to_runtime_kernel)
  ctx.enqueue_function(devctx::DeviceFunction{}, cfg, h);
#elif defined(CASE_vector_to_runtime_kernel)
  ctx.enqueue_function(devctx::DeviceFunction{}, cfg, v);
#elif defined(CASE_host_slice_to_kernel)
  ctx.enqueue_function<takes_span>(cfg, h.slice(0, 8));
#elif defined(CASE_vector_to_kernel)
  ctx.enqueue_function<takes_span>(cfg, v);
#elif defined(CASE_std_span_to_kernel)
  ctx.enqueue_function<takes_span>(cfg, std::span<float>(v));
#elif defined(CASE_std_array_to_kernel)
  ctx.enqueue_function<takes_span>(cfg, a);
#elif defined(CASE_raw_pointer_to_kernel)
  ctx.enqueue_function<takes_pointer>(cfg, p);
#elif defined(CASE_raw_pointer_to_span_parameter)
  ctx.enqueue_function<takes_span>(cfg, p);
#elif defined(CASE_too_few_arguments)
  ctx.enqueue_function<takes_const_span>(cfg, d);
#elif defined(CASE_too_many_arguments)
  ctx.enqueue_function<takes_span>(cfg, d, d);
#elif defined(CASE_const_buffer_to_writable_span)
  const auto& cd = d;
  ctx.enqueue_function<takes_span>(cfg, cd);
#elif defined(CASE_const_slice_to_writable_span)
  const auto& cd = d;
  ctx.enqueue_function<takes_span>(cfg, cd.slice(0, 4));
#elif defined(CASE_wrong_buffer_element_type)
  ctx.enqueue_function<takes_span>(cfg, di);
#elif defined(CASE_copy_different_element_types)
  ctx.enqueue_copy(d, di);
#elif defined(CASE_copy_from_raw_pointer)
  ctx.enqueue_copy(d, p);
#elif defined(CASE_copy_into_raw_pointer)
  ctx.enqueue_copy(p, d);
#elif defined(CASE_memset_raw_pointer)
  ctx.enqueue_memset(p, 1.0f);
#elif defined(CASE_copy_into_const)
  const auto& cd = d;
  ctx.enqueue_copy(cd, h);
#elif defined(CASE_memset_const)
  const auto& cd = d;
  ctx.enqueue_memset(cd, 1.0f);
#elif defined(CASE_kernel_reference_parameter)
  ctx.enqueue_function<takes_reference>(cfg, 1, di);
#elif defined(CASE_non_trivially_copyable_parameter)
  ctx.enqueue_function<takes_string>(cfg, std::string("x"), di);
#elif defined(CASE_scalar_for_span_parameter)
  ctx.enqueue_function<takes_span>(cfg, 1.0f);
#elif defined(CASE_buffer_for_scalar_parameter)
  ctx.enqueue_function<takes_scalar>(cfg, di, di);
#elif defined(CASE_non_void_kernel)
  ctx.enqueue_function<returns_int>(cfg, di);
#elif defined(CASE_buffer_for_dynamic_tensor)
  ctx.enqueue_function<takes_tensor>(cfg, d);
#elif defined(CASE_const_tensor_to_writable_tensor)
  const auto& cd = d;
  ctx.enqueue_function<takes_tensor>(cfg, devctx::tensor(cd, DynMat(4, 8)));
#elif defined(CASE_tensor_layout_mismatch)
  ctx.enqueue_function<takes_tensor>(cfg, devctx::tensor(d, devctx::ColMajor<devctx::dyn, devctx::dyn>(4, 8)));
#elif defined(CASE_tensor_for_span_parameter)
  ctx.enqueue_function<takes_span>(cfg, devctx::tensor(d, DynMat(4, 8)));
#elif defined(CASE_host_buffer_to_pointer_parameter)
  ctx.enqueue_function<takes_pointer>(cfg, h);
#elif defined(CASE_vector_to_pointer_parameter)
  ctx.enqueue_function<takes_const_pointer>(cfg, v, d);
#elif defined(CASE_const_buffer_to_writable_pointer)
  const auto& cd = d;
  ctx.enqueue_function<takes_pointer>(cfg, cd);
#elif defined(CASE_const_slice_to_writable_pointer)
  const auto& cd = d;
  ctx.enqueue_function<takes_pointer>(cfg, cd.slice(0, 4));
#elif defined(CASE_const_view_to_writable_pointer)
  auto view = devctx::wrap_device_memory(ctx, static_cast<const float*>(d.data()), 8);
  ctx.enqueue_function<takes_pointer>(cfg, view);
#elif defined(CASE_wrong_buffer_element_type_for_pointer)
  ctx.enqueue_function<takes_pointer>(cfg, di);
#elif defined(CASE_scalar_for_pointer_parameter)
  ctx.enqueue_function<takes_pointer>(cfg, 3);
#elif defined(CASE_tensor_wrong_rank_index)
  devctx::LayoutTensor<float, DynMat> t(v.data(), 4, 8);
  (void)t(1);
#elif defined(CASE_tensor_static_extents_overflow)
  // 2^62 x 4 = 2^64: the size would wrap around to 0.
  const devctx::RowMajor<(std::size_t{1} << 62), 4> layout;
  (void)layout;
#elif defined(CASE_tensor_static_stride_overflow)
  // Empty, but the stride of dimension 0 would be 2^80 (taking the dynamic extent as 1 too).
  const devctx::RowMajor<devctx::dyn, (std::size_t{1} << 40), (std::size_t{1} << 40)> layout(0);
  (void)layout;
#elif defined(CASE_tensor_zero_tile)
  devctx::LayoutTensor<float, DynMat> t(v.data(), 4, 8);
  (void)t.tile<0, 4>(0, 0);
#else
#error "no CASE_ selected"
#endif
}
