// SPDX-License-Identifier: Apache-2.0
#include "baselines.hpp"

#include <stdexcept>

#ifdef DEVCTX_BENCH_HAVE_OPENCL

#include <CL/cl.h>

#include <limits>
#include <type_traits>
#include <vector>

namespace bench {
namespace {

// The kernels are deliberately GPU-style: one work-item per output element,
// explicit work-groups, __local staging and barriers, so that this row shows
// what an OpenCL CPU runtime makes of code written for a GPU.
constexpr const char* kernel_source = R"CLC(
#define REDUCE_BLOCK 256
#define TILE 16

__kernel void vector_add(__global const float* a, __global const float* b,
                         __global float* out, const ulong n) {
    const size_t i = get_global_id(0);
    if (i < n) {
        out[i] = a[i] + b[i];
    }
}

__kernel void block_reduce(__global const float* in, __global float* block_sums,
                           const ulong n) {
    __local float sdata[REDUCE_BLOCK];
    const uint tid = get_local_id(0);
    const size_t gid = get_global_id(0);
    sdata[tid] = gid < n ? in[gid] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = REDUCE_BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (tid == 0) {
        block_sums[get_group_id(0)] = sdata[0];
    }
}

__kernel void matmul(__global const float* A, __global const float* B,
                     __global float* C, const uint n) {
    __local float a_tile[TILE][TILE];
    __local float b_tile[TILE][TILE];
    const uint tx = get_local_id(0);
    const uint ty = get_local_id(1);
    const uint col = get_group_id(0) * TILE + tx;
    const uint row = get_group_id(1) * TILE + ty;
    float acc = 0.0f;
    for (uint t = 0; t < (n + TILE - 1) / TILE; ++t) {
        const uint a_col = t * TILE + tx;
        const uint b_row = t * TILE + ty;
        a_tile[ty][tx] = (row < n && a_col < n) ? A[row * n + a_col] : 0.0f;
        b_tile[ty][tx] = (b_row < n && col < n) ? B[b_row * n + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = 0; k < TILE; ++k) {
            acc += a_tile[ty][k] * b_tile[k][tx];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < n && col < n) {
        C[row * n + col] = acc;
    }
}
)CLC";

constexpr std::size_t matmul_tile = 16;

}  // namespace

// The owning handles are members of OpenClRunner::State, a class with external linkage: they
// live in a named namespace (a member of an anonymous-namespace type would give State internal
// linkage in all but name, which GCC reports with -Wsubobject-linkage).
namespace opencl {

template <typename Handle, cl_int (*Release)(Handle)>
struct ClReleaser {
  void operator()(Handle h) const { Release(h); }
};

template <typename Handle, cl_int (*Release)(Handle)>
using ClPtr = std::unique_ptr<std::remove_pointer_t<Handle>, ClReleaser<Handle, Release>>;

using ContextPtr = ClPtr<cl_context, clReleaseContext>;
using QueuePtr = ClPtr<cl_command_queue, clReleaseCommandQueue>;
using ProgramPtr = ClPtr<cl_program, clReleaseProgram>;
using KernelPtr = ClPtr<cl_kernel, clReleaseKernel>;
using MemPtr = ClPtr<cl_mem, clReleaseMemObject>;

}  // namespace opencl

using opencl::ContextPtr, opencl::QueuePtr, opencl::ProgramPtr, opencl::KernelPtr, opencl::MemPtr;

namespace {

void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) {
    throw std::runtime_error(std::string("OpenCL: ") + what + " failed with error " + std::to_string(err));
  }
}

std::string device_string(cl_device_id device, cl_device_info param) {
  std::size_t size = 0;
  check(clGetDeviceInfo(device, param, 0, nullptr, &size), "clGetDeviceInfo");
  std::string value(size, '\0');
  check(clGetDeviceInfo(device, param, size, value.data(), nullptr), "clGetDeviceInfo");
  while (!value.empty() && value.back() == '\0') {
    value.pop_back();
  }
  return value;
}

std::string platform_string(cl_platform_id platform, cl_platform_info param) {
  std::size_t size = 0;
  check(clGetPlatformInfo(platform, param, 0, nullptr, &size), "clGetPlatformInfo");
  std::string value(size, '\0');
  check(clGetPlatformInfo(platform, param, size, value.data(), nullptr), "clGetPlatformInfo");
  while (!value.empty() && value.back() == '\0') {
    value.pop_back();
  }
  return value;
}

std::size_t round_up(std::size_t value, std::size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Picks a CPU device when there is one, since this benchmark compares CPU
// backends; any other device is a fallback so the runner still works.
bool pick_device(cl_platform_id* platform_out, cl_device_id* device_out) {
  cl_uint platform_count = 0;
  if (clGetPlatformIDs(0, nullptr, &platform_count) != CL_SUCCESS || platform_count == 0) {
    return false;
  }
  std::vector<cl_platform_id> platforms(platform_count);
  check(clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs");
  for (cl_device_type type : {cl_device_type{CL_DEVICE_TYPE_CPU}, cl_device_type{CL_DEVICE_TYPE_ALL}}) {
    for (cl_platform_id platform : platforms) {
      cl_device_id device = nullptr;
      cl_uint count = 0;
      if (clGetDeviceIDs(platform, type, 1, &device, &count) == CL_SUCCESS && count > 0) {
        *platform_out = platform;
        *device_out = device;
        return true;
      }
    }
  }
  return false;
}

}  // namespace

struct OpenClRunner::State {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  ContextPtr context;
  QueuePtr queue;
  ProgramPtr program;
  KernelPtr vector_add;
  KernelPtr block_reduce;
  KernelPtr matmul;

  MemPtr k1_a, k1_b, k1_out;
  std::size_t k1_n = 0;
  MemPtr k2_in, k2_sums;
  std::size_t k2_n = 0;
  MemPtr k3_a, k3_b, k3_c;
  unsigned k3_n = 0;

  MemPtr make_buffer(cl_mem_flags flags, std::size_t floats) {
    cl_int err = CL_SUCCESS;
    MemPtr mem(clCreateBuffer(context.get(), flags, floats * sizeof(float), nullptr, &err));
    check(err, "clCreateBuffer");
    return mem;
  }

  void write(const MemPtr& mem, const float* src, std::size_t floats) {
    check(clEnqueueWriteBuffer(queue.get(), mem.get(), CL_TRUE, 0, floats * sizeof(float), src, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
  }

  void read(const MemPtr& mem, float* dst, std::size_t floats) {
    check(clEnqueueReadBuffer(queue.get(), mem.get(), CL_TRUE, 0, floats * sizeof(float), dst, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
  }

  // Filling outputs with NaN makes a kernel that skips elements fail the
  // correctness check instead of passing on stale data.
  void poison(const MemPtr& mem, std::size_t floats) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    check(clEnqueueFillBuffer(queue.get(), mem.get(), &nan, sizeof(nan), 0, floats * sizeof(float), 0, nullptr, nullptr),
          "clEnqueueFillBuffer");
    check(clFinish(queue.get()), "clFinish");
  }

  void launch(const KernelPtr& kernel, cl_uint dims, const std::size_t* global, const std::size_t* local) {
    check(clEnqueueNDRangeKernel(queue.get(), kernel.get(), dims, nullptr, global, local, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    check(clFinish(queue.get()), "clFinish");
  }
};

std::unique_ptr<OpenClRunner> OpenClRunner::create(std::string* why_not) {
  auto fail = [why_not](std::string reason) {
    if (why_not != nullptr) {
      *why_not = std::move(reason);
    }
    return std::unique_ptr<OpenClRunner>();
  };
  try {
    auto state = std::make_unique<State>();
    if (!pick_device(&state->platform, &state->device)) {
      return fail("no OpenCL platform or device found (is an ICD such as pocl-opencl-icd installed?)");
    }

    std::size_t max_group = 0;
    check(clGetDeviceInfo(state->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(max_group), &max_group, nullptr),
          "clGetDeviceInfo");
    if (max_group < reduce_block || max_group < matmul_tile * matmul_tile) {
      return fail("device max work-group size " + std::to_string(max_group) + " is below " + std::to_string(reduce_block));
    }

    cl_int err = CL_SUCCESS;
    state->context.reset(clCreateContext(nullptr, 1, &state->device, nullptr, nullptr, &err));
    check(err, "clCreateContext");
    state->queue.reset(clCreateCommandQueue(state->context.get(), state->device, 0, &err));
    check(err, "clCreateCommandQueue");

    const char* source = kernel_source;
    state->program.reset(clCreateProgramWithSource(state->context.get(), 1, &source, nullptr, &err));
    check(err, "clCreateProgramWithSource");
    if (clBuildProgram(state->program.get(), 1, &state->device, "-cl-std=CL1.2", nullptr, nullptr) != CL_SUCCESS) {
      std::size_t log_size = 0;
      clGetProgramBuildInfo(state->program.get(), state->device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
      std::string log(log_size, '\0');
      clGetProgramBuildInfo(state->program.get(), state->device, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
      return fail("OpenCL kernel build failed: " + log);
    }
    state->vector_add.reset(clCreateKernel(state->program.get(), "vector_add", &err));
    check(err, "clCreateKernel(vector_add)");
    state->block_reduce.reset(clCreateKernel(state->program.get(), "block_reduce", &err));
    check(err, "clCreateKernel(block_reduce)");
    state->matmul.reset(clCreateKernel(state->program.get(), "matmul", &err));
    check(err, "clCreateKernel(matmul)");
    return std::unique_ptr<OpenClRunner>(new OpenClRunner(std::move(state)));
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

OpenClRunner::OpenClRunner(std::unique_ptr<State> state) : state_(std::move(state)) {}

OpenClRunner::~OpenClRunner() = default;

std::string OpenClRunner::device_name() const { return device_string(state_->device, CL_DEVICE_NAME); }

std::string OpenClRunner::platform_version() const { return platform_string(state_->platform, CL_PLATFORM_VERSION); }

void OpenClRunner::upload_k1(const float* a, const float* b, std::size_t n) {
  State& s = *state_;
  if (n != s.k1_n || !s.k1_a) {
    s.k1_a = s.make_buffer(CL_MEM_READ_ONLY, n);
    s.k1_b = s.make_buffer(CL_MEM_READ_ONLY, n);
    s.k1_out = s.make_buffer(CL_MEM_WRITE_ONLY, n);
    s.k1_n = n;
  }
  s.write(s.k1_a, a, n);
  s.write(s.k1_b, b, n);
  s.poison(s.k1_out, n);
  const cl_mem a_mem = s.k1_a.get();
  const cl_mem b_mem = s.k1_b.get();
  const cl_mem out_mem = s.k1_out.get();
  const cl_ulong n_arg = n;
  check(clSetKernelArg(s.vector_add.get(), 0, sizeof(cl_mem), &a_mem), "clSetKernelArg");
  check(clSetKernelArg(s.vector_add.get(), 1, sizeof(cl_mem), &b_mem), "clSetKernelArg");
  check(clSetKernelArg(s.vector_add.get(), 2, sizeof(cl_mem), &out_mem), "clSetKernelArg");
  check(clSetKernelArg(s.vector_add.get(), 3, sizeof(n_arg), &n_arg), "clSetKernelArg");
}

void OpenClRunner::run_k1() {
  const std::size_t local = reduce_block;
  const std::size_t global = round_up(state_->k1_n, local);
  state_->launch(state_->vector_add, 1, &global, &local);
}

void OpenClRunner::download_k1(float* out) { state_->read(state_->k1_out, out, state_->k1_n); }

void OpenClRunner::upload_k2(const float* in, std::size_t n) {
  State& s = *state_;
  if (n != s.k2_n || !s.k2_in) {
    s.k2_in = s.make_buffer(CL_MEM_READ_ONLY, n);
    s.k2_sums = s.make_buffer(CL_MEM_WRITE_ONLY, block_count(n));
    s.k2_n = n;
  }
  s.write(s.k2_in, in, n);
  s.poison(s.k2_sums, block_count(n));
  const cl_mem in_mem = s.k2_in.get();
  const cl_mem sums_mem = s.k2_sums.get();
  const cl_ulong n_arg = n;
  check(clSetKernelArg(s.block_reduce.get(), 0, sizeof(cl_mem), &in_mem), "clSetKernelArg");
  check(clSetKernelArg(s.block_reduce.get(), 1, sizeof(cl_mem), &sums_mem), "clSetKernelArg");
  check(clSetKernelArg(s.block_reduce.get(), 2, sizeof(n_arg), &n_arg), "clSetKernelArg");
}

void OpenClRunner::run_k2() {
  const std::size_t local = reduce_block;
  const std::size_t global = block_count(state_->k2_n) * reduce_block;
  state_->launch(state_->block_reduce, 1, &global, &local);
}

void OpenClRunner::download_k2(float* block_sums) {
  state_->read(state_->k2_sums, block_sums, block_count(state_->k2_n));
}

void OpenClRunner::upload_k3(const float* A, const float* B, unsigned n) {
  State& s = *state_;
  const std::size_t elems = std::size_t{n} * n;
  if (n != s.k3_n || !s.k3_a) {
    s.k3_a = s.make_buffer(CL_MEM_READ_ONLY, elems);
    s.k3_b = s.make_buffer(CL_MEM_READ_ONLY, elems);
    s.k3_c = s.make_buffer(CL_MEM_WRITE_ONLY, elems);
    s.k3_n = n;
  }
  s.write(s.k3_a, A, elems);
  s.write(s.k3_b, B, elems);
  s.poison(s.k3_c, elems);
  const cl_mem a_mem = s.k3_a.get();
  const cl_mem b_mem = s.k3_b.get();
  const cl_mem c_mem = s.k3_c.get();
  const cl_uint n_arg = n;
  check(clSetKernelArg(s.matmul.get(), 0, sizeof(cl_mem), &a_mem), "clSetKernelArg");
  check(clSetKernelArg(s.matmul.get(), 1, sizeof(cl_mem), &b_mem), "clSetKernelArg");
  check(clSetKernelArg(s.matmul.get(), 2, sizeof(cl_mem), &c_mem), "clSetKernelArg");
  check(clSetKernelArg(s.matmul.get(), 3, sizeof(n_arg), &n_arg), "clSetKernelArg");
}

void OpenClRunner::run_k3() {
  const std::size_t local[2] = {matmul_tile, matmul_tile};
  const std::size_t side = round_up(state_->k3_n, matmul_tile);
  const std::size_t global[2] = {side, side};
  state_->launch(state_->matmul, 2, global, local);
}

void OpenClRunner::download_k3(float* C) { state_->read(state_->k3_c, C, std::size_t{state_->k3_n} * state_->k3_n); }

}  // namespace bench

#else  // !DEVCTX_BENCH_HAVE_OPENCL

// Without OpenCL the runner can never be created, so the members below are
// unreachable; they exist only so callers link without conditional code.
namespace bench {

struct OpenClRunner::State {};

namespace {
[[noreturn]] void unavailable() { throw std::logic_error("OpenCL support was not compiled in"); }
}  // namespace

std::unique_ptr<OpenClRunner> OpenClRunner::create(std::string* why_not) {
  if (why_not != nullptr) {
    *why_not = "built without OpenCL (CMake did not find it; see bench/cpu/setup.sh)";
  }
  return nullptr;
}

OpenClRunner::OpenClRunner(std::unique_ptr<State> state) : state_(std::move(state)) {}
OpenClRunner::~OpenClRunner() = default;
std::string OpenClRunner::device_name() const { unavailable(); }
std::string OpenClRunner::platform_version() const { unavailable(); }
void OpenClRunner::upload_k1(const float*, const float*, std::size_t) { unavailable(); }
void OpenClRunner::run_k1() { unavailable(); }
void OpenClRunner::download_k1(float*) { unavailable(); }
void OpenClRunner::upload_k2(const float*, std::size_t) { unavailable(); }
void OpenClRunner::run_k2() { unavailable(); }
void OpenClRunner::download_k2(float*) { unavailable(); }
void OpenClRunner::upload_k3(const float*, const float*, unsigned) { unavailable(); }
void OpenClRunner::run_k3() { unavailable(); }
void OpenClRunner::download_k3(float*) { unavailable(); }

}  // namespace bench

#endif  // DEVCTX_BENCH_HAVE_OPENCL
