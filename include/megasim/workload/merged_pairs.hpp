#pragma once
// The MoE exchanges' exposure of each pass of a stage's schedule under Megatron-Core's merged
// 1F1B step (overlap_moe_expert_parallel_comm), shared by the task graph and the analytic
// engine. Warm-up forwards and cool-down backwards run alone (ChunkCosts::fwd_ep_alone_s). The
// n-th steady forward is merged with the n-th steady backward (schedules.py: forward k + warm-up
// with backward k), and the pair overlaps min(Lf, Lb) of their layers
// (TransformerModelChunkSchedulePlan.run): the longer chunk's other layers run alone.
// Without that overlap the merged and alone figures are equal and every pass keeps its chunk's.
#include <vector>

#include "megasim/workload/schedule.hpp"
#include "megasim/workload/step_costs.hpp"

namespace megasim {

// Whether pass i of `passes` = stage_schedule(schedule, pp, vpp, m, stage, extra_warmup_passes)
// runs merged (a steady pass of the 1F1B schedule).
std::vector<bool> merged_passes(const StepCosts& costs, PipelineSchedule schedule, int stage,
                                const std::vector<ChunkPass>& passes);

// Each pass's exposure, parallel to `passes`; `merged` is merged_passes() of them.
std::vector<double> scheduled_ep_exposure_s(const StepCosts& costs, int stage, const std::vector<ChunkPass>& passes,
                                            const std::vector<bool>& merged);

}  // namespace megasim
