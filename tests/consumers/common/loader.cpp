// SPDX-License-Identifier: Apache-2.0
// loader PLUGIN [FILLER...]: loads each FILLER with dlopen, largest first, until the static TLS
// surplus is used up, then loads PLUGIN (which links devctx) with dlopen(RTLD_NOW | RTLD_LOCAL)
// and runs its devctx_consumer_plugin_run(). Not linked against devctx itself. Exits 0 and prints
// "PASSED ..." when the plugin loads and its kernel's results are right.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PLUGIN [FILLER...]\n", argv[0]);
    return 2;
  }
  int refused = 0;
  for (int i = 2; i < argc; ++i)
    if (dlopen(argv[i], RTLD_NOW | RTLD_LOCAL) == nullptr) {
      std::printf("filler refused: %s\n", dlerror());
      ++refused;
    }
  if (argc > 2 && refused == 0) {
    std::printf("FAILED the fillers did not use up the static TLS surplus: the test proves nothing\n");
    return 1;
  }
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::printf("FAILED dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  auto* run = reinterpret_cast<int (*)()>(dlsym(plugin, "devctx_consumer_plugin_run"));
  if (run == nullptr) {
    std::printf("FAILED dlsym(devctx_consumer_plugin_run): %s\n", dlerror());
    return 1;
  }
  if (run() != 0) return 1;
  std::printf(
      "PASSED plugin loaded with dlopen after the static TLS surplus was used up "
      "(%d of %d fillers refused) and its kernel's results are right\n",
      refused, argc - 2);
  return 0;
}
