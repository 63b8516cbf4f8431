// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/asan_options.cpp - the fuzzers' AddressSanitizer defaults, in builds that use it.
//
// Absurd allocation sizes are part of the op language: devctx must refuse them with
// devctx::Error (out_of_memory), so ASan's allocator has to return null for them as the system
// allocator does, instead of stopping the process. ASAN_OPTIONS from the environment still
// applies on top.
extern "C" const char* __asan_default_options();
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
