#include "megasim/exec/des_step.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "des_test_support.hpp"
#include "megasim/net/topology_builders.hpp"

namespace megasim {
namespace {

StepReport run(const JobSpec& j, const StepCosts& c, DesOptions o = {}) {
  const Fabric f = build_fabric(j.cluster);
  return simulate_step_des(j, c, f, destest::nccl(), o);
}

// 1F1B, p = 4, m = 8, t_f = 1 ms, t_b = 2 ms per stage, no communication (TP 2 keeps all
// eight GPUs on one node, p2p bytes 0). Narayanan et al.: step = (m + p - 1)(t_f + t_b)
// = 11 * 3 = 33 ms; bubble = (p - 1)(t_f + t_b) = 9 ms, i.e. (p-1)/(m+p-1) of the step.
TEST(DesStep, OneFOneBBubbleTextbook) {
  const JobSpec j = destest::job(2, 4, 1, 8);
  const StepReport r = run(j, destest::costs(j, 8, 1e-3, 2e-3));
  EXPECT_NEAR(r.step_time_s, 33e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.pipeline_bubble_s, 9e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.compute_s, 24e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.pipeline_bubble_s / r.step_time_s, 3.0 / 11.0, 1e-9);
  EXPECT_NEAR(r.breakdown.total_s(), r.step_time_s, 1e-12);
  EXPECT_EQ(r.engine, "des");
}

// Interleaved, p = 4, v = 2, m = 8, each chunk pass half a stage's (0.5 ms / 1 ms): the
// bubble shrinks v-fold to (p - 1)(t_f + t_b)/v = 9/2 = 4.5 ms; step = 24 + 4.5 = 28.5 ms.
TEST(DesStep, InterleavedDividesBubbleByV) {
  const JobSpec j = destest::job(2, 4, 2, 8);
  const StepReport r = run(j, destest::costs(j, 8, 0.5e-3, 1e-3));
  EXPECT_NEAR(r.step_time_s, 28.5e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.pipeline_bubble_s, 4.5e-3, 1e-9);
}

// GPipe has the same bubble as 1F1B (only the in-flight activations differ): 33 ms.
TEST(DesStep, GPipeEqualsOneFOneB) {
  const JobSpec j = destest::job(2, 4, 1, 8);
  DesOptions o;
  o.schedule = PipelineSchedule::GPipe;
  const StepReport r = run(j, destest::costs(j, 8, 1e-3, 2e-3), o);
  EXPECT_NEAR(r.step_time_s, 33e-3, 1e-9);
}

// Fixed costs are on the critical path once each: 33 + 5 (data) + 7 (optimizer) ms.
TEST(DesStep, DataLoadingAndOptimizer) {
  const JobSpec j = destest::job(2, 4, 1, 8);
  StepCosts c = destest::costs(j, 8, 1e-3, 2e-3);
  c.data_loading_s = 5e-3;
  c.optimizer_s = 7e-3;
  const StepReport r = run(j, c);
  EXPECT_NEAR(r.step_time_s, 45e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.data_loading_s, 5e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.optimizer_s, 7e-3, 1e-12);
}

// The expected slow-host slow-down stretches every pass by 10%: step 33 * 1.1 = 36.3 ms, and
// the critical stage's 24 ms of passes carry 2.4 ms of it, reported inside "other" and on its
// own (the bubble, made of other stages' stretched passes, grows to 9.9 ms).
TEST(DesStep, StragglerShareIsReportedInsideOther) {
  const JobSpec j = destest::job(2, 4, 1, 8);
  StepCosts c = destest::costs(j, 8, 1e-3, 2e-3);
  c.straggler_slowdown = 0.1;
  const StepReport r = run(j, c);
  EXPECT_NEAR(r.step_time_s, 36.3e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.straggler_s, 2.4e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.other_s, 2.4e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.pipeline_bubble_s, 9.9e-3, 1e-9);
  EXPECT_NEAR(r.breakdown.total_s(), r.step_time_s, 1e-12);  // not counted twice
  EXPECT_EQ(run(j, destest::costs(j, 8, 1e-3, 2e-3)).breakdown.straggler_s, 0.0);
}

// Pipeline transfers across nodes (TP 8, PP 2: one stage per node): with blocking
// Megatron p2p some transfer time is exposed; MegaScale's decoupled async p2p hides more.
TEST(DesStep, PipelineTransfersExposedAndOverlap) {
  JobSpec j = destest::job(8, 2, 1, 16);
  StepCosts c = destest::costs(j, 8, 2e-3, 4e-3);
  c.p2p_bytes = 25e6;  // ~1 ms on a 25 GB/s NIC
  const StepReport blocking = run(j, c);
  EXPECT_GT(blocking.breakdown.exposed_pp_comm_s, 1e-3);
  EXPECT_GT(blocking.step_time_s, 8 * 6e-3 + 6e-3);
  // Without virtual stages Megatron-Core's 1F1B blocks on every transfer: pp_overlap changes nothing.
  j.system.pp_overlap = true;
  EXPECT_DOUBLE_EQ(run(j, c).step_time_s, blocking.step_time_s);
  // Interleaved, the transfers run beside compute.
  JobSpec iv = destest::job(8, 2, 2, 16);
  StepCosts ic = destest::costs(iv, 8, 1e-3, 2e-3);
  ic.p2p_bytes = 25e6;
  const StepReport iv_blocking = run(iv, ic);
  iv.system.pp_overlap = true;
  const StepReport overlap = run(iv, ic);
  EXPECT_LT(overlap.step_time_s, iv_blocking.step_time_s);
  EXPECT_FALSE(overlap.busiest_links.empty());
  EXPECT_GT(overlap.busiest_links.front().bytes, 0);
}

std::string fingerprint(const StepReport& r) {
  char buf[512];
  const auto& b = r.breakdown;
  std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g %.17g %.17g %.17g %.17g %zu", r.step_time_s,
                b.compute_s, b.exposed_pp_comm_s, b.exposed_dp_comm_s, b.pipeline_bubble_s,
                b.other_s, r.ecmp ? r.ecmp->max_flows_per_uplink : -1.0, r.busiest_links.size());
  std::string s = buf;
  for (const auto& l : r.busiest_links) s += " " + l.link + ":" + std::to_string(l.bytes);
  return s;
}

TEST(DesStep, Deterministic) {
  JobSpec j = destest::job(8, 2, 2, 64);
  j.parallel.zero_stage = 2;
  j.system.dp_overlap = true;
  StepCosts c = destest::costs(j, 4, 2e-3, 4e-3);
  c.p2p_bytes = 10e6;
  c.dp_grad_reduce_bytes = 200e6;
  c.dp_param_gather_bytes = 100e6;
  c.dp_overlap_compute_slowdown = 0.05;
  const std::string a = fingerprint(run(j, c));
  const std::string b = fingerprint(run(j, c));
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace megasim
