// SPDX-License-Identifier: Apache-2.0
// A shared module holding FILLER_BYTES of initial-exec thread-local storage: loaded with dlopen, it
// takes that much of the process's static TLS surplus (or fails to load when too little is left).
// loader.cpp loads such modules until the surplus is used up, as a process with many extension
// modules may have done before it loads devctx.
__attribute__((tls_model("initial-exec"))) thread_local char devctx_consumer_tls_filler[FILLER_BYTES];

extern "C" __attribute__((visibility("default"))) char* devctx_consumer_tls_filler_touch() {
  return devctx_consumer_tls_filler;
}
