#pragma once
// The one way kernels use OpenMP threads. Private to the library's sources
// (compiled with -fopenmp); not part of the umbrella header. Compiled
// without OpenMP (scripts/fuzz.sh builds a few library files alone), every
// loop runs on the calling thread.
#ifdef _OPENMP
#include <omp.h>
#endif

#include <cstdint>
#include <exception>

#include "core/runtime.hpp"

namespace sg {

// for (i = 0; i < n; ++i) body(i): spread over the OpenMP threads when
// `parallel` (the work is big enough to pay for a parallel region), else a
// plain loop. Why not `#pragma omp parallel for if (cond)`: libgomp enters
// the region even when cond is false, about 2 µs each time, more than a
// small tensor's arithmetic (it was 85% of the time of a chain of
// 64-element ops). Iterations go to threads in fixed contiguous blocks,
// OpenMP's static schedule: n / team each, the first n % team threads one
// more. The count is passed to every region: num_threads() is the
// process's, while OpenMP's own setting would be the calling thread's.
// Inside another parallel region the loop stays on its thread (no nested
// teams).
//
// An exception must not leave an OpenMP region (it calls std::terminate):
// each thread runs its block inside one try block, the first exception
// thrown on any thread is kept (the thread that threw stops its block, the
// others finish theirs), and it is rethrown on the calling thread after the
// region, so a parallel loop reports errors as a plain one does. One try per
// thread, not per iteration: the block's loop stays a plain loop, which the
// compiler vectorises when the body is small (a try and a stop flag in
// every iteration made a loop of one-element bodies 4 times slower).
template <class F>
inline void parallel_for(int64_t n, bool parallel, F&& body) {
#ifdef _OPENMP
  const int threads = parallel && n > 1 && !omp_in_parallel() ? num_threads() : 1;
  if (threads > 1) {
    std::exception_ptr error;
#pragma omp parallel num_threads(threads)
    {
      const int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t base = n / team, extra = n % team;
      const int64_t begin = t * base + (t < extra ? t : extra), end = begin + base + (t < extra ? 1 : 0);
      try {
        for (int64_t i = begin; i < end; ++i) body(i);
      } catch (...) {
#pragma omp critical(sg_parallel_for_error)
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace sg
