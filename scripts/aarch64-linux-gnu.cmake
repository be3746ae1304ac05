# CMake toolchain for the aarch64 cross build (scripts/cross-aarch64.sh):
# Debian's g++-aarch64-linux-gnu, arm64 libraries from multiarch
# (/usr/lib/aarch64-linux-gnu), programs run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Test discovery (catch_discover_tests) and ctest run the test programs
# through this; -L: the loader, libc and libstdc++ of the cross toolchain
# (/usr/aarch64-linux-gnu/lib), other libraries from multiarch (BLIS).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
# Headers and libraries of the target only; programs (cmake, qemu) of the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
