# SPDX-License-Identifier: Apache-2.0
# Conan 2 recipe for devctx, kept beside the source it packages (../..): `conan create
# packaging/conan -s compiler.cppstd=20` builds the package from this checkout and builds and
# runs test_package/ against it. The version is read from include/devctx/version.hpp.
#
# Consumers use devctx's own CMake package files (find_package(devctx), devctx_add_kernels),
# which the package installs, rather than files Conan would generate without
# devctx_add_kernels: cmake_find_mode is "none" and the package's root is a build directory.
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load

SOURCE_ROOT = os.path.join("..", "..")


class DevctxConan(ConanFile):
    name = "devctx"
    license = "Apache-2.0"
    description = "Host/device GPU programming with one kernel source for CUDA and CPU"
    topics = ("gpu", "cuda", "kernels", "cpu")
    package_type = "library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"shared": [True, False], "fPIC": [True, False], "cuda": [True, False]}
    # CUDA off by default: a package built with it needs nvcc wherever it is consumed.
    default_options = {"shared": False, "fPIC": True, "cuda": False}

    def set_version(self):
        header = load(self, os.path.join(self.recipe_folder, SOURCE_ROOT, "include", "devctx", "version.hpp"))
        parts = [re.search(rf"#define DEVCTX_VERSION_{part} +(\d+)", header).group(1)
                 for part in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def export_sources(self):
        root = os.path.join(self.recipe_folder, SOURCE_ROOT)
        for pattern in ("CMakeLists.txt", "cmake/*", "include/*", "src/*", "tools/fission/*", "LICENSE", "README.md",
                        "CHANGELOG.md"):
            copy(self, pattern, src=root, dst=self.export_sources_folder)

    def config_options(self):
        if self.settings.os == "Windows":
            del self.options.fPIC

    def configure(self):
        if self.options.shared:
            self.options.rm_safe("fPIC")

    def validate(self):
        check_min_cppstd(self, 20)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        toolchain = CMakeToolchain(self)
        toolchain.cache_variables["DEVCTX_ENABLE_CUDA"] = bool(self.options.cuda)
        toolchain.cache_variables["DEVCTX_INSTALL"] = True
        for part in ("TESTS", "EXAMPLES", "BENCH", "TOOLS"):
            toolchain.cache_variables[f"DEVCTX_BUILD_{part}"] = False
        toolchain.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        CMake(self).install()

    def package_info(self):
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.set_property("pkg_config_name", "devctx")
        self.cpp_info.builddirs = ["."]
        self.cpp_info.libs = ["devctx"]
        self.cpp_info.system_libs = ["pthread"]
        if not self.options.shared:
            # libcrypto (SHA-256 of runtime-compiled kernels' cache) and dlopen (their shared objects).
            self.cpp_info.system_libs += ["crypto", "dl"]
        if self.options.cuda and not self.options.shared:
            self.cpp_info.system_libs += ["rt"]
        # For generators other than CMake's (PkgConfigDeps, ...), as devctx's own devctx.pc: kernel
        # frames larger than a CPU fiber stack's guard fault in the guard (the stack-overflow report).
        if str(self.settings.compiler) in ("gcc", "clang"):
            self.cpp_info.cxxflags = ["-fstack-clash-protection"]
