#pragma once
// A minimal work-sharing loop for the planner and the sweep: `jobs` threads pull indices
// 0..n-1 from one atomic counter and call fn(i). Each index's result must go to its own slot
// (the caller's vector), so the outcome never depends on the thread count or the schedule.
#include <cstddef>
#include <functional>

namespace megasim {

// Number of worker threads to use: `requested` if > 0, else std::thread::hardware_concurrency
// (at least 1).
int resolve_jobs(int requested);

// Calls fn(i) for every i in [0, n) on up to `jobs` threads (the calling thread is one of
// them). `on_done(done, n)` runs after each finished index, serialised under a mutex (for a
// progress line); it may be empty. The first exception thrown by fn stops the loop (indices
// not yet started are skipped) and is rethrown on the calling thread.
void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn,
                  const std::function<void(std::size_t, std::size_t)>& on_done = {});

}  // namespace megasim
