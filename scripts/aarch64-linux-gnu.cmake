# CMake toolchain for the aarch64 cross build (scripts/cross-aarch64.sh):
# Debian's g++-aarch64-linux-gnu, arm64 libraries from multiarch
# (/usr/lib/aarch64-linux-gnu), programs run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Test discovery (catch_discover_tests) and ctest run the test programs
# through this; -L: the loader of the cross toolchain. LD_LIBRARY_PATH puts
# its libc and libstdc++ (/usr/aarch64-linux-gnu/lib) before multiarch's
# (BLIS, libgomp): without it the loader finds multiarch's libc6:arm64 first
# through the host's ld.so.cache, a different glibc build than the loader's,
# and the first thread a program starts never runs (a std::thread or an
# OpenMP region hangs).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib:/usr/lib/aarch64-linux-gnu)
# Headers and libraries of the target only; programs (cmake, qemu) of the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
