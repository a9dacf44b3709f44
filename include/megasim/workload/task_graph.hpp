#pragma once
// The task graph of one training step for one pipeline replica (DESIGN.md B1 `workload`):
// what each pipeline stage computes and communicates, in which order, and what waits for
// what. Pure: no engine, no network; the executor (exec/des_step.hpp) runs it.
//
// One graph describes every DP replica (their work is identical) and one representative
// TP/CP rank per stage (TP ranks of a stage do identical work; their exposed TP time is
// already inside ChunkCosts). Durations and bytes come only from StepCosts.
//
// Streams. Each stage has a compute stream (tasks run in `compute_order`, one at a time) and
// a DP communication stream (collectives run in `dp_order`, one at a time: NCCL serialises
// collectives of one communicator). PP transfers belong to no stream: each starts as soon as
// its dependencies are met (an async isend/irecv pair on the PP communicator).
//
// Pipeline communication, following Megatron-LM's p2p_communication.py:
//  * pp_overlap = false: Megatron's batched, blocking send+recv (batch_isend_irecv, then wait).
//    A stage's program is a sequence of groups separated by one exchange each: a single pass,
//    except in the interleaved 1F1B steady state, where a forward and a backward run and then
//    one exchange sends both outputs and receives both next inputs. A transfer moves once its
//    sender has finished the producing group and its receiver has finished the group before
//    the consuming one (NCCL p2p needs both sides posted); both stages' next groups wait for
//    every transfer of their exchange, so a stage is held up by the slower of its neighbours
//    (MegaScale §3.2: "can be blocked by the slower one"). GPipe (not a Megatron schedule)
//    only makes the sender's next pass wait for its send.
//  * pp_overlap = true (MegaScale §3.2): sends and receives are decoupled and asynchronous;
//    a transfer starts when its producer finishes and blocks nothing but its consumer.
//
// Data parallelism (ZeRO stage / SystemSpec::dp_overlap):
//  * ZeRO 0 (DDP): all-reduce of the gradients after the last backward, or per chunk after
//    the chunk's last backward with dp_overlap.
//  * ZeRO 1/2: reduce-scatter of gradients after the last backward, optimizer, then
//    all-gather of the updated parameters. With dp_overlap (MegaScale): per chunk, the
//    all-gather is issued at step start in consumption order and the chunk's first forward
//    waits for it (the first one overlaps data loading when dp_prefetch_first_all_gather);
//    the reduce-scatter is issued after the chunk's last backward.
//  * ZeRO 3 (per chunk, not per layer): before every forward and backward pass the chunk's
//    parameters are all-gathered, prefetched two passes ahead on the DP stream; gradients are
//    reduce-scattered after the chunk's last backward.
// GC skew (StepCosts::gc_skew_s, MegaScale §6.3): each stage's last gradient reduction is
// posted late by its slowest member (`launch_delay_s`), so the step waits for it.
// The optimizer of every stage waits for every stage's gradients: the global gradient-norm
// all-reduce of gradient clipping is a step-wide barrier (its time is in optimizer_s).
#include <cstdint>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/workload/step_costs.hpp"
#include "megasim/workload/schedule.hpp"

namespace megasim {

enum class TaskKind : std::uint8_t {
  DataLoad,
  Forward,
  Backward,
  PpTransfer,
  DpAllGather,
  DpReduceScatter,
  DpAllReduce,
  Optimizer,
  StepEnd
};
enum class TaskStream : std::uint8_t { Compute, DpComm, Network };

const char* to_string(TaskKind kind);
bool is_dp_collective(TaskKind kind);

using TaskIndex = std::uint32_t;

struct StepTask {
  TaskKind kind = TaskKind::Forward;
  TaskStream stream = TaskStream::Compute;
  int stage = 0;                 // PpTransfer: the sending stage
  int peer_stage = -1;           // PpTransfer: the receiving stage
  int chunk = -1;
  std::int64_t micro_batch = -1;
  // A pass split into DP buckets (system.dp_overlap_granularity bucket), and each bucket's
  // collective: which bucket of how many (0 of 0 when whole).
  int bucket = 0;
  int buckets = 0;
  // PpTransfer: the pass that produced what it carries (F activations, B gradients); a ZeRO-3
  // gather: the pass that consumes it. Names tell them apart in traces and deadlock reports.
  TaskKind for_pass = TaskKind::StepEnd;
  // Compute-stream time, split by what it is for the breakdown.
  double compute_s = 0;          // kernels
  double tp_exposed_s = 0;       // exposed TP communication inside the pass
  double cp_exposed_s = 0;       // exposed CP communication inside the pass
  double ep_exposed_s = 0;       // exposed MoE dispatch/combine inside the pass
  double pp_wait_s = 0;          // a merged 1F1B pair's wait for its pipeline receives
  double other_s = 0;            // launch overhead and expected straggler slow-down
  double straggler_s = 0;        // the straggler part of other_s (for the breakdown)
  double fixed_s = 0;            // data loading or optimizer
  // DP collectives: the slowest member posts the collective this long after its dependencies
  // are met (MegaScale §6.3: uneven Python GC pauses launch the last gradient reduction late).
  double launch_delay_s = 0;
  double bytes = 0;              // PpTransfer: per GPU; collectives: nccl-tests size
  // DP collectives: over the expert data-parallel groups (the routed experts' gradients and
  // parameters, StepCosts::edp_*) instead of the DP groups.
  bool expert_dp = false;
  std::vector<TaskIndex> deps;   // must finish before this task starts (besides stream order)
  double duration_s() const {
    return compute_s + tp_exposed_s + cp_exposed_s + ep_exposed_s + pp_wait_s + other_s + fixed_s;
  }
};

struct StepGraph {
  int stages = 1;
  int vpp = 1;
  std::int64_t micro_batches = 1;
  std::vector<StepTask> tasks;
  std::vector<std::vector<TaskIndex>> compute_order;  // [stage], program order
  std::vector<std::vector<TaskIndex>> dp_order;       // [stage], issue order
  std::string describe(TaskIndex t) const;            // e.g. "stage 2 F chunk 1 mb 5 bucket 2/4"
};

struct WorkloadOptions {
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int zero_stage = 1;
  bool dp_overlap = false;
  bool dp_prefetch_first_all_gather = false;
  // Without that prefetch, each stage's first parameter gather is issued by its first forward's
  // pre-hook, once that forward's inputs have arrived (Megatron-Core's overlap_param_gather
  // without align_param_gather); otherwise it waits only for the step's data load.
  bool dp_first_gather_at_first_forward = false;
  bool pp_overlap = false;
  bool reduce_every_micro_batch = false;  // gradients reduce-scattered after every backward pass
};

WorkloadOptions workload_options(const JobSpec& job);

// Throws InputError for an impossible schedule (see stage_schedule) and std::invalid_argument
// when `costs` is inconsistent (chunks not [pp][vpp]).
StepGraph build_step_graph(const StepCosts& costs, const WorkloadOptions& options);

}  // namespace megasim
