#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "megasim/core/error.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/sweep/plan_search.hpp"
#include "megasim/sweep/plan_space.hpp"
#include "sweep/sweep_test_util.hpp"

namespace megasim {
namespace {

PlanSearchOptions analytic_options(int top_k) {
  PlanSearchOptions o;
  o.top_k = top_k;
  o.rerank_engine = EngineKind::Analytic;
  o.space.micro_batch_sizes = {1, 2};
  o.space.max_context_parallel = 2;
  o.jobs = 2;
  return o;
}

// A 1.3B-class model (h 2048, 16 layers) fits on one 80 GB GPU with room to spare and the
// batch (64 sequences of 1024) gives every GPU of the node work: tensor, pipeline and context
// parallelism then only add communication, bubbles and smaller GEMMs, so pure data
// parallelism (TP = PP = CP = 1) must win, and recomputation (extra forward work) must not.
TEST(PlanSearch, PureDataParallelWinsWhenTheModelFits) {
  const auto cat = testing::test_catalog();
  auto cfg = testing::small_job_json();
  cfg["model"] = {{"hidden_size", 2048}, {"num_hidden_layers", 16}, {"num_attention_heads", 16},
                  {"vocab_size", 32000}, {"hidden_act", "gelu"}};
  cfg["training"]["global_batch_size"] = 64;
  const JobSpec base = testing::load_with(cat, cfg, {});
  const PlanSearchResult r = search_plans(base, cat, analytic_options(5));
  ASSERT_FALSE(r.ranked.empty());
  const auto& best = r.ranked.front();
  EXPECT_EQ(best.plan.tp, 1) << best.key;
  EXPECT_EQ(best.plan.pp, 1) << best.key;
  EXPECT_EQ(best.plan.cp, 1) << best.key;
  EXPECT_EQ(best.dp, 8);
  EXPECT_EQ(best.plan.recompute, Recompute::None) << best.key;
  EXPECT_EQ(best.analytic_rank, 1u);
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    EXPECT_LE(r.ranked[i - 1].step_time_s, r.ranked[i].step_time_s);
  }
}

// GPT-3 175B on 64 A100-80GB: 175e9 parameters need ~2.8 TB of weights, gradients and Adam
// states (16 bytes each), i.e. > 35 GPUs' worth, so any plan that neither splits the model
// (TP*PP) nor shards it (ZeRO-3) is rejected for memory; the smallest overshoot is positive
// and the best plan fits.
TEST(PlanSearch, MemoryRejectionsAndFitOfTheBest) {
  const auto cat = testing::test_catalog();
  auto cfg = testing::small_job_json();
  cfg["model"] = "gpt3-175b";
  cfg["cluster"]["num_gpus"] = 64;
  cfg["training"]["global_batch_size"] = 64;
  cfg["training"]["seq_length"] = 2048;
  const JobSpec base = testing::load_with(cat, cfg, {});
  PlanSearchOptions o = analytic_options(3);
  o.space.micro_batch_sizes = {1};
  const PlanSearchResult r = search_plans(base, cat, o);
  EXPECT_GT(r.rejected.at("memory"), 0u);
  ASSERT_TRUE(r.smallest_memory_overshoot_bytes.has_value());
  EXPECT_GT(*r.smallest_memory_overshoot_bytes, 0.0);
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_LE(r.ranked.front().peak_memory_bytes, base.cluster.gpu.memory_bytes);
  std::size_t rejected = 0;
  for (const auto& [rule, n] : r.rejected) rejected += n;
  EXPECT_EQ(rejected + r.valid, r.candidates_total);
}

TEST(PlanSearch, JsonHasTheDocumentedFieldsAndIsThreadCountIndependent) {
  const auto cat = testing::test_catalog();
  const JobSpec base = testing::load_with(cat, testing::small_job_json(), {});
  PlanSearchOptions o = analytic_options(4);
  o.jobs = 1;
  const auto one = plan_search_to_json(search_plans(base, cat, o));
  o.jobs = 3;
  const auto three = plan_search_to_json(search_plans(base, cat, o));
  EXPECT_EQ(one.dump(), three.dump());
  for (const char* k : {"candidates_total", "valid", "rejected", "ranked", "best", "objective", "num_gpus"}) {
    EXPECT_TRUE(one.contains(k)) << k;
  }
  EXPECT_TRUE(one["rejected"]["memory"].contains("count"));
  EXPECT_TRUE(one["rejected"]["memory"].contains("smallest_overshoot_bytes"));
  EXPECT_TRUE(one["rejected"].contains("tp_divides_attention_heads"));
  ASSERT_EQ(one["ranked"].size(), 4u);
  EXPECT_EQ(one["best"], one["ranked"][0]);
  for (const char* k : {"plan", "engine", "step_time_s", "mfu", "tokens_per_s_per_gpu",
                        "peak_memory_bytes_per_gpu", "dominant_exposed_cost", "breakdown_s"}) {
    EXPECT_TRUE(one["best"].contains(k)) << k;
  }
  EXPECT_TRUE(one["best"]["plan"].contains("tp"));
  EXPECT_TRUE(one["best"]["plan"].contains("key"));
}

TEST(PlanSearch, DesRerankOnATinyCluster) {
  const auto cat = testing::test_catalog();
  const JobSpec base = testing::load_with(cat, testing::small_job_json(), {});
  PlanSearchOptions o = analytic_options(2);
  o.space.micro_batch_sizes = {1};
  o.space.max_context_parallel = 1;
  o.rerank_engine = EngineKind::Des;
  const PlanSearchResult r = search_plans(base, cat, o);
  ASSERT_EQ(r.ranked.size(), 2u);
  for (const auto& p : r.ranked) {
    EXPECT_EQ(p.engine, "des");
    EXPECT_GT(p.step_time_s, 0.0);
    EXPECT_GT(p.analytic_step_time_s, 0.0);
  }
  EXPECT_LE(r.ranked[0].step_time_s, r.ranked[1].step_time_s);
}

// ZeRO-1 and ZeRO-2 plans have the same step graph; the re-rank simulates such twins once.
// Plans with the same analytic figures are one row (on one node, DP = 1, ZeRO-0/1/2 shard
// nothing: the ZeRO-1 and ZeRO-2 plans are alternatives of the ZeRO-0 row). Every plan a row
// stands for must have the row's event-engine step time in its own run.
TEST(PlanSearch, DesRerankSharesTimingBetweenZeroOneAndTwoTwins) {
  const auto cat = testing::test_catalog();
  const JobSpec base = testing::load_with(cat, testing::small_job_json(), {});
  PlanSearchOptions o = analytic_options(8);
  o.space.micro_batch_sizes = {1};
  o.space.max_context_parallel = 1;
  o.rerank_engine = EngineKind::Des;
  const PlanSearchResult r = search_plans(base, cat, o);
  const auto all = enumerate_plans(base, o.space);
  SimulateOptions so;
  so.engine = EngineKind::Des;
  int twins = 0;
  for (const auto& row : r.ranked) {
    EXPECT_EQ(row.engine, "des");
    for (const auto& key : row.alternatives) {
      const auto it = std::find_if(all.begin(), all.end(), [&](const PlanCandidate& c) { return plan_key(c) == key; });
      ASSERT_NE(it, all.end()) << key;
      ++twins;
      EXPECT_DOUBLE_EQ(simulate_step(apply_plan(base, *it), cat, so).step_time_s, row.step_time_s) << key;
    }
  }
  EXPECT_GT(twins, 0);
}

// The written plan is a starting point: a job whose plan cannot run on its GPU count is
// still planned. 40 GPUs (5 nodes) with a batch of 16: DP must divide 16, so TP*PP*CP would be
// 40, 20, 10 or 5, none of which the 6-layer, 12-head model tiles (no PP 5, no TP 5). 32 GPUs
// do (DP 16 or TP 2 x DP 16 ...), as do 48 (PP 3 x DP 16): the search runs on 32 and names both.
TEST(PlanSearch, AGpuCountWithoutPlansFallsBackToTheLargestSmallerOne) {
  const auto cat = testing::test_catalog();
  auto cfg = testing::small_job_json();
  cfg["cluster"]["num_gpus"] = 40;
  EXPECT_THROW(parse_job(cfg, cat, {}), InputError);  // the written plan (DP 40) breaks the batch rule
  const JobSpec base = parse_job(cfg, cat, {}, WrittenPlan::Replaced);
  EXPECT_EQ(base.cluster.num_gpus, 40);
  const PlanSearchResult r = search_plans(base, cat, analytic_options(3));
  EXPECT_EQ(r.num_gpus, 40);
  EXPECT_EQ(r.num_gpus_used, 32);
  EXPECT_EQ(r.nearest_gpu_counts, (std::vector<std::int64_t>{32, 48}));
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_EQ(r.ranked.front().dp * r.ranked.front().plan.tp * r.ranked.front().plan.pp * r.ranked.front().plan.cp, 32);
  const auto j = plan_search_to_json(r);
  EXPECT_EQ(j["num_gpus_used"], 32);
  EXPECT_EQ(j["nearest_gpu_counts"], nlohmann::json::array({32, 48}));
  std::ostringstream text;
  print_plan_table(r, text);
  EXPECT_NE(text.str().find("no plan runs on exactly 40 GPUs; planning on 32"), std::string::npos) << text.str();
  // A count that admits plans is searched as given, with no neighbours listed.
  cfg["cluster"]["num_gpus"] = 8;
  const PlanSearchResult exact = search_plans(parse_job(cfg, cat, {}, WrittenPlan::Replaced), cat, analytic_options(1));
  EXPECT_EQ(exact.num_gpus_used, 8);
  EXPECT_TRUE(exact.nearest_gpu_counts.empty());
}

// Plans with the same figures are one row naming the others; each alternative really has them.
TEST(PlanSearch, IdenticalRowsAreShownOnceWithTheirAlternatives) {
  const auto cat = testing::test_catalog();
  const JobSpec base = testing::load_with(cat, testing::small_job_json(), {});
  const PlanSearchResult r = search_plans(base, cat, analytic_options(20));
  std::size_t alternatives = 0;
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    for (std::size_t k = i + 1; k < r.ranked.size(); ++k) {
      const auto& a = r.ranked[i];
      const auto& b = r.ranked[k];
      EXPECT_FALSE(a.step_time_s == b.step_time_s && a.peak_memory_bytes == b.peak_memory_bytes)
          << a.key << " and " << b.key << " are the same row";
    }
    for (const auto& key : r.ranked[i].alternatives) {
      ++alternatives;
      for (const auto& c : enumerate_plans(base, analytic_options(20).space)) {
        if (plan_key(c) != key) continue;
        SimulateOptions so;
        so.engine = EngineKind::Analytic;
        EXPECT_DOUBLE_EQ(simulate_step(apply_plan(base, c), cat, so).step_time_s, r.ranked[i].step_time_s) << key;
      }
    }
  }
  EXPECT_GT(alternatives, 0u);  // ZeRO-1 / ZeRO-2 twins at least
}

TEST(PlanSearch, ObjectiveAndDominantCost) {
  EXPECT_EQ(parse_plan_objective("mfu"), PlanObjective::Mfu);
  EXPECT_THROW(parse_plan_objective("speed"), InputError);
  StepBreakdown b;
  b.compute_s = 10;  // compute never counts as the dominant exposed cost
  b.pipeline_bubble_s = 2;
  b.exposed_dp_comm_s = 3;
  const auto [name, s] = dominant_exposed_cost(b);
  EXPECT_EQ(name, "exposed_dp_comm");
  EXPECT_DOUBLE_EQ(s, 3.0);
}

}  // namespace
}  // namespace megasim
