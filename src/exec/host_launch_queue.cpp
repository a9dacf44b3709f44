// The GPU idling behind a host that launches kernel by kernel (host_launch_queue.hpp).
#include "host_launch_queue.hpp"

#include <algorithm>

namespace megasim {

double gpu_idle_behind_host_s(const std::vector<LaunchedOp>& ops) {
  double host = 0;  // when the host has launched everything so far
  double gpu = 0;   // when the GPU has finished everything so far
  double busy = 0;
  for (const LaunchedOp& op : ops) {
    const double h = op.host_s_per_launch;
    const int n = std::max(1, op.launches);
    const double start = std::max(gpu, host + h);  // its first kernel launched
    host += n * h;
    gpu = std::max(start + op.gpu_s, host + op.gpu_s / n);  // its last kernel runs after its launch
    busy += op.gpu_s;
  }
  return std::max(0.0, gpu - busy);
}

}  // namespace megasim
