#include <gtest/gtest.h>

#include <map>
#include <set>

#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"
#include "megasim/sweep/plan_space.hpp"
#include "sweep/sweep_test_util.hpp"

namespace megasim {
namespace {

PlanSpaceOptions small_space() {
  PlanSpaceOptions o;
  o.micro_batch_sizes = {1};
  o.max_context_parallel = 1;
  return o;
}

// Textbook count for the 6-layer model on 8 GPUs (gpus_per_node 8), micro-batch {1}, CP {1}:
//   TP: divisors of 8 = {1,2,4,8}                                    -> 4
//   PP layouts of 6 layers: even PP 1 (VPP 1), 2 (VPP 1,3), 3 (VPP 1,2), 6 (VPP 1) = 6,
//     uneven PP 4 (6 % 4 != 0): k = ceil(6/4) = 2, rest = 6 - 2*2 = 2 -> first 1, last 1,
//     VPP divisors of gcd(1,1,2) = {1}                              -> 7 (pp, vpp) pairs
//   recompute 3 x ZeRO 4                                             -> 12
//   total 4 * 7 * 12 = 336.
TEST(PlanSpace, TextbookEnumerationCount) {
  const auto cat = testing::test_catalog();
  const JobSpec base = testing::load_with(cat, testing::small_job_json(), {});
  const auto plans = enumerate_plans(base, small_space());
  EXPECT_EQ(plans.size(), 336u);
  std::set<std::string> keys;
  for (const auto& p : plans) keys.insert(plan_key(p));
  EXPECT_EQ(keys.size(), plans.size()) << "keys are unique";
  for (std::size_t i = 1; i < plans.size(); ++i) EXPECT_TRUE(canonical_less(plans[i - 1], plans[i]));
  int uneven = 0;
  for (const auto& p : plans) {
    if (p.first_stage_layers) {
      ++uneven;
      EXPECT_EQ(p.pp, 4);
      EXPECT_EQ(*p.first_stage_layers, 1);
      EXPECT_EQ(*p.last_stage_layers, 1);
    }
  }
  EXPECT_EQ(uneven, 4 * 12);  // one uneven layout per TP, times recompute x ZeRO
}

// Llama 3.1 405B (126 layers): PP 8 does not divide 126, so the power-of-two uneven family has
// first = last = 15 (126 - 6 x 16 = 30) with VPP 1 only (gcd(15, 15, 16) = 1); Megatron-Core's
// accounted split of 128 slots adds PP 8 with VPP 2, 4, 8 (16 / VPP >= 2 slots per chunk; its
// VPP 1 is the uneven twin and is not listed again). PP 2 divides 126: no accounted layout.
TEST(PlanSpace, EmbeddingAndLossAccountedLayouts) {
  const auto cat = testing::test_catalog();
  auto cfg = testing::small_job_json();
  cfg["model"] = "llama-3.1-405b";
  const JobSpec base = parse_job(cfg, cat, {}, WrittenPlan::Replaced);
  std::set<std::pair<int, int>> accounted;
  int uneven_pp8 = 0;
  for (const auto& p : enumerate_plans(base, small_space())) {
    if (p.account_for_embedding_and_loss) {
      accounted.insert({p.pp, p.vpp});
      EXPECT_NE(plan_key(p).find("-embloss"), std::string::npos);
      const JobSpec j = apply_plan(base, p);
      EXPECT_TRUE(j.parallel.account_for_embedding_in_pipeline_split && j.parallel.account_for_loss_in_pipeline_split);
    }
    if (p.pp == 8 && p.first_stage_layers) {
      ++uneven_pp8;
      EXPECT_EQ(*p.first_stage_layers, 15);
      EXPECT_EQ(p.vpp, 1);
    }
  }
  EXPECT_GT(uneven_pp8, 0);
  // PP 4: 32 slots -> VPP 2..16; PP 16: 8 -> 2, 4; PP 32: 4 -> 2; PP 64: 2 slots, VPP 1 only,
  // which is the uneven twin (first = last = 1); PP 128: 1 slot, too few.
  const std::set<std::pair<int, int>> want = {{4, 2}, {4, 4}, {4, 8}, {4, 16}, {8, 2}, {8, 4},
                                              {8, 8}, {16, 2}, {16, 4}, {32, 2}};
  EXPECT_EQ(accounted, want);
}

// Rejections by hand (num_gpus 8, 12 heads, gbs 16, mbs 1):
//   TP*PP must divide 8. Layouts (with their VPP counts) failing it:
//     TP1: PP3(2), PP6(1) = 3;  TP2: PP3(2), PP6(1) = 3;  TP4: PP3(2), PP6(1), PP4(1) = 4;
//     TP8: PP2(2), PP3(2), PP6(1), PP4(1) = 6  -> 16 layouts * 12 = 192
//   TP8 with PP1 passes tiling but 8 does not divide 12 heads   -> 1 * 12 = 12
//   everything else divides: DP in {1,2,4,8} divides 16; VPP 3 never tiles (PP 2 -> VPP 3 needs
//   16/dp micro-batches % 2: TP1 dp4 m4, TP2 dp2 m8, TP4 dp1 m16: all even)
//   valid = 336 - 192 - 12 = 132.
TEST(PlanSpace, TextbookRejectionCounts) {
  const auto cat = testing::test_catalog();
  const JobSpec base = testing::load_with(cat, testing::small_job_json(), {});
  std::map<std::string, int> counts;
  int valid = 0;
  for (const auto& p : enumerate_plans(base, small_space())) {
    const JobSpec job = apply_plan(base, p);
    const auto rule = first_broken_rule(job);
    if (rule) {
      ++counts[plan_rule_key(*rule)];
    } else {
      ++valid;
      EXPECT_LE(peak_memory_bytes(job, BufferSizes{}), job.cluster.gpu.memory_bytes);
    }
  }
  EXPECT_EQ(counts["num_gpus_divisible_by_tp_pp_cp"], 192);
  EXPECT_EQ(counts["tp_divides_attention_heads"], 12);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ(valid, 132);
}

// The cheap checks must agree with the config validator: a candidate is accepted exactly
// when `megasim simulate` would accept the same plan written into the config.
TEST(PlanSpace, ChecksAgreeWithConfigValidation) {
  const auto cat = testing::test_catalog();
  auto cfg = testing::small_job_json();
  cfg["training"]["global_batch_size"] = 12;  // exercises the batch and VPP rules too
  cfg["parallel"]["pipeline_model_parallel_size"] = 2;  // DP 4 so that the base itself is valid
  const JobSpec base = testing::load_with(cat, cfg, {});
  PlanSpaceOptions o;
  o.micro_batch_sizes = {1, 4};
  o.max_context_parallel = 4;
  int checked = 0;
  for (const auto& p : enumerate_plans(base, o)) {
    if (p.recompute != Recompute::None || p.zero_stage != 1) continue;  // irrelevant to the rules
    nlohmann::json c = cfg;
    c["parallel"] = {{"tensor_model_parallel_size", p.tp}, {"pipeline_model_parallel_size", p.pp},
                     {"virtual_pipeline_model_parallel_size", p.vpp}, {"context_parallel_size", p.cp},
                     {"zero_stage", 1}};
    if (p.first_stage_layers) c["parallel"]["decoder_first_pipeline_num_layers"] = *p.first_stage_layers;
    if (p.last_stage_layers) c["parallel"]["decoder_last_pipeline_num_layers"] = *p.last_stage_layers;
    c["training"]["micro_batch_size"] = p.micro_batch_size;
    const auto rule = first_broken_rule(apply_plan(base, p));
    bool parsed = true;
    try {
      const JobSpec j = parse_job(c, cat, {});
      EXPECT_EQ(j.parallel.data_parallel_size, apply_plan(base, p).parallel.data_parallel_size);
    } catch (const InputError&) {
      parsed = false;
    }
    EXPECT_EQ(parsed, !rule.has_value()) << plan_key(p) << (rule ? plan_rule_key(*rule) : "");
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

// A model with MTP modules also gets Megatron-Core layout strings that count them: DeepSeek-V3's
// 61 layers + embedding + 1 MTP + loss = 64 slots, so PP 8 x VPP 4 at 2 a chunk is the recipe's
// "Et|(tt|)*30mL". Each generated string, parsed back as a config would, gives the plan's split.
TEST(PlanSpace, MtpModelsEnumerateLayoutStringsThatRoundTrip) {
  const auto cat = testing::test_catalog();
  nlohmann::json j = testing::small_job_json();
  j["model"] = "deepseek-v3";
  j["cluster"] = {{"base", "dgx-h100-ndr-clos"}, {"num_gpus", 1024}};
  j["training"]["seq_length"] = 4096;
  j["training"]["global_batch_size"] = 8192;
  j["parallel"] = {{"tensor_model_parallel_size", 1}, {"pipeline_model_parallel_size", 1},
                   {"expert_model_parallel_size", 32}, {"zero_stage", 1}};
  const JobSpec base = testing::load_with(cat, j, {});
  int layouts = 0;
  bool recipe = false;
  std::set<std::pair<int, int>> seen;
  for (const auto& p : enumerate_plans(base, small_space())) {
    if (!p.layout_with_mtp || !seen.insert({p.pp, p.vpp}).second) continue;
    ++layouts;
    EXPECT_EQ(64 % (p.pp * p.vpp), 0) << plan_key(p);
    EXPECT_NE(plan_key(p).find("-embmtploss"), std::string::npos);
    const std::string layout = pipeline_layout_string(p, 61, 1);
    if (p.pp == 8 && p.vpp == 4) {
      recipe = true;
      EXPECT_EQ(layout, "Et|(tt|)*30mL");  // the recipe's own string
    }
    nlohmann::json c = j;
    c["parallel"]["pipeline_model_parallel_size"] = p.pp;
    c["parallel"]["pipeline_model_parallel_layout"] = layout;
    const JobSpec parsed = parse_job(c, cat, {});
    EXPECT_EQ(parsed.parallel.virtual_pipeline_model_parallel_size, p.vpp) << layout;
    EXPECT_EQ(parsed.parallel.layout_layers, apply_plan(base, p).parallel.layout_layers) << layout;
  }
  EXPECT_TRUE(recipe);
  // Two MTP modules close the last chunk: 60 + 2 + 2 = 64 slots, PP 2: 31 layers, then 29 and m*2.
  PlanCandidate two;
  two.pp = 2;
  two.layout_with_mtp = true;
  EXPECT_EQ(pipeline_layout_string(two, 60, 2), "Et*31|t*29m*2L");
  // 64 = 2^6: PP 2..32 with per-chunk shares of at least 2 (PP 2: VPP 1..16, ..., PP 32: VPP 1).
  EXPECT_EQ(layouts, 5 + 4 + 3 + 2 + 1);
  // A model without MTP gets none.
  for (const auto& p : enumerate_plans(testing::load_with(cat, testing::small_job_json(), {}), small_space())) {
    EXPECT_FALSE(p.layout_with_mtp);
  }
}

TEST(PlanSpace, EachRuleFires) {
  const auto cat = testing::test_catalog();
  const JobSpec base = testing::load_with(cat, testing::small_job_json(), {});
  PlanCandidate c;
  c.global_batch_size = 16;
  auto rule = [&](const PlanCandidate& x) { return first_broken_rule(apply_plan(base, x)); };
  EXPECT_FALSE(rule(c).has_value());
  PlanCandidate x = c;
  x.tp = 8;  // 12 heads
  EXPECT_EQ(rule(x), PlanRule::TpDividesHeads);
  x = c;
  x.pp = 3;  // 8 GPUs
  EXPECT_EQ(rule(x), PlanRule::GpusDivisibleByModelParallel);
  x = c;
  x.micro_batch_size = 4;  // 16 % (4*8)
  EXPECT_EQ(rule(x), PlanRule::BatchDivisibleByMicroBatchDp);
  x = c;
  x.pp = 2;
  x.vpp = 3;
  x.global_batch_size = 12;  // dp 4, 3 micro-batches, 3 % 2
  EXPECT_EQ(rule(x), PlanRule::VppMicroBatchesDivisibleByPp);
  JobSpec odd = base;
  odd.training.seq_length = 1022;  // 1022 % (2*2) != 0
  x = c;
  x.cp = 2;
  EXPECT_EQ(first_broken_rule(apply_plan(odd, x)), PlanRule::SeqDivisibleBy2Cp);
  odd.training.seq_length = 1020;  // 1020/2 = 510, 510 % 4 != 0
  x.tp = 4;
  EXPECT_EQ(first_broken_rule(apply_plan(odd, x)), PlanRule::SeqPerCpDivisibleByTp);
}

// An MoE model multiplies the space by its EP choices (powers of two dividing the experts) and
// every plan carries its EP; a rule rejects plans whose expert grid does not tile the GPUs.
TEST(PlanSpace, MoeModelsEnumerateExpertParallelism) {
  const auto cat = testing::test_catalog();
  auto j = testing::small_job_json();
  j["model"] = "mixtral-8x7b";  // 8 experts: EP 1, 2, 4, 8
  j["cluster"] = {{"base", "dgx-h100-ndr-clos"}, {"num_gpus", 16}};
  j["training"]["seq_length"] = 4096;
  const JobSpec base = testing::load_with(cat, j, {});
  const auto plans = enumerate_plans(base, small_space());
  std::set<int> eps;
  for (const auto& p : plans) eps.insert(p.ep);
  EXPECT_EQ(eps, (std::set<int>{1, 2, 4, 8}));
  std::set<std::string> keys;
  for (const auto& p : plans) keys.insert(plan_key(p));
  EXPECT_EQ(keys.size(), plans.size());
  PlanCandidate c = plans.front();
  c.ep = 8;
  c.pp = 4;  // ETP 1 x EP 8 x PP 4 = 32 does not tile 16 GPUs
  c.tp = 1;
  c.first_stage_layers.reset();
  c.last_stage_layers.reset();
  c.account_for_embedding_and_loss = false;
  c.vpp = 1;
  const JobSpec job = apply_plan(base, c);
  EXPECT_EQ(job.parallel.expert_model_parallel_size, 8);
  EXPECT_EQ(first_broken_rule(job), PlanRule::ExpertGridDividesGpus);
  // pp-first with PP > 1 needs ETP*EP = TP*CP (Megatron-Core); dp-first does not.
  c.pp = 2;
  JobSpec pp_first = apply_plan(base, c);
  ASSERT_EQ(first_broken_rule(pp_first), std::nullopt);
  pp_first.parallel.placement = PlacementOrder::PpFirst;
  EXPECT_EQ(first_broken_rule(pp_first), PlanRule::ExpertGridDividesGpus);
  // A job asking for the 1F1B all-to-all overlap: Megatron-Core refuses it with PP > 1 unless
  // interleaved, with EP 1, and with full recompute.
  JobSpec merged = base;
  merged.system.overlap_moe_expert_parallel_comm = true;
  EXPECT_EQ(first_broken_rule(apply_plan(merged, c)), PlanRule::MergedA2aOverlapRules);  // PP 2, VPP 1
  PlanCandidate ok = c;
  ok.pp = 1;
  EXPECT_EQ(first_broken_rule(apply_plan(merged, ok)), std::nullopt);
  ok.recompute = Recompute::Full;
  EXPECT_EQ(first_broken_rule(apply_plan(merged, ok)), PlanRule::MergedA2aOverlapRules);
  ok.recompute = Recompute::None;
  ok.ep = 1;
  EXPECT_EQ(first_broken_rule(apply_plan(merged, ok)), PlanRule::MergedA2aOverlapRules);
  // ETP unwritten: each TP > 1 plan comes twice, with ETP = TP (Megatron-Core's default, key
  // unchanged) and ETP 1 ("-etp1"); apply_plan writes the plan's ETP.
  std::set<std::pair<int, int>> tp_etp;
  for (const auto& p : plans) tp_etp.insert({p.tp, p.etp});
  EXPECT_TRUE(tp_etp.count({2, 1}) && tp_etp.count({2, 2}) && tp_etp.count({1, 1}));
  EXPECT_FALSE(tp_etp.count({1, 2}) || tp_etp.count({4, 2}));
  PlanCandidate split = c;
  split.tp = 2;
  split.etp = 1;
  split.pp = 1;
  EXPECT_NE(plan_key(split).find("-ep8-etp1"), std::string::npos);
  EXPECT_EQ(apply_plan(base, split).parallel.expert_tensor_parallel_size, 1);
  split.etp = 2;
  EXPECT_EQ(plan_key(split).find("-etp"), std::string::npos);
  // A job that writes ETP keeps it in every plan.
  auto fixed = j;
  fixed["parallel"]["expert_tensor_parallel_size"] = 1;
  for (const auto& p : enumerate_plans(testing::load_with(cat, fixed, {}), small_space())) EXPECT_EQ(p.etp, 1);
  // A dense model has no EP dimension and its keys carry none.
  const JobSpec dense = testing::load_with(cat, testing::small_job_json(), {});
  for (const auto& p : enumerate_plans(dense, small_space())) {
    EXPECT_EQ(p.ep, 0);
    EXPECT_EQ(plan_key(p).find("-ep"), std::string::npos);
  }
}

}  // namespace
}  // namespace megasim
