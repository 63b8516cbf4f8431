// SPDX-License-Identifier: Apache-2.0
// tests/nvtx/nvtx_recorder.cpp - a minimal NVTX injection library for the tests: what a profiler
// such as Nsight Systems sees of a program's NVTX ranges, without the profiler. NVTX3 (header
// only, in the program) loads the library named by NVTX_INJECTION64_PATH at its first call and
// calls its InitializeInjectionNvtx2 with the export-table getter; from the CORE and CORE2
// callback tables we take over range push/pop (plain and per domain) and domain creation, and
// append one line per call to the file named by DEVCTX_NVTX_RECORD:
//
//   push<TAB>DOMAIN<TAB>MESSAGE        DOMAIN "(default)" for the plain nvtxRangePush*
//   pop<TAB>DOMAIN
//
// Each line is one write(2) to a file opened with O_APPEND, so lines of several threads never
// mix, and the file is complete whenever the program reads it. Only ASCII messages are written
// as text; other message types are written as "(non-ASCII message)".
#include <fcntl.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include <cstdlib>
#include <string>

namespace {

int out_fd = -1;

struct Domain {
  std::string name;
};

void write_line(const std::string& line) {
  if (out_fd < 0) return;
  const std::string text = line + '\n';
  // One write: O_APPEND places it whole at the end. A short write would only cut this line.
  [[maybe_unused]] const ssize_t written = ::write(out_fd, text.data(), text.size());
}

std::string domain_name(nvtxDomainHandle_t domain) {
  return domain == nullptr ? "(default)" : reinterpret_cast<const Domain*>(domain)->name;
}

std::string message_of(const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr) return "(no attributes)";
  if (attributes->messageType == NVTX_MESSAGE_TYPE_ASCII && attributes->message.ascii != nullptr)
    return attributes->message.ascii;
  return "(non-ASCII message)";
}

// Range depth per thread, returned by push and pop as NVTX's own implementations do.
thread_local int depth = 0;

int push_line(nvtxDomainHandle_t domain, const std::string& message) {
  write_line("push\t" + domain_name(domain) + '\t' + message);
  return depth++;
}

int pop_line(nvtxDomainHandle_t domain) {
  write_line("pop\t" + domain_name(domain));
  return depth > 0 ? --depth : -1;
}

int NVTX_API range_push_a(const char* message) { return push_line(nullptr, message != nullptr ? message : ""); }
int NVTX_API range_push_ex(const nvtxEventAttributes_t* attributes) {
  return push_line(nullptr, message_of(attributes));
}
int NVTX_API range_pop() { return pop_line(nullptr); }

int NVTX_API domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  return push_line(domain, message_of(attributes));
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t domain) { return pop_line(domain); }

nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  // Kept for the life of the process: NVTX has no promise that a domain is destroyed.
  auto* domain = new Domain{name != nullptr ? name : ""};
  write_line(std::string("domain\t") + domain->name);
  return reinterpret_cast<nvtxDomainHandle_t>(domain);
}

/// Sets slot `id` of a callback table to `fn`, when the program's NVTX has that slot.
template <class Fn>
void install(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  // `size` is the largest id the table has (GetModuleFunctionTable's out_size).
  if (table != nullptr && id <= size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const char* path = std::getenv("DEVCTX_NVTX_RECORD");
  if (get_table == nullptr || path == nullptr || *path == '\0') return 0;  // 0: NVTX unloads us
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  out_fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) return 0;

  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 ||
      callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) == 0)
    return 0;
  install(core, core_size, NVTX_CBID_CORE_RangePushA, &range_push_a);
  install(core, core_size, NVTX_CBID_CORE_RangePushEx, &range_push_ex);
  install(core, core_size, NVTX_CBID_CORE_RangePop, &range_pop);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_range_push_ex);
  install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &domain_range_pop);
  write_line("init");
  return 1;
}
