#include <gtest/gtest.h>

#include "des_test_support.hpp"
#include "megasim/exec/des_step.hpp"
#include "megasim/net/topology_builders.hpp"

namespace megasim {
namespace {

// Folding (one replica's compute, every replica's flows) against the full simulation of
// every DP replica: they must agree within 0.5% (DESIGN.md B3 "keep a full mode that proves
// the folding exact").
void expect_fold_matches_full(JobSpec j, std::int64_t m, double tolerance = 0.005) {
  j.parallel.zero_stage = 2;
  j.system.dp_overlap = true;
  j.system.dp_prefetch_first_all_gather = true;
  j.system.pp_overlap = true;
  StepCosts c = destest::costs(j, m, 3e-3, 6e-3);
  c.p2p_bytes = 20e6;
  c.dp_grad_reduce_bytes = 300e6;
  c.dp_param_gather_bytes = 150e6;
  c.dp_overlap_compute_slowdown = 0.05;
  c.data_loading_s = 2e-3;
  c.optimizer_s = 4e-3;
  const Fabric f = build_fabric(j.cluster);
  DesOptions folded;
  DesOptions full;
  full.full = true;
  const StepReport a = simulate_step_des(j, c, f, destest::nccl(), folded);
  const StepReport b = simulate_step_des(j, c, f, destest::nccl(), full);
  EXPECT_GE(a.step_time_s, b.step_time_s * (1 - 1e-9));  // folding is conservative
  EXPECT_NEAR(a.step_time_s / b.step_time_s, 1.0, tolerance) << a.step_time_s << " vs " << b.step_time_s << " pp " << a.breakdown.exposed_pp_comm_s
      << "/" << b.breakdown.exposed_pp_comm_s << " dp " << a.breakdown.exposed_dp_comm_s << "/"
      << b.breakdown.exposed_dp_comm_s << " bubble " << a.breakdown.pipeline_bubble_s << "/"
      << b.breakdown.pipeline_bubble_s;
}

TEST(DesFold, FoldedAgreesWithFull128) { expect_fold_matches_full(destest::job(8, 4, 2, 128), 8); }

// DP-first with PP traffic crossing ToR sets: ECMP collisions hit a different replica on each
// boundary; the folded run waits for the slowest replica at every transfer while the full run
// lets replicas drift apart until the next DP sync, so folding is conservative here by
// ~0.7% (measured 0.1395 s vs 0.1385 s). Tolerance 1% for this case; see the lead's notes.
TEST(DesFold, FoldedAgreesWithFull512CrossTor) {
  expect_fold_matches_full(destest::job(8, 4, 1, 512), 8, 0.01);
}

TEST(DesFold, EcmpStatsOnMultiTorCluster) {
  // PP first: a DP group spans 2 ToR sets, so its ring crosses aggregation switches.
  JobSpec j = destest::job(8, 4, 1, 512);
  j.parallel.placement = PlacementOrder::PpFirst;
  j.parallel.zero_stage = 2;
  StepCosts c = destest::costs(j, 4, 3e-3, 6e-3);
  c.dp_grad_reduce_bytes = 100e6;
  c.dp_param_gather_bytes = 100e6;
  const Fabric f = build_fabric(j.cluster);
  const StepReport r = simulate_step_des(j, c, f, destest::nccl(), DesOptions{});
  ASSERT_TRUE(r.ecmp.has_value());
  EXPECT_GE(r.ecmp->max_uplink_load_vs_ideal, 1.0);
  EXPECT_GE(r.ecmp->max_flows_per_uplink, r.ecmp->mean_flows_per_uplink);
}

// Rack-scale NVLink: 4-GPU hosts in 72-GPU NVLink domains (GB200 NVL72-like), TP 4 x PP 2 over
// 576 GPUs with PP placed first, so each pipeline's two stages share a rack (NVLink) and the
// DP groups of 72 span the 8 racks over NICs. DP 72 > 16 mirrored replicas: the folded run
// evaluates the unmirrored replicas' ring edges in isolation (CollectiveRunner), the full run
// simulates every flow. With DP-first placement (pipeline transfers crossing racks on NICs
// and ECMP-hashed uplinks) the two differ by ~2% (docs/limitations.md).
TEST(DesFold, FoldedAgreesWithFullRackScale) {
  JobSpec j = destest::job(4, 2, 1, 576);
  j.cluster = testing::nvl72(8);
  j.parallel.placement = PlacementOrder::PpFirst;
  expect_fold_matches_full(j, 4);
}

// Isolated DP-ring edges are evaluated, not simulated: the folded step must be the same with
// the shortcut off, on a rail-optimised Clos and on a rail-only (multi-plane) fabric where TP 4
// puts two GPUs of each DP group on two rails of every node, so rings cross rails through
// NVLink relays. DP 64 > 16 mirrored replicas, so most edges qualify. (Folded against --full
// on the rail-only fabric reads 1.9% fast with or without the shortcut: the unmirrored
// replicas' pipeline transfers share NICs with the DP rings; docs/limitations.md.)
TEST(DesFold, IsolatedEdgesAreExact) {
  for (const Topology topo : {Topology::RailOptimizedClos, Topology::RailOnly}) {
    JobSpec j = destest::job(4, 2, 1, 512);
    j.cluster.network.topology = topo;
    j.parallel.zero_stage = 2;
    j.system.dp_overlap = true;
    j.system.pp_overlap = true;
    StepCosts c = destest::costs(j, 4, 3e-3, 6e-3);
    c.p2p_bytes = 20e6;
    c.dp_grad_reduce_bytes = 300e6;
    c.dp_param_gather_bytes = 150e6;
    const Fabric f = build_fabric(j.cluster);
    DesOptions on;
    DesOptions off;
    off.isolated_edges = false;
    const StepReport a = simulate_step_des(j, c, f, destest::nccl(), on);
    const StepReport b = simulate_step_des(j, c, f, destest::nccl(), off);
    EXPECT_NEAR(a.step_time_s / b.step_time_s, 1.0, 1e-9) << to_string(topo);
    EXPECT_NEAR(a.breakdown.exposed_dp_comm_s, b.breakdown.exposed_dp_comm_s, 1e-9) << to_string(topo);
  }
}

TEST(DesFold, PpFirstPlacement512) {
  JobSpec j = destest::job(8, 2, 2, 512);
  j.parallel.placement = PlacementOrder::PpFirst;
  expect_fold_matches_full(j, 4);
}

}  // namespace
}  // namespace megasim
