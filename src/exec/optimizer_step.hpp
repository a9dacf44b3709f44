#pragma once
// The optimizer step's kernel time on one GPU: a cost pass of its own (add_host_costs).
#include "megasim/config/specs.hpp"
#include "megasim/hw/hardware_profile.hpp"

namespace megasim {

// Optimizer step over this rank's shard (memory-bound kernels, system.optimizer_implementation).
// Fused Adam reads FP32 master, m, v, grad and writes master, m, v and (outside PyTorch FSDP)
// the 16-bit weights (30 B/param); PyTorch's foreach / for-loop AdamW and Composer's
// DecoupledAdamW pass over the shard once per arithmetic step (80 / 88 B/param); LAMB
// (fused only) adds a per-tensor norm pass reading weights and update (+8 B/param).
double optimizer_step_time_s(const JobSpec& job, const HardwareProfile& hw, int pipeline_stage = 0);

}  // namespace megasim
