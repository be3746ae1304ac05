// Storage and the caching allocator behind it.
//
// Why cache: on this kind of machine the first touch of fresh memory costs
// about 10 µs per 4 KiB page, more than most kernels' arithmetic. A training
// step allocates the same sizes every step, so freed blocks are kept in
// per-size free lists and handed out again; steady-state steps then touch no
// new pages. The cache is process-wide and guarded by a mutex (allocation
// happens between kernels, not inside OpenMP loops).
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/tensor.hpp"

namespace sg {
namespace {

constexpr size_t kAlign = 64;  // a cache line and an AVX-512 vector
// Blocks above this size are returned to the system instead of cached:
// caching them could pin a lot of memory for one-off tensors.
constexpr size_t kMaxCachedBlock = size_t{256} << 20;
// Upper bound on all cached bytes together.
constexpr size_t kMaxCachedTotal = size_t{1} << 30;

struct Cache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free;  // rounded size -> blocks
  size_t cached_bytes = 0;
  ~Cache() {
    for (auto& [size, blocks] : free)
      for (void* p : blocks) std::free(p);
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: storages may die after static destructors run
  return *c;
}

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Storage::Storage(size_t n) : bytes(n) {
  size_t rounded = round_up(n == 0 ? 1 : n);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.free.find(rounded);
    if (it != c.free.end() && !it->second.empty()) {
      data = it->second.back();
      it->second.pop_back();
      c.cached_bytes -= rounded;
      return;
    }
  }
  data = std::aligned_alloc(kAlign, rounded);
  if (!data) fail("allocation of ", n, " bytes failed");
}

Storage::~Storage() {
  size_t rounded = round_up(bytes == 0 ? 1 : bytes);
  if (rounded <= kMaxCachedBlock) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.cached_bytes + rounded <= kMaxCachedTotal) {
      c.free[rounded].push_back(data);
      c.cached_bytes += rounded;
      return;
    }
  }
  std::free(data);
}

}  // namespace sg
