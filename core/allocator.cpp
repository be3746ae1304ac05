// Storage and the caching allocator behind it.
//
// Why cache: on this kind of machine the first touch of fresh memory costs
// about 10 µs per 4 KiB page, more than most kernels' arithmetic. A training
// step allocates the same sizes every step, so freed blocks are kept in
// per-size free lists and handed out again; steady-state steps then touch no
// new pages.
//
// Two levels. A thread keeps the blocks it allocated and freed itself (up to
// kMaxThreadCached bytes): such a block is likely still in its core's cache,
// and handing it to a thread on another core instead makes both cores trade
// the block's lines (trainings side by side, data-parallel workers). A block
// freed by another thread than the one that allocated it (gradients a worker
// makes and the main thread drops), and what a thread cannot keep, go to the
// process-wide cache, guarded by a mutex, which every thread draws from when
// its own has no block of the size; so blocks that move between threads flow
// back to where they are allocated again instead of piling up where they are
// freed. A thread's blocks go to the process-wide cache when it ends.
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
// Upper bound on the process-wide cache's bytes, and on each thread's own.
constexpr size_t kMaxCachedTotal = size_t{1} << 30;
constexpr size_t kMaxThreadCached = size_t{64} << 20;

struct FreeLists {
  std::unordered_map<size_t, std::vector<void*>> blocks;  // rounded size -> blocks
  size_t bytes = 0;

  void* take(size_t rounded) {
    auto it = blocks.find(rounded);
    if (it == blocks.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    bytes -= rounded;
    return p;
  }
  void put(size_t rounded, void* p) {
    blocks[rounded].push_back(p);
    bytes += rounded;
  }
};

struct Shared {
  std::mutex mu;
  FreeLists lists;
};

Shared& shared() {
  static Shared* s = new Shared;  // leaked on purpose: storages may die after static destructors run
  return *s;
}

// Hands p to the process-wide cache, or to the system when that is full.
void give_back(size_t rounded, void* p) {
  Shared& s = shared();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.lists.bytes + rounded <= kMaxCachedTotal) {
      s.lists.put(rounded, p);
      return;
    }
  }
  std::free(p);
}

// Set when the calling thread's cache is destroyed (the thread is ending):
// storages freed after that, by destructors that run later in the thread,
// go straight to the process-wide cache. A plain bool has no destructor, so
// it can still be read then.
thread_local bool t_local_gone = false;

struct Local {
  FreeLists lists;
  ~Local() {
    t_local_gone = true;
    for (auto& [rounded, blocks] : lists.blocks)
      for (void* p : blocks) give_back(rounded, p);
  }
};

Local* local() {
  if (t_local_gone) return nullptr;
  thread_local Local l;
  return &l;
}

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Storage::Storage(size_t n) : bytes(n) {
  size_t rounded = round_up(n == 0 ? 1 : n);
  Local* l = local();
  owner = l;  // compared, never followed: a new thread may reuse an ended one's address, and just keeps the block
  if (l && (data = l->lists.take(rounded))) return;
  {
    Shared& s = shared();
    std::lock_guard<std::mutex> lock(s.mu);
    if ((data = s.lists.take(rounded))) return;
  }
  data = std::aligned_alloc(kAlign, rounded);
  if (!data) fail("allocation of ", n, " bytes failed");
}

Storage::~Storage() {
  size_t rounded = round_up(bytes == 0 ? 1 : bytes);
  if (rounded > kMaxCachedBlock) {
    std::free(data);
    return;
  }
  Local* l = local();
  if (l && l == owner && l->lists.bytes + rounded <= kMaxThreadCached) {
    l->lists.put(rounded, data);
    return;
  }
  give_back(rounded, data);
}

}  // namespace sg
