// MoE training steps end to end: the EP dispatch on the fabric, its overlap settings, grouped
// GEMMs, and what the routing skew costs.
#include <gtest/gtest.h>

#include "megasim/coll/cost_model.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/config/load.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/exec/step_costs.hpp"
#include "megasim/model/layer_ops.hpp"
#include "megasim/model/params.hpp"
#include "../../src/exec/chunk_costs.hpp"
#include "../../src/exec/pass_times.hpp"

namespace megasim {
namespace {

Catalog catalog() { return Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs"); }

// Qwen3-30B-A3B on two DGX H100 nodes, EP 8 inside a node or EP 16 across both.
JobSpec qwen3_30b(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets{"model=qwen3-30b-a3b",
                                "cluster=dgx-h100-ndr-clos",
                                "cluster.num_gpus=16",
                                "parallel.tensor_model_parallel_size=1",
                                "parallel.pipeline_model_parallel_size=1",
                                "parallel.virtual_pipeline_model_parallel_size=1",
                                "parallel.expert_model_parallel_size=8",
                                "training.seq_length=4096",
                                "training.global_batch_size=64",
                                "training.precision=bf16"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_job(std::string(MEGASIM_SOURCE_DIR) + "/configs/llama-3.1-70b-1024-h100.json", sets, catalog());
}

double step_s(const JobSpec& job) {
  SimulateOptions o;
  o.engine = EngineKind::Analytic;
  return simulate_step(job, catalog(), o).step_time_s;
}

TEST(MoeStep, ForcedBalanceIsFasterThanTheDefaultSkew) {
  const double forced = step_s(qwen3_30b({"training.moe_router_force_load_balancing=true"}));
  const double skewed = step_s(qwen3_30b());
  EXPECT_LT(forced, skewed);
  EXPECT_LT(skewed, step_s(qwen3_30b({"training.moe_routing_skew=1.0"})));
}

TEST(MoeStep, DispatchAcrossNodesIsExposedUnlessOverlapped) {
  SimulateOptions o;
  o.engine = EngineKind::Analytic;
  const StepReport inside = simulate_step(qwen3_30b(), catalog(), o);
  const StepReport across = simulate_step(qwen3_30b({"parallel.expert_model_parallel_size=16"}), catalog(), o);
  EXPECT_GT(inside.breakdown.exposed_ep_comm_s, 0.0);
  // The same bytes over the NICs instead of NVLink.
  EXPECT_GT(across.breakdown.exposed_ep_comm_s, 2.0 * inside.breakdown.exposed_ep_comm_s);
  const StepReport overlapped = simulate_step(
      qwen3_30b({"parallel.expert_model_parallel_size=16", "system.overlap_moe_expert_parallel_comm=true"}),
      catalog(), o);
  // Each exchange hides only behind its own phase of the merged step (chunk_costs.cpp): at EP 16
  // across two nodes in BF16 the exchanges outlast the phases, about half stays exposed.
  EXPECT_LT(overlapped.breakdown.exposed_ep_comm_s, 0.7 * across.breakdown.exposed_ep_comm_s);
  EXPECT_GT(overlapped.breakdown.exposed_ep_comm_s, 0.3 * across.breakdown.exposed_ep_comm_s);
  ASSERT_TRUE(across.moe.has_value());
  // One MoE block alone (what Megatron-LM's moe_perf times): its kernels and its EP traffic,
  // inside the layer's time.
  EXPECT_GT(across.moe->block_forward_s, 0.0);
  EXPECT_GT(across.moe->block_backward_s, across.moe->block_forward_s);
  EXPECT_GT(across.moe->block_forward_s, inside.moe->block_forward_s);  // its dispatch crosses the NICs
  EXPECT_EQ(across.moe->ep, 16);
  EXPECT_EQ(across.moe->edp, 1);
  // Both engines carry the key; their steps agree as they do for dense jobs.
  o.engine = EngineKind::Des;
  const StepReport des = simulate_step(qwen3_30b({"parallel.expert_model_parallel_size=16"}), catalog(), o);
  EXPECT_GT(des.breakdown.exposed_ep_comm_s, 0.0);
  EXPECT_NEAR(des.step_time_s / across.step_time_s, 1.0, 0.1);
}

// Megatron-Core's merged 1F1B step runs four phases, each one pass's exchange beside the other
// pass's compute: backward combine-gradient | forward attention side, forward dispatch |
// backward expert side, backward dispatch-gradient | forward expert side, forward combine |
// backward attention side. An exchange hides only behind its own phase's compute.
// A pass for the merged-schedule tests: its kernels on each side (and in the combine node), in
// ms, its compute their sum, and its two exchanges.
PassTimes merged_pass(double attention_ms, double expert_ms, double node_ms, double first_ms, double second_ms) {
  PassTimes t;
  t.attention_side_kernels_s = attention_ms * 1e-3;
  t.expert_side_kernels_s = expert_ms * 1e-3;
  t.combine_node_kernels_s = node_ms * 1e-3;
  t.compute_s = (attention_ms + expert_ms + node_ms) * 1e-3;
  t.first_exchange_s = first_ms * 1e-3;
  t.second_exchange_s = second_ms * 1e-3;
  return t;
}

TEST(MoeStep, MergedOneFOneBHidesEachExchangeBehindItsOwnPhaseOnly) {
  const JobSpec job = qwen3_30b();
  const auto data = load_step_cost_data(job, catalog());
  Context c = make_context(job, *data);
  c.ep_overlap_slowdown = 0.0;
  PassTimes f = merged_pass(3, 1, 0, 2, 2);
  PassTimes b = merged_pass(4, 2, 0, 2, 2);
  merge_ep_phases(c, f, b);
  // Forward dispatch 2 beside backward expert side 2, forward combine 2 beside backward attention 4.
  EXPECT_DOUBLE_EQ(f.ep_merged_exposed_s, 0.0);
  // Backward combine-gradient 2 beside forward attention 3: hidden; dispatch-gradient 2 beside
  // forward expert side 1: 1 ms out, although the forward's 4 ms of compute would cover all 4.
  EXPECT_NEAR(b.ep_merged_exposed_s, 1e-3, 1e-12);
  // A host-bound pass spreads its bound over both sides: forward at 8 ms doubles each side.
  f.compute_s = 8e-3;
  merge_ep_phases(c, f, b);
  EXPECT_DOUBLE_EQ(b.ep_merged_exposed_s, 0.0);
  // The SM tax: what hides slows the compute beside it by the slow-down factor.
  c.ep_overlap_slowdown = 0.25;
  merge_ep_phases(c, f, b);
  EXPECT_NEAR(f.ep_merged_exposed_s, 0.25 * 4e-3, 1e-12);
}

// The combine node (unpermute, the MLP's bias-dropout-add) runs on the communication stream in
// the merged schedule, serial with the combine's exchange: forward after it, backward (their
// gradients) before the combine-gradient exchange. So its kernels hide nothing of the other
// pass's exchanges, and they extend their own exchange's chain without being counted twice.
TEST(MoeStep, MergedOneFOneBRunsTheCombineNodeAfterItsExchange) {
  const JobSpec job = qwen3_30b();
  const auto data = load_step_cost_data(job, catalog());
  Context c = make_context(job, *data);
  c.ep_overlap_slowdown = 0.0;
  PassTimes f = merged_pass(3, 1, 1, 1, 5);
  PassTimes b = merged_pass(4, 2, 0, 3.5, 1);
  merge_ep_phases(c, f, b);
  // Backward combine-gradient 3.5 beside the forward's attention side 3 only (its combine node
  // runs in the last phase, on the other stream): 0.5 out; dispatch-gradient 1 beside 1: hidden.
  EXPECT_NEAR(b.ep_merged_exposed_s, 0.5e-3, 1e-12);
  // Forward: dispatch 1 beside the backward's expert side 2: hidden; combine 5 + node 1 beside
  // the backward's attention side 4: 2 out, of which the node's 1 ms is in the forward's
  // compute already: 1.
  EXPECT_NEAR(f.ep_merged_exposed_s, 1e-3, 1e-12);
  // A chain that hides gets no credit for the node's move off the compute stream.
  f.second_exchange_s = 2e-3;
  merge_ep_phases(c, f, b);
  EXPECT_DOUBLE_EQ(f.ep_merged_exposed_s, 0.0);
  // With the SM tax: the backward's node (1) and combine-gradient exchange (1.5) hide behind the
  // forward's attention side (3), slowing it by 0.25 x 2.5, less the node's own 1 ms: nothing;
  // its dispatch-gradient (1) beside the forward's expert side (1): 0.25. Forward: dispatch 1
  // beside 2: 0.25; combine 2 + node 1 beside 4: 0.75 - 1, nothing.
  c.ep_overlap_slowdown = 0.25;
  b = merged_pass(4, 2, 1, 1.5, 1);
  merge_ep_phases(c, f, b);
  EXPECT_NEAR(b.ep_merged_exposed_s, 0.25e-3, 1e-12);
  EXPECT_NEAR(f.ep_merged_exposed_s, 0.25e-3, 1e-12);
}

// Megatron-Core's merged pair waits at its start for the two pipeline receives the previous
// pair posted as it ended: both transfers run between the pairs, less the previous pair's tail
// (the delayed attention weight gradients of one layer). Outside the merged step the receives
// have a whole pass to arrive.
TEST(MoeStep, MergedPairWaitsForItsPipelineReceives) {
  const std::vector<std::string> sets{"cluster.num_gpus=32", "parallel.pipeline_model_parallel_size=2",
                                      "parallel.virtual_pipeline_model_parallel_size=2",
                                      "parallel.expert_model_parallel_size=16", "system.moe_token_dispatcher_type=alltoall",
                                      "training.global_batch_size=64"};
  const JobSpec job = qwen3_30b(sets);
  const auto data = load_step_cost_data(job, catalog());
  const Context c = make_context(job, *data);
  // The peer stage is 16 GPUs away (DP first), over the NIC: two 16 MiB transfers at NDR's
  // 47 GB/s, plus their latency.
  const double wire_s = 2.0 * 4096 * 2048 * 2 / 47e9;
  PassTimes b;
  const double wait = merged_pair_receive_wait_s(c, b, 1);
  EXPECT_GT(wait, wire_s);
  EXPECT_LT(wait, wire_s + 100e-6);
  b.attention_wgrad_s = 4 * 0.2e-3;  // four layers' attention weight gradients, 0.2 ms each
  EXPECT_NEAR(merged_pair_receive_wait_s(c, b, 4), wait - 0.2e-3, 1e-12);
  b.attention_wgrad_s = 10.0;
  EXPECT_DOUBLE_EQ(merged_pair_receive_wait_s(c, b, 1), 0.0);
  // In the step: the merged schedule's pipeline wait shows as exposed pipeline time.
  std::vector<std::string> merged_sets = sets;
  merged_sets.push_back("system.overlap_moe_expert_parallel_comm=true");
  SimulateOptions o;
  o.engine = EngineKind::Analytic;
  const StepReport plain = simulate_step(qwen3_30b(sets), catalog(), o);
  const StepReport merged = simulate_step(qwen3_30b(merged_sets), catalog(), o);
  EXPECT_GT(merged.breakdown.exposed_pp_comm_s, plain.breakdown.exposed_pp_comm_s + 0.5 * wait);
  o.engine = EngineKind::Des;
  EXPECT_GT(simulate_step(qwen3_30b(merged_sets), catalog(), o).breakdown.exposed_pp_comm_s,
            simulate_step(qwen3_30b(sets), catalog(), o).breakdown.exposed_pp_comm_s + 0.5 * wait);
}

// Without a host wait (padded capacity), a host-bound pass keeps launching while the stream runs
// its all-to-all: the pass takes max(host, kernels + exchange), not host + exchange. With the
// dropless wait there is no slack (the wait's launch queue already runs the collectives).
TEST(MoeStepTextbook, HostSlackOfAPassWithoutAWaitTakesItsSerialExchange) {
  const JobSpec job = qwen3_30b();
  const auto data = load_step_cost_data(job, catalog());
  const Context c = make_context(job, *data);
  const TpOverlapConfig ov;
  PassTimes f, b;
  f.compute_s = 7e-3;  // host-bound: 3 ms of kernels launched over 7 ms
  f.host_slack_s = 4e-3;
  f.first_exchange_s = f.second_exchange_s = 1.5e-3;  // 3 ms: all inside the slack
  b.compute_s = 6e-3;
  b.host_slack_s = 1e-3;
  b.first_exchange_s = b.second_exchange_s = 1.5e-3;  // 3 ms: 2 ms beyond the slack
  const ChunkCosts ch = pass_costs(c, f, b, ov);
  EXPECT_DOUBLE_EQ(ch.fwd_ep_exposed_s, 0.0);
  EXPECT_NEAR(ch.bwd_ep_exposed_s, 2e-3, 1e-15);
  EXPECT_DOUBLE_EQ(ch.fwd_ep_alone_s, ch.fwd_ep_exposed_s);
  // From the op lists: the padded forward has slack; the dropless forward waits and has none.
  const LayerKind moe{true, false};
  auto forward = [&](const std::vector<std::string>& sets) {
    std::vector<std::string> all{"training.precision=fp8", "training.fp8_recipe=tensorwise",
                                 "training.seq_length=1024", "training.moe_router_force_load_balancing=true"};
    all.insert(all.end(), sets.begin(), sets.end());
    const JobSpec j = qwen3_30b(all);
    const auto d = load_step_cost_data(j, catalog());
    const Context cj = make_context(j, *d);
    return time_ops(cj, layer_forward_ops(j, moe), host_s_per_launch(cj, true, PassDirection::Forward));
  };
  const PassTimes padded =
      forward({"training.moe_expert_capacity_factor=1.0", "training.moe_pad_expert_input_to_capacity=true"});
  EXPECT_GT(padded.host_slack_s, 0.0);
  // Only the list's own exchanges can use its slack (PassTimes are summed over lists).
  EXPECT_LE(padded.host_slack_s, padded.ep_comm_s());
  EXPECT_EQ(forward({}).host_slack_s, 0.0);
}

// The probabilities' all-to-all runs right after the tokens' and belongs to the same exchange:
// the forward's first exchange is the two dispatches, its second the combine. The dropless
// token-count all-gather is on the compute stream before the host sync: serial, in ep_comm_s,
// never in an exchange, exposed whatever the merged schedule hides.
TEST(MoeStep, TokenCountGatherIsSerialAndProbabilitiesJoinTheDispatch) {
  const LayerKind moe{true, false};
  const JobSpec job = qwen3_30b({"training.moe_router_force_load_balancing=true"});
  const auto data = load_step_cost_data(job, catalog());
  const Context c = make_context(job, *data);
  const auto ops = layer_forward_ops(job, moe);
  const PassTimes f = time_ops(c, ops, host_s_per_launch(c, true, PassDirection::Forward));
  double dispatch = 0, combine = 0, gather = 0;
  for (const LayerOp& op : ops) {
    if (op.kind == OpKind::EpDispatch) dispatch += comm_op_time_s(c, op, op.comm_bytes);
    if (op.kind == OpKind::EpCombine) combine += comm_op_time_s(c, op, op.comm_bytes);
    if (op.kind == OpKind::EpAllGather) gather += comm_op_time_s(c, op, op.comm_bytes);
  }
  EXPECT_GT(gather, 0.0);
  EXPECT_NEAR(f.first_exchange_s, dispatch, 1e-15);
  EXPECT_NEAR(f.second_exchange_s, combine, 1e-15);
  EXPECT_NEAR(f.ep_serial_comm_s, gather, 1e-15);
  EXPECT_NEAR(f.ep_comm_s(), dispatch + combine + gather, 1e-15);
  // Merged with a backward whose compute would hide any exchange, the gather stays exposed.
  PassTimes fm = f, b;
  b.attention_side_kernels_s = b.expert_side_kernels_s = b.compute_s = 1.0;
  Context c0 = make_context(job, *data);
  c0.ep_overlap_slowdown = 0.0;
  merge_ep_phases(c0, fm, b);
  EXPECT_NEAR(fm.ep_merged_exposed_s, gather, 1e-15);
}

// Expert TP: the experts' own collectives run over the ETP group, not the attention's TP group
// (with TP 1 and ETP 2 they are real traffic), and the token counts are gathered over ETP x EP.
// Backward: the combine's gradient is the first exchange, the dispatch's (tokens and
// probabilities) the second.
TEST(MoeStep, ExpertTensorParallelCollectivesUseTheirOwnGroup) {
  const LayerKind moe{true, false};
  const JobSpec job = qwen3_30b({"parallel.expert_tensor_parallel_size=2",
                                 "training.moe_router_force_load_balancing=true"});
  const auto data = load_step_cost_data(job, catalog());
  const Context c = make_context(job, *data);
  EXPECT_EQ(c.tp_group.ranks, 1);
  EXPECT_EQ(c.etp_group.ranks, 2);
  EXPECT_EQ(c.expert_grid_group.ranks, 16);
  const auto fwd = layer_forward_ops(job, moe);
  int etp_ops = 0;
  for (const LayerOp& op : fwd) {
    if (op.name == "dispatch_token_count_all_gather") {
      EXPECT_DOUBLE_EQ(op.comm_bytes, 8.0 * 128 * 16);
    }
    if (op.name.rfind("etp_", 0) == 0) {
      ++etp_ops;
      EXPECT_TRUE(op.expert_tensor_parallel);
      EXPECT_GT(comm_op_time_s(c, op, op.comm_bytes), 0.0) << op.name;
    }
  }
  EXPECT_EQ(etp_ops, 3);  // tokens' and probabilities' gather, the output's reduce-scatter
  const auto bwd = layer_backward_ops(job, moe);
  const PassTimes b = time_ops(c, bwd, host_s_per_launch(c, true, PassDirection::Backward));
  double first = 0, second = 0;
  for (const LayerOp& op : bwd) {
    if (op.name == "ep_combine_bwd") first += comm_op_time_s(c, op, op.comm_bytes);
    if (op.name == "ep_dispatch_bwd" || op.name == "ep_dispatch_probs_bwd") second += comm_op_time_s(c, op, op.comm_bytes);
  }
  EXPECT_NEAR(b.first_exchange_s, first, 1e-15);
  EXPECT_NEAR(b.second_exchange_s, second, 1e-15);
}

// Each collective the layer code issues costs the host one torch.distributed call (the framework
// host factors were measured on one GPU, where Megatron-Core bypasses them): a host-bound pass
// grows by the calls' host time; a one-rank group is bypassed, so it costs nothing.
TEST(MoeStepTextbook, HostBoundPassPaysEachCollectiveCall) {
  const LayerKind moe{true, false};
  auto forward = [&](int ep, double call_s) {
    const JobSpec job = qwen3_30b({"parallel.expert_model_parallel_size=" + std::to_string(ep),
                                   "training.seq_length=1024", "training.moe_expert_capacity_factor=1.0",
                                   "training.moe_pad_expert_input_to_capacity=true",
                                   "training.moe_router_force_load_balancing=true"});
    auto data = std::make_shared<StepCostData>(*load_step_cost_data(job, catalog()));
    data->hw.host_all_to_all_call_s = call_s;  // the all-to-all dispatcher's exchanges
    const Context c = make_context(job, *data);
    const auto ops = layer_forward_ops(job, moe);
    int calls = 0;
    for (const LayerOp& op : ops) calls += (op.kind == OpKind::EpDispatch || op.kind == OpKind::EpCombine) ? 1 : 0;
    return std::make_pair(time_ops(c, ops, host_s_per_launch(c, true, PassDirection::Forward)), calls);
  };
  const auto [base, calls] = forward(8, 0.0);
  const auto [slow, same] = forward(8, 1e-3);  // 1 ms a call: the host bounds the pass
  EXPECT_EQ(calls, 3);                         // tokens and probabilities dispatched, tokens combined
  EXPECT_EQ(same, calls);
  ASSERT_GT(base.host_slack_s, 0.0);           // host-bound already: its bound grows call by call
  EXPECT_NEAR(slow.compute_s - base.compute_s, calls * 1e-3, 1e-12);
  // One EP rank: Megatron-Core bypasses the calls, the host pays nothing for them.
  EXPECT_DOUBLE_EQ(forward(1, 1e-3).first.compute_s, forward(1, 0.0).first.compute_s);
}

// A dropless step with the MoE block recomputed: the backward's slack must not hide the
// recomputed forward's exchanges, which its own host wait already queues. Summing the two lists
// must price the recompute exactly as alone.
TEST(MoeStep, HostSlackDoesNotCrossIntoARecomputedForward) {
  const LayerKind moe{true, false};
  const JobSpec job = qwen3_30b({"training.precision=fp8", "training.fp8_recipe=tensorwise",
                                 "training.seq_length=1024", "training.moe_router_force_load_balancing=true",
                                 "training.recompute=selective", "training.recompute_modules=[\"moe\"]"});
  const auto data = load_step_cost_data(job, catalog());
  const Context c = make_context(job, *data);
  const double fwd_host = host_s_per_launch(c, true, PassDirection::Forward);
  const PassTimes bwd = time_ops(c, layer_backward_ops(job, moe), host_s_per_launch(c, true, PassDirection::Backward));
  const PassTimes rec = time_ops(c, layer_recompute_ops(job, moe), fwd_host);
  EXPECT_GT(rec.host_wait_s, 0.0);
  EXPECT_EQ(rec.host_slack_s, 0.0);
  PassTimes sum = bwd;
  sum += rec;
  EXPECT_LE(sum.host_slack_s, bwd.ep_comm_s() + 1e-15);
}

// The merged schedule runs its warm-up forwards and cool-down backwards alone: with fewer
// micro-batches, more of them, and more of the exchange stays exposed per micro-batch.
TEST(MoeStep, MergedOneFOneBWarmUpAndCoolDownRunAlone) {
  SimulateOptions o;
  o.engine = EngineKind::Des;
  const std::vector<std::string> base{"parallel.expert_model_parallel_size=16",
                                      "system.overlap_moe_expert_parallel_comm=true",
                                      "training.moe_router_force_load_balancing=true"};
  auto per_micro_batch = [&](const char* gbs) {
    std::vector<std::string> s = base;
    s.push_back(std::string("training.global_batch_size=") + gbs);
    const StepReport r = simulate_step(qwen3_30b(s), catalog(), o);
    return r.breakdown.exposed_ep_comm_s / static_cast<double>(r.plan.micro_batches_per_pipeline);
  };
  // DP 16 (TP 1, PP 1; EP 16 spans the 16 GPUs): 2 micro-batches a step run 1 of 2 passes each
  // way merged, 16 run 15 of 16.
  EXPECT_GT(per_micro_batch("32"), 1.2 * per_micro_batch("256"));
}

TEST(MoeStep, FlexInsideANodeSendsATokenOncePerRank) {
  // EP 8 in one node, 16 of the 128 experts per rank, top-8: a token reaches on average
  // 8 x (1 - C(112, 8) / C(128, 8)) = 5.31 distinct ranks, so DeepEP moves 5.31 / 8 of the
  // all-to-all dispatcher's bytes (both are bandwidth-bound at 4,096 tokens).
  SimulateOptions o;
  o.engine = EngineKind::Analytic;
  const std::vector<std::string> balanced{"training.moe_router_force_load_balancing=true"};
  auto with = [&](const char* dispatcher) {
    std::vector<std::string> s = balanced;
    s.push_back(std::string("system.moe_token_dispatcher_type=") + dispatcher);
    return simulate_step(qwen3_30b(s), catalog(), o);
  };
  const StepReport a2a = with("alltoall");
  const StepReport flex = with("flex");
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (112.0 - i) / (128.0 - i);
  const double expected = (1.0 - miss);  // distinct ranks / top-k
  EXPECT_NEAR(flex.breakdown.exposed_ep_comm_s / a2a.breakdown.exposed_ep_comm_s, expected, 0.03);
}

TEST(MoeStep, GroupedGemmBeatsALoopOfSmallExpertGemms) {
  // 128 experts over 8 GPUs: 16 local experts of ~2,048 rows, host-launched one by one without
  // the grouped kernel.
  const double grouped = step_s(qwen3_30b());
  const double loop = step_s(qwen3_30b({"system.moe_grouped_gemm=false"}));
  EXPECT_LT(grouped, loop);
}

TEST(MoeStep, ExpertGradientsReduceOverExpertDataParallelRanks) {
  // 16 GPUs, EP 8: expert DP 2 (the dense parts reduce over DP 16).
  const auto c = compute_step_costs(qwen3_30b(), catalog());
  const auto ep16 = compute_step_costs(qwen3_30b({"parallel.expert_model_parallel_size=16"}), catalog());
  // With EP 16 no expert gradient is reduced at all (expert DP 1).
  EXPECT_GT(c.dp_reduce_time_s, ep16.dp_reduce_time_s);
}

// Dropless: the host waits for the token counts before each MoE layer's dispatch, so after it
// the GPU runs each kernel only once the host has launched it. At 1,024 tokens a micro-batch
// the experts' kernels are short; with FP8 current scaling their casts are four launches per
// expert (64 per cast here) and the GPU idles behind the host far longer than under delayed
// scaling's one fused cast. The backward reuses the forward's counts and does not wait.
TEST(MoeStep, DroplessForwardIdlesBehindTheHostAfterTheDispatchWait) {
  const LayerKind moe{true, false};
  auto pass_times = [&](const std::vector<std::string>& sets, bool forward) {
    std::vector<std::string> all{"training.precision=fp8", "training.seq_length=1024",
                                 "training.moe_router_force_load_balancing=true"};
    all.insert(all.end(), sets.begin(), sets.end());
    const JobSpec job = qwen3_30b(all);
    const auto data = load_step_cost_data(job, catalog());
    const Context c = make_context(job, *data);
    return forward ? time_ops(c, layer_forward_ops(job, moe), host_s_per_launch(c, true, PassDirection::Forward))
                   : time_ops(c, layer_backward_ops(job, moe), host_s_per_launch(c, true, PassDirection::Backward));
  };
  const double tensorwise = pass_times({"training.fp8_recipe=tensorwise"}, true).host_wait_s;
  const double delayed = pass_times({}, true).host_wait_s;
  EXPECT_GT(tensorwise, 0.3e-3);
  // Host-bound: the forward takes its launches at the host's rate (207 here against 78 under
  // delayed scaling, the router's and dispatcher's bookkeeping included), and the GPU idles for
  // what its kernels do not fill.
  EXPECT_GT(tensorwise, 2.5 * delayed);
  EXPECT_GT(delayed, 0.0);  // at least the first launch after the wait
  EXPECT_EQ(pass_times({"training.fp8_recipe=tensorwise"}, false).host_wait_s, 0.0);
  // Padded to the capacity the counts are known on the host: no wait.
  EXPECT_EQ(pass_times({"training.fp8_recipe=tensorwise", "training.moe_expert_capacity_factor=1.0",
                        "training.moe_pad_expert_input_to_capacity=true"},
                       true)
                .host_wait_s,
            0.0);
}

// DeepEP's kernels hold their SMs for the whole dispatch and combine: overlapped compute runs on
// the rest, 132 / (132 - 20) = 1.18x slower on an H100 at DeepEP's default 20, less with fewer.
TEST(MoeStep, FlexDispatcherSmsSlowTheComputeItHidesBehind) {
  SimulateOptions o;
  o.engine = EngineKind::Analytic;
  auto exposed = [&](const std::string& sms) {
    std::vector<std::string> s{"parallel.expert_model_parallel_size=16", "system.overlap_moe_expert_parallel_comm=true",
                               "system.moe_token_dispatcher_type=flex", "training.moe_router_force_load_balancing=true"};
    if (!sms.empty()) s.push_back("system.moe_flex_dispatcher_num_sms=" + sms);
    return simulate_step(qwen3_30b(s), catalog(), o).breakdown.exposed_ep_comm_s;
  };
  const double deepep_default = exposed("");
  EXPECT_DOUBLE_EQ(deepep_default, exposed("20"));
  EXPECT_GT(deepep_default, exposed("8"));
  EXPECT_THROW(exposed("132"), InputError);
}

// The host issues each kernel of a pass at the hardware profile's eager-PyTorch rate times the
// framework's factor for its own layer code, measured for Megatron-Core: MoE layers (router,
// token dispatcher) cost more host time per launch than dense ones, forward passes more than
// backward ones; plain PyTorch modules 1.
TEST(MoeStep, HostTimePerLaunchIsTheEagerRateTimesTheFrameworkFactor) {
  const JobSpec mcore = qwen3_30b();
  const auto data = load_step_cost_data(mcore, catalog());
  const Context c = make_context(mcore, *data);
  const double eager = c.hw.host_dispatch_s;
  const SystemSpec& s = mcore.system;
  EXPECT_DOUBLE_EQ(host_s_per_launch(c, true, PassDirection::Forward), eager * s.host_launch_factor_moe_forward);
  EXPECT_DOUBLE_EQ(host_s_per_launch(c, true, PassDirection::Backward), eager * s.host_launch_factor_moe_backward);
  EXPECT_DOUBLE_EQ(host_s_per_launch(c, false, PassDirection::Forward), eager * s.host_launch_factor_dense_forward);
  EXPECT_DOUBLE_EQ(host_s_per_launch(c, false, PassDirection::Backward), eager * s.host_launch_factor_dense_backward);
  EXPECT_GT(s.host_launch_factor_moe_forward, s.host_launch_factor_dense_forward);
  EXPECT_GT(s.host_launch_factor_moe_forward, s.host_launch_factor_moe_backward);

  const JobSpec plain = qwen3_30b({"system.preset=pytorch-fsdp", "parallel.zero_stage=3"});
  EXPECT_EQ(plain.system.host_launch_factor_moe_forward, 1.0);
  EXPECT_EQ(plain.system.host_launch_factor_dense_backward, 1.0);

  // Twenty 1-byte element-wise kernels: nothing for the GPU, the pass is the host's launches.
  LayerOp tiny;
  tiny.name = "tiny";
  tiny.kind = OpKind::Elementwise;
  tiny.bytes = 1;
  const std::vector<LayerOp> ops(20, tiny);
  EXPECT_NEAR(time_ops(c, ops, 30e-6).compute_s, 20 * 30e-6, 1e-12);
  EXPECT_NEAR(time_ops(c, ops, 10e-6).compute_s, 20 * 10e-6, 1e-12);
}

// End to end, host-bound (128 tokens a micro-batch): the MoE layers' passes follow the MoE
// factors and only them, the embedding and LM head the dense ones.
TEST(MoeStep, HostBoundMoeLayersFollowTheMoeFactorsOnly) {
  auto layer_s = [](const std::vector<std::string>& sets) {
    std::vector<std::string> all{"training.seq_length=128", "training.moe_router_force_load_balancing=true"};
    all.insert(all.end(), sets.begin(), sets.end());
    const StepCosts c = compute_step_costs(qwen3_30b(all), catalog());
    return std::pair{c.layer_fwd_s, c.layer_bwd_s};
  };
  const auto base = layer_s({"system.host_launch_factor_moe_forward=2", "system.host_launch_factor_moe_backward=2"});
  const auto faster = layer_s({"system.host_launch_factor_moe_forward=1", "system.host_launch_factor_moe_backward=1"});
  const auto dense_moved = layer_s({"system.host_launch_factor_moe_forward=2", "system.host_launch_factor_moe_backward=2",
                                    "system.host_launch_factor_dense_forward=3", "system.host_launch_factor_dense_backward=3"});
  EXPECT_NEAR(base.first / faster.first, 2.0, 0.15);
  EXPECT_NEAR(base.second / faster.second, 2.0, 0.15);
  EXPECT_DOUBLE_EQ(dense_moved.first, base.first);
  EXPECT_DOUBLE_EQ(dense_moved.second, base.second);
}

// A factor below 1 would make a framework's layer code cheaper than the plain PyTorch it runs
// on; above 10 is no measured framework: input errors naming the field and the rule.
TEST(MoeStep, HostLaunchFactorOutsideItsRangeIsAnInputError) {
  for (const std::string key : {"system.host_launch_factor_moe_forward", "system.host_launch_factor_dense_backward"}) {
    for (const std::string value : {"0.5", "11"}) {
      try {
        qwen3_30b({key + "=" + value});
        ADD_FAILURE() << key << "=" << value << " was accepted";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("between 1 and 10"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_NO_THROW(qwen3_30b({"system.host_launch_factor_moe_forward=2.5"}));
}

JobSpec deepseek_v3_1024() {
  return load_job(std::string(MEGASIM_SOURCE_DIR) + "/configs/bench/deepseek-v3-1024-h100.json", {}, catalog());
}

// What a piece of the last stage's MTP work adds to its last chunk: that chunk's (forward,
// backward) compute with the piece as timed minus without it (`piece` of the layer passes), and
// the same for a middle stage's first chunk, which holds no MTP module.
struct MtpShare {
  PassTimes fwd, bwd;                     // the piece, one module
  double last_fwd_s, last_bwd_s;          // the last chunk's growth
  double middle_fwd_s, middle_bwd_s;      // a middle chunk's growth (none)
};
MtpShare mtp_share(const JobSpec& job, PassTimes LayerPasses::*fwd, PassTimes LayerPasses::*bwd) {
  const auto data = load_step_cost_data(job, catalog());
  const Context c = make_context(job, *data);
  const TpOverlapConfig ov;
  LayerPasses lp = time_layer_passes(c);
  MtpShare out{lp.*fwd, lp.*bwd, 0, 0, 0, 0};
  const auto with = stage_chunk_costs(c, lp, ov);
  lp.*fwd = PassTimes{};
  lp.*bwd = PassTimes{};
  const auto without = stage_chunk_costs(c, lp, ov);
  out.last_fwd_s = with.back().back().fwd_compute_s - without.back().back().fwd_compute_s;
  out.last_bwd_s = with.back().back().bwd_compute_s - without.back().back().bwd_compute_s;
  out.middle_fwd_s = with[1].front().fwd_compute_s - without[1].front().fwd_compute_s;
  out.middle_bwd_s = with[1].front().bwd_compute_s - without[1].front().bwd_compute_s;
  return out;
}

// Each multi-token-prediction module embeds its shifted tokens with the shared table on the last
// stage (Megatron-Core multi_token_prediction.py): its lookup and dense backward join that
// stage's last chunk once per module.
TEST(MoeStep, EachMtpModuleRunsTheEmbeddingOnTheLastStage) {
  const JobSpec job = deepseek_v3_1024();
  ASSERT_GT(job.model.num_nextn_predict_layers, 0);
  const double mtp = static_cast<double>(job.model.num_nextn_predict_layers);
  const MtpShare e = mtp_share(job, &LayerPasses::embedding_fwd, &LayerPasses::embedding_bwd);
  ASSERT_GT(e.bwd.compute_s, 0.0);
  // The first stage's own embedding is not in the last chunk: the difference is the modules'.
  EXPECT_NEAR(e.last_bwd_s, mtp * e.bwd.compute_s, 1e-6);
  EXPECT_NEAR(e.last_fwd_s, mtp * e.fwd.compute_s, 1e-6);
  EXPECT_DOUBLE_EQ(e.middle_bwd_s, 0.0);
}

// ... and joins them to the previous depth's hidden states (Megatron-Core
// MultiTokenPredictionLayer._concat_embeddings): two norms on the sequence shard, the 2h-wide
// concatenation, eh_proj (2h -> h, column-parallel: FP8 input gathered over TP), its output
// gathered along the hidden dimension; the mirror image back.
TEST(MoeStep, EachMtpModuleProjectsItsConcatenatedInputs) {
  const JobSpec job = deepseek_v3_1024();
  ASSERT_EQ(job.parallel.tensor_model_parallel_size, 2);
  ASSERT_TRUE(job.parallel.sequence_parallel);
  const double T = 4096;
  const double h = 7168;
  const auto find = [](const std::vector<LayerOp>& ops, const std::string& name) {
    for (const LayerOp& op : ops)
      if (op.name == name) return op;
    ADD_FAILURE() << name;
    return LayerOp{};
  };
  const std::vector<LayerOp> fwd = mtp_projection_forward_ops(job);
  EXPECT_NO_THROW(find(fwd, "mtp_enorm"));
  EXPECT_NO_THROW(find(fwd, "mtp_hnorm"));
  EXPECT_DOUBLE_EQ(find(fwd, "tp_all_gather_mtp_eh_proj").comm_bytes, T * 2 * h * 1.0);  // FP8
  const LayerOp proj = find(fwd, "mtp_eh_proj");
  EXPECT_EQ(proj.gemm_m, 4096);
  EXPECT_EQ(proj.gemm_n, 7168 / 2);
  EXPECT_EQ(proj.gemm_k, 2 * 7168);
  EXPECT_DOUBLE_EQ(find(fwd, "tp_all_gather_mtp_hidden").comm_bytes, T * h * 2.0);
  const std::vector<LayerOp> bwd = mtp_projection_backward_ops(job);
  EXPECT_DOUBLE_EQ(find(bwd, "tp_all_gather_mtp_sequence_grad").comm_bytes, T * h * 2.0);
  EXPECT_DOUBLE_EQ(find(bwd, "tp_reduce_scatter_dgrad_mtp_eh_proj").comm_bytes, T * 2 * h * 2.0);
  EXPECT_NO_THROW(find(bwd, "mtp_eh_proj_wgrad"));
  EXPECT_NO_THROW(find(bwd, "mtp_hnorm_bwd"));

  const double mtp = static_cast<double>(job.model.num_nextn_predict_layers);
  const MtpShare p = mtp_share(job, &LayerPasses::mtp_projection_fwd, &LayerPasses::mtp_projection_bwd);
  ASSERT_GT(p.fwd.compute_s, 0.0);
  EXPECT_NEAR(p.last_fwd_s, mtp * p.fwd.compute_s, 1e-6);
  EXPECT_NEAR(p.last_bwd_s, mtp * p.bwd.compute_s, 1e-6);
  EXPECT_DOUBLE_EQ(p.middle_fwd_s, 0.0);
}

// Megatron-Core's merged step runs an MTP layer's forward combine beside nothing: the module's
// post-process node (output layer and loss, compute stream) waits for it before the other pass's
// attention backward (model_chunk_schedule_plan.py). DeepSeek-V3's last chunk ("mL") is the MTP
// layer and the loss: its forward exposes the combine's whole exchange, more than the same
// layer's merged exposure, where phase 4 hides the combine behind the attention backward.
TEST(MoeStep, MergedStepExposesTheMtpLayersForwardCombine) {
  const JobSpec job = deepseek_v3_1024();
  ASSERT_TRUE(job.system.overlap_moe_expert_parallel_comm);
  const auto data = load_step_cost_data(job, catalog());
  const Context c = make_context(job, *data);
  const LayerPasses lp = time_layer_passes(c);
  const LayerKind mtp_kind = layer_kind(job.model, job.model.num_hidden_layers);
  const PassTimes* mtp_fwd = nullptr;
  for (const KindPasses& k : lp.kinds)
    if (k.kind == mtp_kind) mtp_fwd = &k.fwd;
  ASSERT_NE(mtp_fwd, nullptr);
  const ChunkCosts last = stage_chunk_costs(c, lp, TpOverlapConfig{}).back().back();
  ASSERT_EQ(layers_in_chunk(job, job.parallel.pipeline_model_parallel_size - 1,
                            job.parallel.virtual_pipeline_model_parallel_size - 1),
            0);  // "mL": no decoder layer, the MTP module alone
  EXPECT_GE(last.fwd_ep_exposed_s, mtp_fwd->second_exchange_s + mtp_fwd->ep_serial_comm_s - 1e-12);
  EXPECT_GT(last.fwd_ep_exposed_s, mtp_fwd->ep_merged_exposed_s);
}

// Both engines price the merged step's passes alike (merged_pairs.hpp): lone warm-up and
// cool-down passes, steady pairs of unequal chunks. DeepSeek-V3's uneven layout on 1,024 H100s:
// the analytic engine's EP time per micro-batch is the event engine's pass by pass, so the two
// step times stay within 1%.
TEST(MoeStep, EnginesAgreeOnTheMergedStepsUnevenChunks) {
  const JobSpec job = deepseek_v3_1024();
  SimulateOptions o;
  o.engine = EngineKind::Analytic;
  const StepReport analytic = simulate_step(job, catalog(), o);
  o.engine = EngineKind::Des;
  const StepReport des = simulate_step(job, catalog(), o);
  EXPECT_NEAR(analytic.step_time_s / des.step_time_s, 1.0, 0.01);
  EXPECT_NEAR(analytic.breakdown.exposed_ep_comm_s / des.breakdown.exposed_ep_comm_s, 1.0, 0.1);
}

}  // namespace
}  // namespace megasim
