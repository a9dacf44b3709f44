#include "megasim/exec/analytic_step.hpp"

#include <algorithm>
#include <cstddef>

#include "megasim/workload/merged_pairs.hpp"
#include "megasim/workload/schedule.hpp"
#include "megasim/workload/task_graph.hpp"

namespace megasim {

namespace {

// Per-micro-batch time of one stage with its exposed communication, and the parts of it.
struct StageLoad {
  double compute_s = 0;
  double tp_s = 0;
  double cp_s = 0;
  double ep_s = 0;
  double pp_s = 0;
  double launch_s = 0;
  double total_s() const { return compute_s + tp_s + cp_s + ep_s + pp_s + launch_s; }
};

// Share of a stage's passes each way that Megatron-Core's merged 1F1B runs alone: its warm-up
// forwards (and as many cool-down backwards) of all m * v; 0 without that schedule.
double alone_share(const StepCosts& c, int stage) {
  if (c.extra_warmup_passes == 0) return 0.0;
  const double total = static_cast<double>(c.micro_batches * c.vpp);
  return static_cast<double>(warmup_passes(c.pp, c.vpp, c.micro_batches, stage, c.extra_warmup_passes)) / total;
}

StageLoad stage_load(const std::vector<ChunkCosts>& chunks, const StepCosts& c, bool pp_overlap,
                     int stage) {
  StageLoad load;
  const double alone = alone_share(c, stage);
  for (const auto& ch : chunks) {
    load.compute_s += ch.fwd_compute_s + ch.bwd_compute_s;
    load.tp_s += ch.fwd_tp_exposed_s + ch.bwd_tp_exposed_s;
    load.cp_s += ch.fwd_cp_exposed_s + ch.bwd_cp_exposed_s;
    if (c.extra_warmup_passes == 0) load.ep_s += ch.fwd_ep_exposed_s + ch.bwd_ep_exposed_s;
    load.pp_s += (1.0 - alone) * ch.merged_pp_wait_s;
    load.launch_s += 2.0 * c.launch_overhead_per_chunk_s;
  }
  if (c.extra_warmup_passes != 0) {
    // Megatron-Core's merged 1F1B: each pass at the exposure the event engine gives it (lone
    // warm-up and cool-down passes, steady pairs of unequal chunks; merged_pairs.hpp), per
    // micro-batch.
    const auto passes = stage_schedule(PipelineSchedule::OneFOneB, c.pp, c.vpp, c.micro_batches, stage,
                                       c.extra_warmup_passes);
    const auto merged = merged_passes(c, PipelineSchedule::OneFOneB, stage, passes);
    double ep_s = 0;
    for (const double e : scheduled_ep_exposure_s(c, stage, passes, merged)) ep_s += e;
    load.ep_s = ep_s / static_cast<double>(c.micro_batches);
  }
  if (c.pp > 1 && !pp_overlap) {
    // Megatron's batched, blocking isend/irecv: every chunk pass (forward and backward) waits
    // for its boundary transfer. The first stage's first chunk receives nothing in forward
    // and the last stage's last chunk sends nothing, so a stage crosses 2v boundaries per
    // micro-batch except at the two ends of the virtual pipeline.
    double boundaries = 2.0 * c.vpp;
    if (stage == 0) boundaries -= 1.0;
    if (stage == c.pp - 1) boundaries -= 1.0;
    load.pp_s += boundaries * c.p2p_time_s;
  }
  return load;
}

// Communication comm_s split into n buckets released evenly across a pass of pass_s (or
// needed evenly across it): what sticks out past the pass. The serial stream ends either one
// bucket after the last release or comm_s after the first, whichever is later.
double bucketed_exposed_s(double comm_s, double pass_s, int n) {
  const double buckets = static_cast<double>(std::max(1, n));
  return std::max(comm_s / buckets, comm_s - pass_s * (buckets - 1.0) / buckets);
}

// Forward compute the first stage runs before its first backward: Megatron's warm-up of
// 2(p-1) + (v-1) p chunk forwards when interleaved, p-1 stage forwards otherwise, plus the
// first steady-state forward, at most all m of them. Gradients reduced every micro-batch
// cannot start before it.
double warmup_forward_s(const StepCosts& c) {
  const auto& chunks = c.chunks.front();
  double fwd_s = 0;
  for (const auto& ch : chunks) fwd_s += ch.fwd_compute_s;
  const double v = static_cast<double>(c.vpp);
  const double m = static_cast<double>(c.micro_batches);
  const double p = static_cast<double>(c.pp);
  if (c.vpp > 1) return std::min(m * v, 2.0 * (p - 1.0) + (v - 1.0) * p + 1.0) * fwd_s / v;
  return std::min(m, p) * fwd_s;
}

// The slowest stage sets the steady-state pace of the whole pipeline.
StageLoad slowest_stage(const StepCosts& c, bool pp_overlap) {
  StageLoad worst;
  for (std::size_t s = 0; s < c.chunks.size(); ++s) {
    const StageLoad l = stage_load(c.chunks[s], c, pp_overlap, static_cast<int>(s));
    if (l.total_s() > worst.total_s()) worst = l;
  }
  return worst;
}

// Chunk 0 with the largest share of its stage's DP bytes over stages: its backward ends the
// step (its reduce-scatter is the exposed one) and its forward starts it (the first gather).
struct FirstChunk {
  const ChunkCosts* chunk;
  double share;
};
FirstChunk first_chunk_of_step(const StepCosts& c) {
  FirstChunk f{&c.chunks.front().front(), 0.0};
  for (std::size_t s = 0; s < c.chunks.size(); ++s) {
    const double share = c.dp_share(static_cast<int>(s), 0);
    if (share > f.share) f = {&c.chunks[s].front(), share};
  }
  return f;
}

// DP communication left exposed and hidden behind compute over the step.
struct DpTime {
  double exposed_s = 0;
  double hidden_s = 0;
};

// Data parallelism. Without overlap the gradient reduction follows the last backward and
// the parameter all-gather follows the optimizer (ZeRO >= 1). With MegaScale's overlap
// each chunk's collectives hide behind other chunks' compute; only the reduce-scatter of the
// chunk whose backward comes last and, unless prefetched under data loading, the all-gather
// of the chunk whose forward comes first stay exposed: chunk 0 both times, about 1/v of the
// bytes each (MegaScale §3.2: "a factor of 1/(2*vpp_size)"), more on the embedding's stage.
DpTime dp_time(const JobSpec& job, const StepCosts& c, double pipeline_busy_s) {
  const auto& sys = job.system;
  const double m = static_cast<double>(c.micro_batches);
  const FirstChunk first = first_chunk_of_step(c);
  // Gradients reduced every micro-batch: m reductions a step, each after its chunk's backward
  // on the DP stream; all but the last hide behind the compute that follows the first
  // backward while the stream keeps up.
  const bool every_mb = gradients_reduced_every_micro_batch(job);
  const double reductions_s = (every_mb ? m : 1.0) * c.dp_reduce_time_s;
  const double earlier_reductions_s = reductions_s - c.dp_reduce_time_s;
  const double after_warmup_busy_s = std::max(0.0, pipeline_busy_s - warmup_forward_s(c));
  const double reductions_left_s = std::max(0.0, earlier_reductions_s - after_warmup_busy_s);
  DpTime t{reductions_s + c.dp_gather_time_s, 0.0};
  const int n = first.chunk->dp_buckets;
  if (job.parallel.zero_stage == 3 && c.has_dp_collectives()) {
    // ZeRO-3 / FSDP re-gathers every chunk's parameters before each forward and backward
    // pass of every micro-batch (2m full gathers per step), prefetched ahead of the pass: the
    // gathers hide behind compute while they take less time than it, except the first one;
    // the gradients' reduce-scatter follows each chunk's last backward as with DP overlap.
    const double one_gather_s = c.dp_gather_time_s / 2.0;  // StepCosts counts forward + backward
    const double gathers_s = 2.0 * m * one_gather_s;
    // With gradient buckets the first gather exposes one bucket and the reduce-scatter runs
    // beside the chunk's last backward.
    t.exposed_s = std::max({0.0, gathers_s + earlier_reductions_s - pipeline_busy_s, reductions_left_s}) +
                  one_gather_s * first.share / n +
                  bucketed_exposed_s(c.dp_reduce_time_s * first.share, first.chunk->bwd_s(), n);
    t.hidden_s = gathers_s + reductions_s - t.exposed_s;
  } else if ((sys.dp_overlap || every_mb) && c.has_dp_collectives()) {
    // Reductions overlapped with the backward (by chunk or bucket, and every micro-batch when
    // so reduced): what the stream cannot hide, then the last one's tail. The parameters are
    // gathered once a step: overlapped before each chunk's first forward with dp_overlap
    // (nothing exposed when prefetched), after the optimizer otherwise.
    // Where each stage's first forward issues its own gather (workload_options), the later
    // stages' whole gathers (one bucket each) hold up the pipeline's fill one after another.
    const double later_stages_s =
        workload_options(job).dp_first_gather_at_first_forward ? (c.pp - 1) * c.dp_gather_time_s : 0.0;
    const double gather_exposed_s =
        !sys.dp_overlap ? c.dp_gather_time_s
        : sys.dp_prefetch_first_all_gather
            ? 0.0
            : bucketed_exposed_s(c.dp_gather_time_s * first.share, first.chunk->fwd_s(), n) + later_stages_s;
    t.exposed_s = reductions_left_s +
                  bucketed_exposed_s(c.dp_reduce_time_s * first.share, first.chunk->bwd_s(), n) +
                  gather_exposed_s;
    // The later stages' waits are their own gathers, not stage 0's: they hide none of it.
    t.hidden_s = std::max(0.0, reductions_s + c.dp_gather_time_s - (t.exposed_s - later_stages_s));
  }
  return t;
}

}  // namespace

StepReport estimate_step_analytic(const JobSpec& job, const StepCosts& c) {
  const double m = static_cast<double>(c.micro_batches);
  const StageLoad worst = slowest_stage(c, pipeline_transfers_overlap(job));
  const double pace_s = worst.total_s();

  // Fill and drain: (p-1) chunk passes of forward+backward, divided by v when interleaved,
  // plus one boundary transfer per hop even when transfers overlap compute.
  const double bubble_s = c.pp > 1 ? (c.pp - 1) * pace_s / c.vpp : 0.0;
  const double fill_transfer_s = c.pp > 1 ? 2.0 * (c.pp - 1) * c.p2p_time_s : 0.0;

  const double pipeline_busy_s = m * worst.compute_s;
  const DpTime dp = dp_time(job, c, pipeline_busy_s);
  // Hidden communication is not free: its kernels take SMs from compute, which runs 1 + s times
  // slower while they do; a pass whose kernels are a share f of its time stretches by 1 + s*f.
  // Over t seconds of overlap the pass gets t / (1 + s*f) seconds of work done, so the step
  // grows by t * s*f / (1 + s*f): the event engine's stretch, in closed form.
  const double pass_s = worst.compute_s + worst.tp_s + worst.cp_s + worst.ep_s + worst.launch_s;
  const double slow = pass_s > 0 ? c.dp_overlap_compute_slowdown * worst.compute_s / pass_s : 0.0;
  const double contention_s = slow / (1.0 + slow) * std::min(dp.hidden_s, pipeline_busy_s);

  const double straggler_s = c.straggler_slowdown * (m * pace_s + bubble_s);

  StepReport r;
  r.engine = "analytic";
  auto& b = r.breakdown;
  b.compute_s = m * worst.compute_s;
  b.exposed_tp_comm_s = m * worst.tp_s;
  b.exposed_cp_comm_s = m * worst.cp_s;
  b.exposed_ep_comm_s = m * worst.ep_s;
  b.exposed_pp_comm_s = m * worst.pp_s + fill_transfer_s;
  b.exposed_dp_comm_s = dp.exposed_s + contention_s + c.gc_skew_s;
  b.pipeline_bubble_s = bubble_s;
  b.optimizer_s = c.optimizer_s;
  b.data_loading_s = c.data_loading_s;
  b.other_s = m * worst.launch_s + straggler_s;
  b.straggler_s = straggler_s;
  r.step_time_s = b.total_s();
  return r;
}

}  // namespace megasim
