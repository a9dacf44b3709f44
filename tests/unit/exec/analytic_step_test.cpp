// Textbook checks of the analytic estimator: StepCosts built by hand, expected step times
// derived in the comments.
#include <gtest/gtest.h>

#include "megasim/exec/analytic_step.hpp"

#include <algorithm>

#include "megasim/workload/merged_pairs.hpp"
#include "megasim/workload/schedule.hpp"

namespace megasim {
namespace {

// p stages x v chunks, each chunk 1 ms forward and 2 ms backward, no communication.
StepCosts uniform_costs(int p, int v, std::int64_t m) {
  StepCosts c;
  c.pp = p;
  c.vpp = v;
  c.micro_batches = m;
  c.chunks.assign(static_cast<std::size_t>(p), std::vector<ChunkCosts>(static_cast<std::size_t>(v)));
  for (auto& stage : c.chunks) {
    for (auto& ch : stage) {
      ch.layers = 1;
      ch.fwd_compute_s = 1e-3 / v;
      ch.bwd_compute_s = 2e-3 / v;
    }
  }
  return c;
}

JobSpec job_with(bool pp_overlap, bool dp_overlap, bool prefetch, int vpp = 1) {
  JobSpec j;
  j.parallel.virtual_pipeline_model_parallel_size = vpp;
  j.system.pp_overlap = pp_overlap;
  j.system.dp_overlap = dp_overlap;
  j.system.dp_prefetch_first_all_gather = prefetch;
  return j;
}

TEST(AnalyticStep, OneFOneBBubbleIsPMinusOneOverMPlusPMinusOneTextbook) {
  // p=4, m=8, t_f+t_b = 3 ms per micro-batch per stage: step = (m + p - 1) * 3 ms = 33 ms,
  // bubble = (p-1) * 3 ms = 9 ms = (p-1)/(m+p-1) of the step.
  const auto r = estimate_step_analytic(job_with(true, false, false), uniform_costs(4, 1, 8));
  EXPECT_NEAR(r.step_time_s, 33e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.pipeline_bubble_s / r.step_time_s, 3.0 / 11.0, 1e-12);
}

TEST(AnalyticStep, InterleavingDividesTheBubbleByVTextbook) {
  // Same work split over v=2 chunks per stage: bubble = (p-1) * 3 ms / 2 = 4.5 ms.
  const auto r = estimate_step_analytic(job_with(true, false, false), uniform_costs(4, 2, 8));
  EXPECT_NEAR(r.breakdown.pipeline_bubble_s, 4.5e-3, 1e-12);
  EXPECT_NEAR(r.step_time_s, 24e-3 + 4.5e-3, 1e-12);
}

TEST(AnalyticStep, BlockingPipelineTransfersAreExposedTextbook) {
  // p=2, v=1, m=4, p2p 0.1 ms. Without overlap a stage crosses 2v boundaries per micro-batch
  // minus one at each end of the pipeline: stage 0 and stage 1 each expose 1 transfer per
  // micro-batch -> 4 * 0.1 ms, plus 2(p-1) = 2 fill transfers = 0.2 ms.
  auto c = uniform_costs(2, 1, 4);
  c.p2p_time_s = 1e-4;
  const auto r = estimate_step_analytic(job_with(false, false, false), c);
  EXPECT_NEAR(r.breakdown.exposed_pp_comm_s, 4e-4 + 2e-4, 1e-12);
  // pp_overlap without virtual stages: Megatron-Core's plain 1F1B blocks anyway.
  const auto o = estimate_step_analytic(job_with(true, false, false), c);
  EXPECT_NEAR(o.breakdown.exposed_pp_comm_s, 4e-4 + 2e-4, 1e-12);
  // Interleaved (v = 2) with overlap only the 2(p-1) fill transfers stay exposed.
  auto iv = uniform_costs(2, 2, 4);
  iv.p2p_time_s = 1e-4;
  const auto io = estimate_step_analytic(job_with(true, false, false, 2), iv);
  EXPECT_NEAR(io.breakdown.exposed_pp_comm_s, 2e-4, 1e-12);
}

// DP 4 with a 0.6 s reduce-scatter and a 0.6 s all-gather.
StepCosts dp_costs(int p, int v, std::int64_t m) {
  auto c = uniform_costs(p, v, m);
  c.dp = 4;
  c.dp_reduce_time_s = 0.6;
  c.dp_gather_time_s = 0.6;
  return c;
}
double exposed_dp_s(const StepCosts& c, bool overlap, bool prefetch) {
  return estimate_step_analytic(job_with(true, overlap, prefetch), c).breakdown.exposed_dp_comm_s;
}

TEST(AnalyticStep, DpOverlapLeavesOneOverTwoVExposedTextbook) {
  // v = 6. No overlap: 1.2 s exposed. Overlap with prefetch: only the last chunk's
  // reduce-scatter, 0.6/6 = 0.1 s = 1.2 s / (2 v) (MegaScale 3.2).
  const auto c = dp_costs(2, 6, 12);
  EXPECT_NEAR(exposed_dp_s(c, false, false), 1.2, 1e-12);
  EXPECT_NEAR(exposed_dp_s(c, true, true), 0.1, 1e-12);
  EXPECT_NEAR(exposed_dp_s(c, true, false), 0.2, 1e-12);
}

TEST(AnalyticStep, HiddenDpCostsWhatTheSlowedComputeLosesTextbook) {
  // v = 6, m = 480: 1.44 s of compute per stage hides 1.1 s of the 1.2 s of DP collectives.
  // While they run compute goes 1 + s = 1.25 times slower, so 1.1 s of overlap gets 0.88 s of
  // work done and the step grows by 0.22 s = 1.1 * s / (1 + s), the event engine's stretch.
  auto c = dp_costs(2, 6, 480);
  c.dp_overlap_compute_slowdown = 0.25;
  EXPECT_NEAR(exposed_dp_s(c, true, true), 0.1 + 0.22, 1e-12);
  // Passes half kernels, half exposed TP wait: only the kernels slow, 1 + 0.25 * 0.5 = 1.125,
  // so the step grows by 1.1 * 0.125 / 1.125 = 0.12222 s.
  for (auto& stage : c.chunks) {
    for (auto& ch : stage) {
      ch.fwd_tp_exposed_s = ch.fwd_compute_s;
      ch.bwd_tp_exposed_s = ch.bwd_compute_s;
    }
  }
  EXPECT_NEAR(exposed_dp_s(c, true, true), 0.1 + 1.1 * 0.125 / 1.125, 1e-12);
}

TEST(AnalyticStep, BucketedDpOverlapStartsDuringThePassTextbook) {
  // One chunk per stage (v = 1), its backward 2 ms per micro-batch. Per-chunk overlap leaves
  // the whole 0.6 s reduce-scatter exposed. In 4 buckets released every 0.5 ms of the last
  // backward: the stream ends max(last release + 0.15, first release + 0.6) = 0.6005 s
  // after the pass starts, 0.5985 s after it ends. A reduction shorter than the pass (1 ms)
  // leaves only its last bucket: 0.25 ms.
  auto c = dp_costs(2, 1, 4);
  EXPECT_NEAR(exposed_dp_s(c, true, true), 0.6, 1e-12);
  for (auto& stage : c.chunks) stage.front().dp_buckets = 4;
  EXPECT_NEAR(exposed_dp_s(c, true, true), 0.5985, 1e-12);
  c.dp_reduce_time_s = 1e-3;
  EXPECT_NEAR(exposed_dp_s(c, true, true), 0.25e-3, 1e-12);
}

TEST(AnalyticStep, SlowestStageSetsThePaceTextbook) {
  // Stage 1 does 50% more work: the pace is 4.5 ms per micro-batch; p=2, m=4:
  // 4 * 4.5 + 1 * 4.5 = 22.5 ms.
  auto c = uniform_costs(2, 1, 4);
  c.chunks[1][0].fwd_compute_s = 1.5e-3;
  c.chunks[1][0].bwd_compute_s = 3e-3;
  EXPECT_NEAR(estimate_step_analytic(job_with(true, false, false), c).step_time_s, 22.5e-3, 1e-12);
}

TEST(AnalyticStep, BreakdownAddsUpToStepTimeTextbook) {
  auto c = uniform_costs(4, 2, 16);
  c.p2p_time_s = 2e-4;
  c.dp = 8;
  c.dp_reduce_time_s = 0.3;
  c.dp_gather_time_s = 0.2;
  c.optimizer_s = 0.05;
  c.data_loading_s = 0.01;
  c.gc_skew_s = 0.02;
  c.straggler_slowdown = 0.1;
  const auto r = estimate_step_analytic(job_with(false, false, false), c);
  EXPECT_NEAR(r.breakdown.total_s(), r.step_time_s, 1e-12);
  EXPECT_GT(r.breakdown.other_s, 0.0);
  // The slow-host share is reported on its own but lives inside "other" (no launch overhead
  // here, so it is all of it).
  EXPECT_GT(r.breakdown.straggler_s, 0.0);
  EXPECT_NEAR(r.breakdown.straggler_s, r.breakdown.other_s, 1e-15);
  c.straggler_slowdown = 0;
  EXPECT_EQ(estimate_step_analytic(job_with(false, false, false), c).breakdown.straggler_s, 0.0);
}

// Megatron-Core's DDP on a non-interleaved pipeline: each later stage waits for its whole first
// gather before its first forward, so the fill grows by (p - 1) gathers; those waits hide nothing,
// so the SM-sharing cost of hidden DP traffic cannot turn negative and shorten the step.
TEST(AnalyticStep, LaterStagesFirstGathersHoldUpTheFillAndHideNothing) {
  StepCosts c = uniform_costs(4, 1, 8);
  c.dp = 8;
  for (auto& stage : c.chunks)
    for (auto& ch : stage) ch.param_bytes = 1;
  c.dp_gather_time_s = 2e-3;
  c.dp_reduce_time_s = 1e-3;
  JobSpec j = job_with(true, true, false);
  j.parallel.zero_stage = 1;
  j.system.dp_overlap_granularity = DpOverlapGranularity::Bucket;
  const double early = estimate_step_analytic(j, c).breakdown.exposed_dp_comm_s;
  j.system.dp_megatron_core_ddp = true;
  const double at_forward = estimate_step_analytic(j, c).breakdown.exposed_dp_comm_s;
  EXPECT_NEAR(at_forward - early, 3 * 2e-3, 1e-12);
  c.dp_overlap_compute_slowdown = 0.2;
  EXPECT_GE(estimate_step_analytic(j, c).breakdown.exposed_dp_comm_s, at_forward);
}

// Megatron-Core's merged 1F1B on an uneven interleaved stage (chunk 0: 2 layers, chunk 1: 1):
// each steady 2-layer pass paired with a 1-layer one runs one layer alone, so the analytic
// engine's EP time per micro-batch is above the merged figures' and matches the event engine's
// pass-by-pass pricing (merged_pairs.hpp) summed over the stage's passes.
TEST(AnalyticStep, MergedStepPricesUnequalPairsPassByPass) {
  StepCosts c = uniform_costs(2, 2, 8);
  c.extra_warmup_passes = 1;
  for (auto& stage : c.chunks) {
    for (std::size_t v = 0; v < stage.size(); ++v) {
      stage[v].merged_layers = v == 0 ? 2 : 1;
      stage[v].fwd_ep_exposed_s = 0.1e-3;
      stage[v].bwd_ep_exposed_s = 0.1e-3;
      stage[v].fwd_ep_alone_s = 0.5e-3;
      stage[v].bwd_ep_alone_s = 0.5e-3;
    }
  }
  const JobSpec j = job_with(true, false, false, 2);
  const double ep_s = estimate_step_analytic(j, c).breakdown.exposed_ep_comm_s;
  double most = 0;  // the busiest stage's passes, as the event engine prices them
  for (int s = 0; s < c.pp; ++s) {
    const auto passes = stage_schedule(PipelineSchedule::OneFOneB, c.pp, c.vpp, c.micro_batches, s, 1);
    double sum = 0;
    const auto merged = merged_passes(c, PipelineSchedule::OneFOneB, s, passes);
    for (const double e : scheduled_ep_exposure_s(c, s, passes, merged)) sum += e;
    most = std::max(most, sum);
  }
  EXPECT_NEAR(ep_s, most, 1e-12);
  // Even chunks: only the lone warm-up and cool-down passes differ from the merged figure.
  for (auto& stage : c.chunks)
    for (auto& ch : stage) ch.merged_layers = 1;
  EXPECT_LT(estimate_step_analytic(j, c).breakdown.exposed_ep_comm_s, ep_s);
}

}  // namespace
}  // namespace megasim
