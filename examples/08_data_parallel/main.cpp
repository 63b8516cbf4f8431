// SPDX-License-Identifier: Apache-2.0
// Scale-out - data parallelism: each device holds a shard of the training data and a replica
// of a small linear model (y = w . x + b). Every step, each device computes the gradient of the
// squared error over its own shard, one all-reduce sums the partial gradients across the
// devices, and every device applies the same update, so the replicas stay equal. The result
// is checked against the same full-batch gradient descent run on the host.
//
//   ./08_data_parallel [devices] [samples] [steps]    devices CPU devices of this process
//   ./08_data_parallel --gpu [samples] [steps]        every GPU of this process (NCCL)
//   mpirun -n N ./08_data_parallel --mpi [samples] [steps]       one CPU device per process
//   mpirun -n N ./08_data_parallel --mpi-gpu [samples] [steps]   one GPU per process (NCCL)
//
// The program is the same in every mode: only how the contexts and the Communicator are made
// differs (docs/scale-out.md).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

constexpr std::size_t kFeatures = 8;

/// residual[i] = w . x_i + b - y_i for this device's samples (one thread each).
DEVCTX_KERNEL void residuals(devctx::span<const float> x, devctx::span<const float> y, devctx::span<const float> model,
                             devctx::span<float> residual) {
  const std::size_t i = devctx::global_idx().x;
  if (i >= residual.size()) return;
  float r = model[kFeatures] - y[i];
  for (std::size_t j = 0; j < kFeatures; ++j) r += model[j] * x[i * kFeatures + j];
  residual[i] = r;
}

/// grad[j] = 2/N sum_i residual_i x_ij over this device's samples (N: all devices' samples);
/// grad[kFeatures] the same for the bias. One thread per parameter.
DEVCTX_KERNEL void partial_gradient(devctx::span<const float> x, devctx::span<const float> residual,
                                    devctx::span<float> grad, float scale) {
  const std::size_t j = devctx::global_idx().x;
  if (j > kFeatures) return;
  float g = 0.0f;
  for (std::size_t i = 0; i < residual.size(); ++i) g += residual[i] * (j == kFeatures ? 1.0f : x[i * kFeatures + j]);
  grad[j] = g * scale;
}

DEVCTX_KERNEL void sgd_update(devctx::span<float> model, devctx::span<const float> grad, float learning_rate) {
  const std::size_t j = devctx::global_idx().x;
  if (j < model.size()) model[j] -= learning_rate * grad[j];
}

/// The data set, made the same way in every process: sample i of every device's shard.
struct Data {
  std::vector<float> x, y;
};
Data make_data(std::size_t samples) {
  std::mt19937 rng(12345);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Data data{std::vector<float>(samples * kFeatures), std::vector<float>(samples)};
  for (std::size_t i = 0; i < samples; ++i) {
    float y = 0.5f;
    for (std::size_t j = 0; j < kFeatures; ++j) {
      data.x[i * kFeatures + j] = d(rng);
      y += float(j + 1) * 0.25f * data.x[i * kFeatures + j];
    }
    data.y[i] = y + 0.01f * d(rng);
  }
  return data;
}

/// One rank's replica and shard.
struct Replica {
  devctx::DeviceContext* ctx;
  devctx::Communicator* comm;
  devctx::DeviceBuffer<float> x, y, residual, grad, model;
};

Replica make_replica(devctx::DeviceContext& ctx, devctx::Communicator& comm, const Data& data, std::size_t first,
                     std::size_t count) {
  Replica r{&ctx,
            &comm,
            ctx.enqueue_create_buffer<float>(count * kFeatures),
            ctx.enqueue_create_buffer<float>(count),
            ctx.enqueue_create_buffer<float>(count),
            ctx.enqueue_create_buffer<float>(kFeatures + 1),
            ctx.enqueue_create_buffer<float>(kFeatures + 1)};
  ctx.enqueue_copy(r.x, std::span<const float>(data.x).subspan(first * kFeatures, count * kFeatures));
  ctx.enqueue_copy(r.y, std::span<const float>(data.y).subspan(first, count));
  ctx.enqueue_memset(r.model, 0.0f);
  return r;
}

constexpr float kLearningRate = 0.1f;

/// One step on every local replica: partial gradients, all-reduce, update. Each verb returns at
/// once; a replica's stream runs them in order and waits for the other ranks at the all-reduce.
void step(std::vector<Replica>& replicas, std::size_t total_samples) {
  for (Replica& r : replicas) {
    const auto n = unsigned(r.residual.size());
    r.ctx->enqueue_function<residuals>({.grid_dim = (n + 255) / 256, .block_dim = 256}, r.x, r.y, r.model, r.residual);
    r.ctx->enqueue_function<partial_gradient>({.grid_dim = 1, .block_dim = 32}, r.x, r.residual, r.grad,
                                              2.0f / float(total_samples));
    r.comm->all_reduce(r.grad, r.grad, devctx::ReduceOp::sum);
    r.ctx->enqueue_function<sgd_update>({.grid_dim = 1, .block_dim = 32}, r.model, r.grad, kLearningRate);
  }
}

/// The same descent on the host, for the check.
std::vector<double> host_descent(const Data& data, std::size_t steps) {
  const std::size_t n = data.y.size();
  std::vector<double> w(kFeatures + 1, 0.0);
  for (std::size_t s = 0; s < steps; ++s) {
    std::vector<double> g(kFeatures + 1, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      double r = w[kFeatures] - data.y[i];
      for (std::size_t j = 0; j < kFeatures; ++j) r += w[j] * data.x[i * kFeatures + j];
      for (std::size_t j = 0; j < kFeatures; ++j) g[j] += 2.0 * r * data.x[i * kFeatures + j] / double(n);
      g[kFeatures] += 2.0 * r / double(n);
    }
    for (std::size_t j = 0; j <= kFeatures; ++j) w[j] -= kLearningRate * g[j];
  }
  return w;
}

int main(int argc, char** argv) try {
  const std::string mode = argc > 1 && argv[1][0] == '-' ? argv[1] : "";
  if (!mode.empty() && mode != "--mpi" && mode != "--gpu" && mode != "--mpi-gpu")
    throw devctx::Error(devctx::Errc::invalid_argument, "unknown mode " + mode + " (use --gpu, --mpi or --mpi-gpu)");
  const bool mpi = mode == "--mpi" || mode == "--mpi-gpu";
  const bool gpu = mode == "--gpu" || mode == "--mpi-gpu";
  const int devices = !mode.empty() ? 0 : (argc > 1 ? std::atoi(argv[1]) : 2);
  const std::size_t samples = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 6000;
  const std::size_t steps = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 50;
  const Data data = make_data(samples);

  std::vector<devctx::DeviceContext> contexts;
  std::vector<devctx::Communicator> comms;
  std::vector<int> ranks;
  int size = 0;
  const devctx::Api cuda = devctx::backend("cuda").api;  // the GPU backend, by name (devctx/backend.hpp)
  const int gpus = gpu ? devctx::DeviceContext::count(cuda) : 0;
  if (gpu && gpus == 0) {
    std::printf("%s: this machine has no GPU; skipped\n", mode.c_str());
    return 77;
  }
  if (mpi) {
    // One GPU per process: the launcher's local rank picks it (OpenMPI sets the variable).
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (gpu)
      contexts.emplace_back(cuda, (local != nullptr ? std::atoi(local) : 0) % gpus);
    else
      contexts.emplace_back(devctx::Api::cpu);
#if defined(EXAMPLE_WITHOUT_DEVCTX_MPI)  // built against a devctx whose devctx::mpi was not found
    throw devctx::Error(devctx::Errc::not_available, "--mpi: this program was built without devctx::mpi");
#else
    comms.push_back(devctx::Communicator::create_mpi(contexts[0]));
#endif
    ranks.push_back(comms[0].rank());
    size = comms[0].size();
  } else if (gpu) {
    for (int i = 0; i < gpus; ++i) contexts.emplace_back(cuda, i);
    comms = devctx::Communicator::create(contexts);  // one thread drives every GPU (NCCL)
    for (int i = 0; i < gpus; ++i) ranks.push_back(i);
    size = gpus;
  } else {
    if (devices < 1) throw devctx::Error(devctx::Errc::invalid_argument, "the device count must be at least 1");
    devctx::DeviceContext::set_cpu_device_count(devices);  // split the CPU into `devices` devices
    for (int i = 0; i < devices; ++i) contexts.emplace_back(devctx::Api::cpu, i);
    comms = devctx::Communicator::create(contexts);
    for (int i = 0; i < devices; ++i) ranks.push_back(i);
    size = devices;
  }
  std::vector<Replica> replicas;
  for (std::size_t k = 0; k < contexts.size(); ++k) {
    const auto r = std::size_t(ranks[k]);
    const std::size_t first = samples * r / std::size_t(size), last = samples * (r + 1) / std::size_t(size);
    replicas.push_back(make_replica(contexts[k], comms[k], data, first, last - first));
    std::printf("rank %zu of %d: %s:%d  %s, samples [%zu, %zu)\n", r, size, devctx::to_string(contexts[k].api()),
                contexts[k].id(), contexts[k].name().c_str(), first, last);
  }
  for (std::size_t s = 0; s < steps; ++s) step(replicas, samples);

  const std::vector<double> want = host_descent(data, steps);
  bool ok = true;
  for (std::size_t k = 0; k < replicas.size(); ++k) {
    std::vector<float> model(kFeatures + 1);
    contexts[k].enqueue_copy(std::span<float>(model), replicas[k].model);
    for (std::size_t j = 0; j <= kFeatures; ++j)
      if (!(std::fabs(double(model[j]) - want[j]) <= 1e-3 * (1.0 + std::fabs(want[j])))) {
        std::printf("rank %d: parameter %zu is %g, the host's descent gives %g\n", ranks[k], j, double(model[j]), want[j]);
        ok = false;
      }
    std::printf("rank %d: w[0] = %.4f (true 0.25), w[7] = %.4f (true 2.0), b = %.4f (true 0.5)\n", ranks[k],
                double(model[0]), double(model[7]), double(model[kFeatures]));
  }
  std::printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
