#pragma once
// Pipeline schedules: the order in which one pipeline stage runs its forward and backward
// chunk passes, following Megatron-LM's schedules.py (Narayanan et al., SC'21).
//
//  * GPipe: every forward (chunk by chunk, micro-batch by micro-batch), then every backward
//    in reverse chunk order. Same bubble as 1F1B, m activations in flight.
//  * 1F1B (PipeDream-Flush), v = 1: stage s runs w = min(p - s - 1, m) warm-up forwards,
//    then m - w (forward, backward) pairs, then w cool-down backwards.
//  * Interleaved 1F1B, v > 1: virtual micro-batch k (0 <= k < m*v) is micro-batch
//    (k / (p*v)) * p + k % p of chunk (k / p) % v in forward, and of chunk v - 1 - (k / p) % v
//    in backward. Warm-up is (p - s - 1) * 2 + (v - 1) * p passes (all m*v when m == p),
//    then 1F1B on the virtual passes, then cool-down. Needs m to be a multiple of p.
//  * Megatron-Core's merged 1F1B (overlap_moe_expert_parallel_comm) runs each steady-state
//    forward and backward as one merged step and adds one warm-up forward so the two are always
//    independent (schedules.py get_pp_rank_microbatches; combined_1f1b.py for PP 1):
//    extra_warmup = 1. The warm-up forwards and cool-down backwards run alone.
#include <cstdint>
#include <vector>

namespace megasim {

enum class PipelineSchedule { OneFOneB, GPipe };  // OneFOneB means interleaved when v > 1

struct ChunkPass {
  bool forward = true;
  int chunk = 0;            // model chunk on this stage (0..v-1)
  std::int64_t micro_batch = 0;
  friend bool operator==(const ChunkPass&, const ChunkPass&) = default;
};

// The compute order of `stage` (0..p-1). Throws InputError for an interleaved schedule whose
// micro-batch count is not a multiple of p, and std::invalid_argument for p, v or m < 1.
std::vector<ChunkPass> stage_schedule(PipelineSchedule schedule, int p, int v, std::int64_t m,
                                      int stage, int extra_warmup = 0);

// Warm-up forward passes of `stage` in the (interleaved) 1F1B schedule, with `extra_warmup`
// more (at most all m * v).
std::int64_t warmup_passes(int p, int v, std::int64_t m, int stage, int extra_warmup = 0);

}  // namespace megasim
