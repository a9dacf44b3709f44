#include "megasim/sweep/parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace megasim {

int resolve_jobs(int requested) {
  if (requested > 0) return requested;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn,
                  const std::function<void(std::size_t, std::size_t)>& on_done) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;  // guards first_error, done and on_done
  std::exception_ptr first_error;
  std::size_t done = 0;

  auto worker = [&] {
    for (;;) {
      if (failed.load()) return;
      const std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mu);
        if (!first_error) first_error = std::current_exception();
        failed.store(true);
        return;
      }
      const std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (on_done) on_done(done, n);
    }
  };

  const auto threads = static_cast<std::size_t>(std::max(1, jobs));
  std::vector<std::thread> pool;
  const std::size_t extra = std::min(threads, std::max<std::size_t>(n, 1)) - 1;
  pool.reserve(extra);
  for (std::size_t t = 0; t < extra; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace megasim
