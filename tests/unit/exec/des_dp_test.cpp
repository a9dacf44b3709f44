#include <gtest/gtest.h>

#include "des_test_support.hpp"
#include "megasim/coll/cost_model.hpp"
#include "megasim/exec/des_step.hpp"
#include "megasim/net/topology_builders.hpp"
#include "megasim/workload/task_graph.hpp"

namespace megasim {
namespace {

StepReport run(const JobSpec& j, const StepCosts& c, DesOptions o = {}) {
  const Fabric f = build_fabric(j.cluster);
  return simulate_step_des(j, c, f, destest::nccl(), o);
}

// TP 8, PP 2, VPP 2, DP 2 on 32 GPUs, ZeRO-2, 400 MB of gradients and of parameters, with
// or without MegaScale's DP overlap (and its first-all-gather prefetch).
JobSpec zero2_job(bool overlap) {
  JobSpec j = destest::job(8, 2, 2, 32);
  j.parallel.zero_stage = 2;
  j.system.dp_overlap = overlap;
  j.system.dp_prefetch_first_all_gather = overlap;
  return j;
}
StepCosts zero2_costs(const JobSpec& j, double grad_bytes = 400e6, double param_bytes = 400e6) {
  StepCosts c = destest::costs(j, 4, 20e-3, 40e-3);
  c.dp_grad_reduce_bytes = grad_bytes;
  c.dp_param_gather_bytes = param_bytes;
  return c;
}

// TP 8, PP 2, VPP 2, DP 2 (32 GPUs, 4 nodes); ZeRO-2 with equal gradient and parameter bytes,
// so the reduce-scatter (RS) and the all-gather (AG) take about the same time T.
// Without overlap both are exposed: about 2T. With MegaScale's overlap only the last chunk's
// RS (1/v of the bytes) stays exposed and the first AG hides under data loading, so
// exposed ~= T/v = 2T / (2v): the paper's factor 1/(2 * vpp).
TEST(DesDp, ZeroExposedWithAndWithoutOverlapTextbook) {
  JobSpec j = zero2_job(false);
  StepCosts c = zero2_costs(j);
  c.data_loading_s = 50e-3;
  const StepReport plain = run(j, c);
  const double two_t = plain.breakdown.exposed_dp_comm_s;
  EXPECT_GT(two_t, 10e-3);
  j.system.dp_overlap = true;
  j.system.dp_prefetch_first_all_gather = true;
  const StepReport ov = run(j, c);
  EXPECT_NEAR(ov.breakdown.exposed_dp_comm_s / two_t, 1.0 / (2 * 2), 0.05);
  EXPECT_LT(ov.step_time_s, plain.step_time_s);
  // Without the prefetch the first chunk's AG (another 1/(2v)) is exposed too.
  j.system.dp_prefetch_first_all_gather = false;
  const StepReport nopf = run(j, c);
  EXPECT_NEAR(nopf.breakdown.exposed_dp_comm_s / two_t, 2.0 / (2 * 2), 0.07);
}

// Megatron-Core's bucketed overlap: the last chunk's reduce-scatter starts while its last
// backward still runs, so less of it sticks out than with MegaScale's per-chunk overlap, and
// the step is shorter by about what was hidden.
TEST(DesDp, BucketedOverlapHidesMostOfTheLastReduction) {
  const JobSpec j = zero2_job(true);
  StepCosts c = zero2_costs(j);
  const StepReport per_chunk = run(j, c);
  for (auto& st : c.chunks)
    for (auto& ch : st) ch.dp_buckets = 4;
  const StepReport bucketed = run(j, c);
  EXPECT_GT(per_chunk.breakdown.exposed_dp_comm_s, 5e-3);
  EXPECT_LT(bucketed.breakdown.exposed_dp_comm_s, 0.5 * per_chunk.breakdown.exposed_dp_comm_s);
  EXPECT_LT(bucketed.step_time_s, per_chunk.step_time_s);
  EXPECT_NEAR(bucketed.breakdown.total_s(), bucketed.step_time_s, 1e-9);
}

// Megatron-Core's distributed optimizer on a non-interleaved pipeline (no align_param_gather, no
// prefetch in the optimizer step): each stage's first forward issues its own parameter gather
// from its pre-hook, once its input has arrived, and waits for all of it (stages past the first
// have one bucket). Gathers issued at the step's start instead hide behind the fill: the
// difference is about one whole gather (PP 2: stage 1's).
TEST(DesDp, FirstGatherIssuedByTheFirstForwardHoldsUpTheFill) {
  JobSpec j = destest::job(8, 2, 1, 32);
  j.parallel.zero_stage = 1;
  j.system.dp_overlap = true;
  j.system.dp_overlap_granularity = DpOverlapGranularity::Bucket;
  j.system.dp_megatron_core_ddp = true;
  j.system.dp_prefetch_first_all_gather = true;
  StepCosts c = destest::costs(j, 4, 20e-3, 40e-3);
  c.dp_grad_reduce_bytes = 400e6;
  c.dp_param_gather_bytes = 4e9;
  ASSERT_FALSE(workload_options(j).dp_first_gather_at_first_forward);
  const StepReport early = run(j, c);
  j.system.dp_prefetch_first_all_gather = false;
  ASSERT_TRUE(workload_options(j).dp_first_gather_at_first_forward);
  const StepReport at_forward = run(j, c);
  // Outside Megatron-Core's DDP the gathers go at the step's start.
  JobSpec other = j;
  other.system.dp_megatron_core_ddp = false;
  EXPECT_FALSE(workload_options(other).dp_first_gather_at_first_forward);
  const double gather_s = collective_time_s(CollOp::AllGather, c.dp_param_gather_bytes,
                                            CollGroupShape{2, 1, 2, false}, j.cluster, destest::nccl());
  ASSERT_GT(gather_s, 20e-3);  // longer than stage 0's first forward: not hidden by it
  EXPECT_NEAR(at_forward.step_time_s - early.step_time_s, gather_s, 0.25 * gather_s);
  EXPECT_NEAR(at_forward.breakdown.total_s(), at_forward.step_time_s, 1e-9);
  // Interleaved, align_param_gather issues the gathers at the schedule's start instead.
  JobSpec v = destest::job(8, 2, 2, 32);
  v.parallel.zero_stage = 1;
  v.system.dp_overlap = true;
  v.system.dp_overlap_granularity = DpOverlapGranularity::Bucket;
  v.system.dp_megatron_core_ddp = true;
  EXPECT_FALSE(workload_options(v).dp_first_gather_at_first_forward);
}

// Compute that runs while a DP collective is in flight is slowed; the excess is DP cost.
TEST(DesDp, OverlapContentionSlowsCompute) {
  const JobSpec j = zero2_job(true);
  StepCosts c = zero2_costs(j);
  const StepReport a = run(j, c);
  c.dp_overlap_compute_slowdown = 0.1;
  const StepReport b = run(j, c);
  EXPECT_GT(b.step_time_s, a.step_time_s);
  EXPECT_GT(b.breakdown.exposed_dp_comm_s, a.breakdown.exposed_dp_comm_s);
  EXPECT_NEAR(b.breakdown.total_s(), b.step_time_s, 1e-9);
}

// The slow-down lasts only while a collective runs beside the pass: collectives of a few
// tens of microseconds next to 20-40 ms passes cost almost nothing, however large the factor
// (charging the whole pass would add half of a pass here).
TEST(DesDp, ContentionLastsOnlyAsLongAsTheCollective) {
  const JobSpec j = zero2_job(true);
  const auto step_with = [&j](double slowdown) {
    StepCosts c = zero2_costs(j, 1e6, 1e6);
    c.dp_overlap_compute_slowdown = slowdown;
    return run(j, c);
  };
  const StepReport slowed = step_with(0.5);
  const double added_s = slowed.step_time_s - step_with(0.0).step_time_s;
  EXPECT_GE(added_s, 0.0);
  EXPECT_LT(added_s, 1e-3);
  EXPECT_NEAR(slowed.breakdown.total_s(), slowed.step_time_s, 1e-9);
}

// A late launch of the last gradient reduction (GC skew) lengthens the step by the delay, with
// and without DP overlap, and the breakdown books it as exposed DP communication.
TEST(DesDp, GcSkewDelaysTheStepAsExposedDp) {
  for (const bool overlap : {false, true}) {
    const JobSpec j = zero2_job(overlap);
    StepCosts c = zero2_costs(j);
    const StepReport a = run(j, c);
    c.gc_skew_s = 30e-3;
    const StepReport b = run(j, c);
    EXPECT_NEAR(b.step_time_s - a.step_time_s, 30e-3, 1e-6) << "overlap " << overlap;
    EXPECT_NEAR(b.breakdown.exposed_dp_comm_s - a.breakdown.exposed_dp_comm_s, 30e-3, 1e-6);
    EXPECT_NEAR(b.breakdown.total_s(), b.step_time_s, 1e-9);
  }
}

// The busiest stage (the last, as with an LM head) is the critical one; it finishes its
// backward first and then waits for the other stages to drain before the optimizer barrier.
// That wait is pipeline bubble: only the time the gradient collectives were running after
// the rank went idle is exposed DP (it was all booked as DP before).
TEST(DesDp, DrainBeforeTheLastReductionIsBubbleNotDp) {
  JobSpec j = destest::job(8, 4, 1, 64);
  j.parallel.zero_stage = 2;
  StepCosts c = destest::costs(j, 8, 20e-3, 40e-3);
  c.chunks.back().back().fwd_compute_s = 22e-3;
  c.chunks.back().back().bwd_compute_s = 44e-3;
  c.dp_grad_reduce_bytes = 40e6;
  c.dp_param_gather_bytes = 40e6;
  const StepReport with_dp = run(j, c);
  c.dp_grad_reduce_bytes = 0;
  c.dp_param_gather_bytes = 0;
  const StepReport no_dp = run(j, c);
  const double dp_cost_s = with_dp.step_time_s - no_dp.step_time_s;
  EXPECT_GT(dp_cost_s, 1e-3);
  // The drain (3 backward passes of 40 ms) is far longer than the collectives.
  EXPECT_GT(with_dp.breakdown.pipeline_bubble_s, 3 * 40e-3);
  EXPECT_LT(with_dp.breakdown.exposed_dp_comm_s, dp_cost_s + 1e-6);
  EXPECT_NEAR(with_dp.breakdown.total_s(), with_dp.step_time_s, 1e-9);
}

// With DP overlap and VPP 2, the last chunk's reduce-scatter queues behind the previous
// chunk's on the DP stream: the rank then waits for DP traffic, and that wait is exposed DP
// (the whole cost the gradients add to the step), not bubble.
TEST(DesDp, WaitBehindAnEarlierReductionIsDp) {
  const JobSpec j = zero2_job(true);
  StepCosts c = zero2_costs(j, 8e9, 0);
  const StepReport with_dp = run(j, c);
  c.dp_grad_reduce_bytes = 0;
  const StepReport no_dp = run(j, c);
  const double dp_cost_s = with_dp.step_time_s - no_dp.step_time_s;
  EXPECT_GT(dp_cost_s, 30e-3);
  EXPECT_NEAR(with_dp.breakdown.exposed_dp_comm_s, dp_cost_s, 0.05 * dp_cost_s);
  EXPECT_NEAR(with_dp.breakdown.pipeline_bubble_s, no_dp.breakdown.pipeline_bubble_s, 1e-3);
}

// Routed experts' gradients reduce over the expert data-parallel group, not the DP group
// (Megatron-Core's expert bucket groups). DP 16 on two DGX A100 nodes with EP 8: the DP ring
// crosses between the nodes over all 8 NICs at once, each expert-DP group is one GPU per node
// on one rail. The same bytes take about 8x longer there, as NCCL's closed form for that
// group says; the bytes were once run over the DP group's ring (8x too fast).
TEST(DesDp, ExpertGradientsReduceOverTheExpertDataParallelGroup) {
  JobSpec j = destest::job(1, 1, 1, 16);
  j.parallel.expert_model_parallel_size = 8;
  j.parallel.expert_tensor_parallel_size = 1;
  j.system.dp_overlap = false;
  StepCosts c = destest::costs(j, 1, 20e-3, 40e-3);
  const double bytes = 800e6;
  c.dp_grad_reduce_bytes = bytes;
  const StepReport dense = run(j, c);
  c.dp_grad_reduce_bytes = 0;
  c.edp_grad_reduce_bytes = bytes;
  const StepReport experts = run(j, c);
  const CollGroupShape edp{.ranks = 2, .ranks_per_node = 1, .nodes = 2, .same_rail = true};
  const double closed_form_s = collective_time_s(CollOp::ReduceScatter, bytes, edp, j.cluster, destest::nccl());
  EXPECT_NEAR(experts.breakdown.exposed_dp_comm_s, closed_form_s, 0.1 * closed_form_s);
  EXPECT_GT(experts.breakdown.exposed_dp_comm_s, 4.0 * dense.breakdown.exposed_dp_comm_s);
  EXPECT_NEAR(experts.breakdown.total_s(), experts.step_time_s, 1e-9);
  // Both kinds in one step run one after the other on the DP stream.
  c.dp_grad_reduce_bytes = bytes;
  const StepReport both = run(j, c);
  EXPECT_NEAR(both.breakdown.exposed_dp_comm_s,
              dense.breakdown.exposed_dp_comm_s + experts.breakdown.exposed_dp_comm_s,
              0.05 * experts.breakdown.exposed_dp_comm_s);
}

// DP 1 with an expert grid that still replicates experts (TP 8, EP 1: expert DP 8) reduces
// the expert gradients although the dense ones need no collective.
TEST(DesDp, ExpertGradientsReduceWhereDpIsOne) {
  JobSpec j = destest::job(8, 1, 1, 8);
  j.parallel.expert_model_parallel_size = 1;
  j.parallel.expert_tensor_parallel_size = 1;
  StepCosts c = destest::costs(j, 2, 20e-3, 40e-3);
  ASSERT_EQ(c.dp, 1);
  const StepReport none = run(j, c);
  EXPECT_EQ(none.breakdown.exposed_dp_comm_s, 0.0);
  c.edp_grad_reduce_bytes = 2e9;
  const StepReport experts = run(j, c);
  EXPECT_GT(experts.breakdown.exposed_dp_comm_s, 1e-3);
  EXPECT_GT(experts.step_time_s, none.step_time_s);
}

TEST(DesDp, DdpAndZero3Run) {
  JobSpec j = destest::job(8, 2, 1, 32);
  StepCosts c = destest::costs(j, 4, 5e-3, 10e-3);
  c.dp_grad_reduce_bytes = 100e6;
  c.dp_param_gather_bytes = 50e6;
  j.parallel.zero_stage = 0;
  const StepReport ddp = run(j, c);
  EXPECT_GT(ddp.breakdown.exposed_dp_comm_s, 0);
  j.parallel.zero_stage = 3;
  const StepReport z3 = run(j, c);
  EXPECT_GT(z3.step_time_s, 0);
  EXPECT_NEAR(z3.breakdown.total_s(), z3.step_time_s, 1e-9);
  // 4 nodes under one ToR set: no switch-to-switch link, so no ECMP statistics.
  EXPECT_FALSE(z3.ecmp.has_value());
}

// FSDP by bucket: each piece of a pass waits only for its own bucket of parameters, gathered
// two pieces ahead, so the first gather of the step and the final reduce-scatter expose one
// bucket each instead of the whole chunk.
TEST(DesDp, Zero3BucketsExposeLessThanWholeChunkGathers) {
  JobSpec j = destest::job(8, 2, 1, 32);
  j.parallel.zero_stage = 3;
  StepCosts c = zero2_costs(j);
  const StepReport whole = run(j, c);
  for (auto& st : c.chunks)
    for (auto& ch : st) ch.dp_buckets = 8;
  const StepReport bucketed = run(j, c);
  EXPECT_LT(bucketed.breakdown.exposed_dp_comm_s, 0.5 * whole.breakdown.exposed_dp_comm_s);
  EXPECT_LT(bucketed.step_time_s, whole.step_time_s);
  EXPECT_NEAR(bucketed.breakdown.total_s(), bucketed.step_time_s, 1e-9);
}

// Gradients reduced every micro-batch (DeepSpeed ZeRO-2, FSDP without no_sync): while the
// DP stream keeps up, the m reductions hide behind the backward passes and only the last one's
// tail sticks out, as with one reduction per step; once m reductions outlast the compute, the
// rest is exposed.
TEST(DesDp, ReducingEveryMicroBatchHidesUntilTheStreamSaturates) {
  JobSpec j = zero2_job(true);
  const StepCosts light = zero2_costs(j, 40e6, 40e6);
  const StepReport once = run(j, light);
  j.system.dp_reduce_every_micro_batch = true;
  const StepReport every = run(j, light);
  EXPECT_NEAR(every.step_time_s / once.step_time_s, 1.0, 0.03);

  const StepCosts heavy = zero2_costs(j, 20e9, 40e6);
  const StepReport saturated = run(j, heavy);
  j.system.dp_reduce_every_micro_batch = false;
  const StepReport heavy_once = run(j, heavy);
  // m = 4 reductions of the whole gradients instead of one.
  EXPECT_GT(saturated.breakdown.exposed_dp_comm_s, 2.0 * heavy_once.breakdown.exposed_dp_comm_s);
  EXPECT_NEAR(saturated.breakdown.total_s(), saturated.step_time_s, 1e-9);
}

}  // namespace
}  // namespace megasim
