// The MoE dispatch and combine as flows on the fabric (src/exec/ep_fabric.hpp): textbook
// checks against NCCL's closed form, the routing skew, DeepEP's node de-duplication, and the
// expert grid's groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "megasim/catalogs/nccl_model_reader.hpp"
#include "megasim/coll/cost_model.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/exec/step_costs.hpp"
#include "megasim/model/moe_routing.hpp"
#include "megasim/net/topology_builders.hpp"
#include "../../src/exec/cost_context.hpp"
#include "../../src/exec/ep_fabric.hpp"

namespace megasim {
namespace {

Catalog catalog() { return Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs"); }
const NcclModel& nccl() {
  static const NcclModel m = load_default_nccl_model(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  return m;
}

// Qwen3-30B-A3B (128 experts, top-8) on DGX H100 nodes under a rail-optimised Clos.
JobSpec qwen3_30b(int gpus, int ep, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets{"model=qwen3-30b-a3b",
                                "cluster=dgx-h100-ndr-clos",
                                "cluster.num_gpus=" + std::to_string(gpus),
                                "parallel.tensor_model_parallel_size=1",
                                "parallel.pipeline_model_parallel_size=1",
                                "parallel.virtual_pipeline_model_parallel_size=1",
                                "parallel.expert_model_parallel_size=" + std::to_string(ep),
                                "training.seq_length=4096",
                                "training.global_batch_size=" + std::to_string(4 * gpus),
                                "training.precision=bf16",
                                "training.moe_router_force_load_balancing=true"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_job(std::string(MEGASIM_SOURCE_DIR) + "/configs/llama-3.1-70b-1024-h100.json", sets, catalog());
}

constexpr double kBytes = 256.0 * 1024 * 1024;

// Balanced routing, one EP group inside one node: every rank sends (n-1)/n of its buffer over
// NVLink, as NCCL's all-to-all does, so the flows take NCCL's closed-form time.
TEST(EpFabric, BalancedExchangeInsideANodeTakesNcclsAllToAllTime) {
  const JobSpec job = qwen3_30b(8, 8);
  const Fabric fabric = build_fabric(job.cluster);
  const EpExchangeOnFabric ep(job, fabric, nccl());
  ASSERT_EQ(ep.groups().size(), 1U);
  const double busiest = expert_load(job).rank_load_profile.front();
  const double closed = collective_time_s(CollOp::AllToAll, kBytes, shape_of(ep.groups().front(), job.cluster),
                                          job.cluster, nccl());
  // Forced balance still has multinomial noise: the busiest rank receives a little more than
  // the mean, and the rest of the group less.
  EXPECT_NEAR(ep.seconds(OpKind::EpDispatch, kBytes), closed, 0.005 * closed);
  EXPECT_GT(busiest, 1.0);
  EXPECT_LT(busiest, 1.05);
}

// Across nodes on a non-blocking fabric the NICs bound it, as in NCCL's model.
TEST(EpFabric, BalancedExchangeAcrossNodesTakesNcclsAllToAllTime) {
  const JobSpec job = qwen3_30b(32, 32);
  const Fabric fabric = build_fabric(job.cluster);
  const EpExchangeOnFabric ep(job, fabric, nccl());
  const double closed = collective_time_s(CollOp::AllToAll, kBytes, shape_of(ep.groups().front(), job.cluster),
                                          job.cluster, nccl());
  EXPECT_NEAR(ep.seconds(OpKind::EpDispatch, kBytes), closed, 0.005 * closed);
  // The combine is the dispatch reversed. Forced balance still leaves sampling noise (the
  // busiest rank 1-2% over the mean): dispatched, its copies all arrive on its own NIC; combined,
  // PXN spreads them over its node's NICs by destination rail, so the combine is a little shorter.
  EXPECT_LE(ep.seconds(OpKind::EpCombine, kBytes), ep.seconds(OpKind::EpDispatch, kBytes));
  EXPECT_NEAR(ep.seconds(OpKind::EpCombine, kBytes), ep.seconds(OpKind::EpDispatch, kBytes),
              0.02 * closed);
}

// Skewed routing: the busiest rank's ingress sets the time. Its ingress carries what NCCL's
// closed form prices for every rank (the op's bytes are the busiest rank's), so the two agree;
// a balanced exchange of the mean bytes is shorter by about the busiest rank's load.
TEST(EpFabric, TheBusiestRankSetsTheTimeOfASkewedExchange) {
  const JobSpec job = qwen3_30b(8, 8, {"training.moe_router_force_load_balancing=false", "training.moe_routing_skew=1.0"});
  const Fabric fabric = build_fabric(job.cluster);
  const EpExchangeOnFabric ep(job, fabric, nccl());
  const std::vector<double>& profile = expert_load(job).rank_load_profile;
  ASSERT_EQ(profile.size(), 8U);
  EXPECT_TRUE(std::is_sorted(profile.rbegin(), profile.rend()));
  EXPECT_NEAR(std::accumulate(profile.begin(), profile.end(), 0.0), 8.0, 0.4);
  const double busiest = profile.front();
  ASSERT_GT(busiest, 1.3);
  const double skewed = ep.seconds(OpKind::EpDispatch, kBytes);  // the busiest rank receives kBytes
  const double mean_closed = collective_time_s(CollOp::AllToAll, kBytes / busiest,
                                               shape_of(ep.groups().front(), job.cluster), job.cluster, nccl());
  const double busiest_closed = collective_time_s(CollOp::AllToAll, kBytes, shape_of(ep.groups().front(), job.cluster),
                                                  job.cluster, nccl());
  EXPECT_NEAR(skewed / mean_closed, busiest, 0.05 * busiest);
  EXPECT_LE(skewed, 1.01 * busiest_closed);
  EXPECT_GT(skewed, 0.95 * busiest_closed);
}

// DeepEP's flex dispatcher sends a token once per remote node, not once per expert: with
// top-8 over 4 nodes far fewer bytes cross the network than NCCL's all-to-all moves.
TEST(EpFabric, FlexSendsOneRdmaCopyPerRemoteNode) {
  const JobSpec a2a = qwen3_30b(32, 32);
  const JobSpec flex = qwen3_30b(32, 32, {"system.moe_token_dispatcher_type=flex"});
  const Fabric fabric = build_fabric(a2a.cluster);
  const EpExchangeOnFabric ep_a2a(a2a, fabric, nccl());
  const EpExchangeOnFabric ep_flex(flex, fabric, nccl());
  const auto network_bytes = [&](const EpExchangeOnFabric& ep) {
    double b = 0;
    for (const CollectivePlan& p : ep.plans(OpKind::EpDispatch, kBytes))
      for (const CollPhase& ph : p.phases)
        for (const FlowStep& f : ph.flows)
          if (f.src_gpu / 8 != f.dst_gpu / 8) b += f.wire_bytes * f.multiplicity;
    return b;
  };
  // 4 nodes, 8 of 128 experts: a token reaches 4 x (1 - C(96,8)/C(128,8)) = 3.67 distinct
  // nodes of its 8 copies, three quarters of either remote: 2.75 RDMA copies against 6.
  const double ratio = network_bytes(ep_flex) / network_bytes(ep_a2a);
  EXPECT_NEAR(ratio, 3.67 / 8.0, 0.01);
  EXPECT_LT(ep_flex.seconds(OpKind::EpDispatch, kBytes), 0.7 * ep_a2a.seconds(OpKind::EpDispatch, kBytes));
}

// NCCL's all-to-all crosses the network at its own measured rate, below a ring's
// (NcclModel::all_to_all_network_factor); inside a node NVLink is not derated. DeepEP drives the
// NICs itself and is priced at the transport's collective rate (ep_exchange_model).
TEST(EpFabric, NcclAllToAllRunsBelowTheRingRateAcrossNodesOnly) {
  const NcclModel plain = without_all_to_all_derating(nccl());
  const double f = nccl().all_to_all_network_factor;
  ASSERT_LT(f, 1.0);
  const JobSpec inside = qwen3_30b(8, 8);
  const Fabric f8 = build_fabric(inside.cluster);
  EXPECT_NEAR(EpExchangeOnFabric(inside, f8, nccl()).seconds(OpKind::EpDispatch, kBytes),
              EpExchangeOnFabric(inside, f8, plain).seconds(OpKind::EpDispatch, kBytes), 1e-9);
  // EP 32 over 4 nodes, NIC-bound: the bytes' time grows by 1/f, NCCL's latency does not.
  const JobSpec across = qwen3_30b(32, 32);
  const Fabric f32 = build_fabric(across.cluster);
  const double derated = EpExchangeOnFabric(across, f32, nccl()).seconds(OpKind::EpDispatch, kBytes);
  const double ring_rate = EpExchangeOnFabric(across, f32, plain).seconds(OpKind::EpDispatch, kBytes);
  EXPECT_NEAR(derated / ring_rate, 1.0 / f, 0.02);

  const auto data = load_step_cost_data(across, catalog());
  EXPECT_EQ(ep_exchange_model(across, *data).all_to_all_network_factor, f);
  const JobSpec flex = qwen3_30b(32, 32, {"system.moe_token_dispatcher_type=flex"});
  EXPECT_EQ(ep_exchange_model(flex, *data).all_to_all_network_factor, 1.0);
}

// A capacity factor drops copies (the ranks' loads average below the mean) or, with padding,
// fills every expert to capacity (above it): either way the busiest rank receives the op's
// bytes, so its ingress still meets NCCL's closed form.
TEST(EpFabric, DropsAndPaddingKeepTheBusiestRanksBytes) {
  for (const std::vector<std::string>& cap :
       {std::vector<std::string>{"training.moe_expert_capacity_factor=1.0"},
        std::vector<std::string>{"training.moe_expert_capacity_factor=1.25", "training.moe_pad_expert_input_to_capacity=true"}}) {
    std::vector<std::string> sets{"training.moe_router_force_load_balancing=false"};
    sets.insert(sets.end(), cap.begin(), cap.end());
    const JobSpec job = qwen3_30b(8, 8, sets);
    const Fabric fabric = build_fabric(job.cluster);
    const EpExchangeOnFabric ep(job, fabric, nccl());
    const std::vector<double>& profile = expert_load(job).rank_load_profile;
    const double total = std::accumulate(profile.begin(), profile.end(), 0.0);
    EXPECT_GT(std::abs(total - 8.0), 0.2) << cap.back();  // the loads do not sum to EP
    const double closed = collective_time_s(CollOp::AllToAll, kBytes, shape_of(ep.groups().front(), job.cluster),
                                            job.cluster, nccl());
    EXPECT_NEAR(ep.seconds(OpKind::EpDispatch, kBytes), closed, 0.02 * closed) << cap.back();
  }
}

// On a rack-scale NVLink domain (GB200 NVL72: 72 GPUs, 4 a node) EP groups of 64 straddle
// domains unevenly; every flex flow stays inside its EP group (the rail peer is a member), and
// a small share of a group on a domain gets the RDMA bytes its experts there draw.
TEST(EpFabric, FlexPeersStayInsideTheGroupOnRackScaleDomains) {
  const JobSpec job = qwen3_30b(1152, 64, {"cluster=gb200-nvl72-clos", "cluster.num_gpus=1152",
                                           "system.moe_token_dispatcher_type=flex"});
  const Fabric fabric = build_fabric(job.cluster);
  const EpExchangeOnFabric ep(job, fabric, nccl());
  const auto plans = ep.plans(OpKind::EpDispatch, kBytes);
  ASSERT_EQ(plans.size(), ep.groups().size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    std::vector<int> g = ep.groups()[i];
    std::sort(g.begin(), g.end());
    for (const CollPhase& ph : plans[i].phases)
      for (const FlowStep& f : ph.flows) {
        EXPECT_TRUE(std::binary_search(g.begin(), g.end(), f.src_gpu)) << f.src_gpu;
        EXPECT_TRUE(std::binary_search(g.begin(), g.end(), f.dst_gpu)) << f.dst_gpu;
      }
  }
  // Group 1 holds GPUs 64..127: 8 in the first domain, 56 in the second. A rank of the second
  // sends the first domain's 8 ranks (16 of 128 experts) an RDMA copy of a token with
  // probability 1 - C(112, 8) / C(128, 8) = 0.66, not 8/64 of the 3.9 copies a uniform split
  // would give.
  double to_small = 0;
  const std::vector<int>& g1 = ep.groups()[1];
  for (const CollPhase& ph : plans[1].phases)
    for (const FlowStep& f : ph.flows)
      if (f.src_gpu == g1[63] && f.dst_gpu / 72 == 0) to_small += f.wire_bytes * f.multiplicity;
  const double busiest = expert_load(job).rank_load_profile.front();
  const double token_bytes = kBytes / busiest / 8.0;  // a source's copies / top-8
  EXPECT_GT(to_small, 0.6 * token_bytes);
  EXPECT_LT(to_small, 0.9 * token_bytes);
}

// Megatron-Core's expert grid: ETP innermost, then EP, then expert DP.
TEST(EpFabric, ExpertGroupsFollowTheExpertGrid) {
  const JobSpec job = qwen3_30b(32, 4, {"parallel.tensor_model_parallel_size=2", "parallel.expert_tensor_parallel_size=2"});
  const Fabric fabric = build_fabric(job.cluster);
  const EpExchangeOnFabric ep(job, fabric, nccl());
  ASSERT_EQ(ep.groups().size(), 8U);  // 32 GPUs / EP 4 = ETP 2 x EDP 4
  EXPECT_EQ(ep.groups()[0], (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(ep.groups()[1], (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(ep.groups()[2], (std::vector<int>{8, 10, 12, 14}));
}

// Every group of the stage exchanges at once, up to the send budget; the pricing is
// deterministic.
TEST(EpFabric, EveryGroupOfTheStageRunsAtOnceUpToTheSendBudget) {
  const JobSpec job = qwen3_30b(64, 16, {"training.moe_router_force_load_balancing=false"});
  const Fabric fabric = build_fabric(job.cluster);
  const EpExchangeOnFabric a(job, fabric, nccl());
  const EpExchangeOnFabric b(job, fabric, nccl());
  EXPECT_EQ(a.groups().size(), 4U);
  EXPECT_EQ(a.plans(OpKind::EpDispatch, kBytes).size(), 4U);
  EXPECT_EQ(a.seconds(OpKind::EpDispatch, kBytes), b.seconds(OpKind::EpDispatch, kBytes));
  // 4,096 GPUs in EP 64 groups: 64 groups of 4,096 sends, over the budget; the first 16 run.
  const JobSpec big = qwen3_30b(4096, 64);
  const Fabric big_fabric = build_fabric(big.cluster);
  const EpExchangeOnFabric c(big, big_fabric, nccl());
  EXPECT_EQ(c.stage_groups(), 64U);
  EXPECT_EQ(c.groups().size(), EpExchangeOnFabric::kMaxSends / (64 * 64));
  EXPECT_TRUE(c.priced_on_fabric());
  // One EP 512 group alone is over it: the closed form prices it.
  const JobSpec wide = qwen3_30b(1024, 512, {"model.num_local_experts=512"});
  const Fabric wide_fabric = build_fabric(wide.cluster);
  const EpExchangeOnFabric d(wide, wide_fabric, nccl());
  EXPECT_FALSE(d.priced_on_fabric());
  EXPECT_EQ(d.stage_groups(), 2U);
}

// The exchanges' link loads join the step report: each NIC of a node carries, per step, what
// its node's GPUs send to the other node's GPU on its rail (PXN): half of every rank's copies at
// EP 16 over 2 nodes, for every EP op (forward dispatch and combine, their backward mirror) of
// every MoE layer and micro-batch; wire bytes are the payload over NCCL's network fraction.
TEST(EpFabric, TheStepReportCountsTheExchangesOnTheLinks) {
  const JobSpec job = qwen3_30b(16, 16);
  const Fabric fabric = build_fabric(job.cluster);
  const EpExchangeOnFabric ep(job, fabric, nccl());
  const std::int64_t m = micro_batches_per_pipeline(job);
  const auto one = ep.step_link_bytes(m);
  const auto two = ep.step_link_bytes(2 * m);
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(two[i].second, 2 * one[i].second, 1e-6 * one[i].second);
  double nic = 0;
  for (const auto& [link, bytes] : one)
    if (fabric.link_name(link) == "node0.gpu0->node0.nic0") nic = bytes;
  const double copies_bytes = 4096.0 * 8 * 2048 * 2;  // tokens x top-8 x hidden x BF16
  const double payload = static_cast<double>(m) * 48 * 4 * copies_bytes / 2;
  EXPECT_GE(nic, payload);
  EXPECT_LE(nic, 1.25 * payload);
  // The event engine's report adds them to its simulated flows' loads.
  const StepReport r = simulate_step(job, catalog(), SimulateOptions{});
  ASSERT_FALSE(r.busiest_links.empty());
  double most = 0;
  for (const auto& [link, bytes] : one) most = std::max(most, bytes);
  EXPECT_GE(r.busiest_links.front().bytes, most);
}

// The event engine prices the EP traffic on the fabric; the analytic engine in closed form.
// Under balance both agree. Under skew, DeepEP's RDMA copies go to a node, whose ranks' loads
// average out, where the closed form moves the busiest rank's bytes on every link: the event
// engine's MoE block is shorter.
TEST(EpFabric, TheEventEngineUsesTheFabricPricing) {
  SimulateOptions des;
  SimulateOptions analytic;
  analytic.engine = EngineKind::Analytic;
  const JobSpec balanced = qwen3_30b(16, 16);
  const StepReport b_des = simulate_step(balanced, catalog(), des);
  const StepReport b_an = simulate_step(balanced, catalog(), analytic);
  ASSERT_TRUE(b_des.moe && b_an.moe);
  EXPECT_EQ(b_des.moe->exchange_priced_by, "fabric");
  EXPECT_EQ(b_des.moe->exchange_groups_simulated, 1);
  EXPECT_EQ(b_des.moe->exchange_groups_per_stage, 1);
  EXPECT_EQ(b_an.moe->exchange_priced_by, "closed_form");
  EXPECT_NEAR(b_des.moe->block_forward_s, b_an.moe->block_forward_s, 0.01 * b_an.moe->block_forward_s);
  const JobSpec skewed = qwen3_30b(32, 32, {"training.moe_router_force_load_balancing=false", "training.moe_routing_skew=1.0",
                                            "system.moe_token_dispatcher_type=flex"});
  const StepReport s_des = simulate_step(skewed, catalog(), des);
  const StepReport s_an = simulate_step(skewed, catalog(), analytic);
  EXPECT_LT(s_des.moe->block_forward_s, 0.95 * s_an.moe->block_forward_s);
}

}  // namespace
}  // namespace megasim
