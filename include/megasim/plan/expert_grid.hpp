#pragma once
// Megatron-Core's expert grid (MoE parallel folding): inside one pipeline stage the GPUs that
// the attention grid indexes tp + TP x (cp + CP x dp) are read again as
// etp + ETP x (ep + EP x edp), Megatron's default order (under pp-first placement Megatron
// requires the expert and dense pipeline groups to match, which this reading also assumes).
// The expert-parallel groups exchange tokens; the expert data-parallel groups reduce the routed
// experts' gradients and gather their parameters.
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/plan/placement.hpp"

namespace megasim {

// The GPUs of every EP group of `stage` (ETP x EDP groups of EP GPUs each), in group rank order.
std::vector<std::vector<int>> expert_parallel_groups(const Placement& placement, const JobSpec& job, int stage);

// The GPUs of every expert data-parallel group of `stage` (ETP x EP groups of EDP GPUs each),
// in group rank order: members are ETP x EP apart on the stage's index.
std::vector<std::vector<int>> expert_data_parallel_groups(const Placement& placement, const JobSpec& job,
                                                          int stage);

}  // namespace megasim
