#pragma once
// The GPU behind a host that launches its kernels one by one: after the host has waited for the
// GPU to go idle (a device-to-host sync), the GPU can run an op only once the host has launched
// its first kernel, and finish it no earlier than the op's last launch plus that kernel. Where
// the host is slower than the kernels, the GPU idles. Used for dropless MoE passes, whose host
// waits for the token counts before the dispatch (pass_times.cpp).
#include <vector>

namespace megasim {

struct LaunchedOp {
  double gpu_s = 0;   // the op's time on the GPU (all its kernels)
  int launches = 1;   // host launches it takes
  double host_s_per_launch = 0;  // host time per launch
};

// The GPU's idle time over `ops` run in order from a host wait: the finish of the last op
// minus the sum of the ops' GPU times.
double gpu_idle_behind_host_s(const std::vector<LaunchedOp>& ops);

}  // namespace megasim
