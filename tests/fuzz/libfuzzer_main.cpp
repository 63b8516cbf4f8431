// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/libfuzzer_main.cpp - devctx_fuzz_libfuzzer: the libFuzzer entry point. Each input's
// bytes drive the same generator as the differential fuzzer (choices.hpp: ByteChoices), so an
// input decodes to a race-free program over the CPU backend, which is run and checked against
// the model like any other. A mismatch aborts (libFuzzer saves the input); ASan and UBSan,
// built into the library in this configuration, catch memory errors on the way.
// Replay a saved input with full reporting: devctx_fuzz_diff --bytes crash-<hash>.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/libfuzzer_options.hpp"
#include "fuzz/session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace devctx_fuzz;
  // The CPU device (its worker pool) lives while any context of it does. Holding one for the
  // whole run keeps the pool from being torn down inside an input, as in a long-running program:
  // a device dropped by a worker detaches its threads (cpu_device.cpp), and LeakSanitizer's
  // check right after the input then reported their blocks as leaked (docs/fuzzing.md).
  static devctx::DeviceContext keep_device_open{devctx::Api::cpu};
  ByteChoices choices({data, size});
  const RunResult r = run_generated(devctx::Api::cpu, choices, libfuzzer_options(), kLibFuzzerMaxOps, true);
  if (r.failed) {
    std::fprintf(stderr, "devctx_fuzz_libfuzzer: MISMATCH at op %zu (%s): %s\n%s", r.failed_at,
                 r.failed_at < r.ops.size() ? to_text(r.ops[r.failed_at]).c_str() : "final check", r.failure.c_str(),
                 reproduction(run_ops(devctx::Api::cpu, r.ops, true)).c_str());
    std::abort();
  }
  // The program may drop contexts with work still queued, which then runs on the workers after
  // this returns. libFuzzer's leak check right after the input would find that work's memory
  // referenced only from a worker's stack while the worker runs on a fiber stack, which
  // LeakSanitizer does not scan, and report it as leaked: wait for it first.
  keep_device_open.synchronize_device();
  return 0;
}
