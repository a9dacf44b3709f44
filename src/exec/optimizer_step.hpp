#pragma once
// The optimizer step's kernel time on one GPU: a cost pass of its own (add_host_costs).
#include "megasim/config/specs.hpp"
#include "megasim/hw/hardware_profile.hpp"

namespace megasim {

// Optimizer step over this rank's shard (memory-bound multi-tensor kernels). Adam reads fp32
// master, m, v, grad and writes master, m, v and the 16-bit weights (30 B/param); LAMB adds a
// per-tensor norm pass reading weights and update (+8 B/param).
double optimizer_step_time_s(const JobSpec& job, const HardwareProfile& hw, int pipeline_stage = 0);

}  // namespace megasim
