#include "megasim/sweep/ablation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "megasim/core/error.hpp"
#include "megasim/exec/simulate.hpp"
#include "sweep/sweep_test_util.hpp"

namespace megasim {
namespace {

SweepJobLoader loader(const Catalog& cat, std::vector<std::string> base_sets = {}) {
  return [&cat, base_sets](const std::vector<std::string>& sets) {
    auto all = base_sets;
    all.insert(all.end(), sets.begin(), sets.end());
    return testing::load_with(cat, testing::small_job_json(), all);
  };
}

std::vector<std::string> techniques(const std::vector<AblationFlip>& flips) {
  std::vector<std::string> t;
  for (const auto& f : flips) t.push_back(f.technique);
  return t;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// On one node at TP 1, PP 1 there is no TP or PP communication to overlap: those flips are left
// out; DP 8 keeps the DP ones. The megatron-lm preset has everything off, so every flip is on.
TEST(Ablation, FlipsFollowTheJobsDimensionsAndSwitches) {
  const auto cat = testing::test_catalog();
  const auto flips = ablation_flips(loader(cat)({}));
  const auto t = techniques(flips);
  EXPECT_FALSE(has(t, "TP overlap"));
  EXPECT_FALSE(has(t, "PP overlap"));
  EXPECT_TRUE(has(t, "DP overlap"));
  EXPECT_FALSE(has(t, "first DP all-gather prefetched"));  // only once DP overlap is on
  EXPECT_FALSE(has(t, "sliding-window attention"));         // no window to switch off
  for (const auto& f : flips) {
    if (f.technique == "DP overlap") {
      EXPECT_EQ(f.sets, std::vector<std::string>{"system.dp_overlap=true"});
      EXPECT_EQ(f.from, "off");
      EXPECT_EQ(f.to, "on");
    }
    if (f.technique == "LAMB with a 3x batch") {
      EXPECT_EQ(f.sets, (std::vector<std::string>{"training.optimizer=lamb", "training.global_batch_size=48"}));
    }
  }
  // TP 2, interleaved PP 2 and a window bring their flips (PP overlap needs virtual stages); a
  // screened fleet has no straggler hunting.
  EXPECT_FALSE(has(techniques(ablation_flips(loader(cat)({"parallel.pipeline_model_parallel_size=2"}))),
                   "PP overlap"));
  const auto more = techniques(ablation_flips(loader(cat)(
      {"parallel.tensor_model_parallel_size=2", "parallel.pipeline_model_parallel_size=2",
       "parallel.virtual_pipeline_model_parallel_size=3", "model.sliding_window=256", "system.dp_overlap=true", "system.straggler_host_fraction=0"})));
  EXPECT_TRUE(has(more, "TP overlap"));
  EXPECT_TRUE(has(more, "PP overlap"));
  EXPECT_TRUE(has(more, "sliding-window attention"));
  EXPECT_TRUE(has(more, "first DP all-gather prefetched"));
  EXPECT_FALSE(has(more, "straggler hunting"));
  EXPECT_TRUE(has(techniques(ablation_flips(loader(cat)({}))), "straggler hunting"));  // the catalog default fleet
}

// Every flip is simulated against the base; a flip the config rejects is a row with the error.
TEST(Ablation, RowsCarryReportsDeltasAndErrors) {
  const auto cat = testing::test_catalog();
  const auto load = loader(cat);
  const JobSpec base = load({});
  const auto simulate = [&cat](const JobSpec& j) {
    SimulateOptions so;
    so.engine = EngineKind::Analytic;
    return simulate_step(j, cat, so);
  };
  // A loader that rejects the fused-kernels flip, as an invalid combination would be.
  const SweepJobLoader picky = [&](const std::vector<std::string>& sets) {
    if (!sets.empty() && sets[0].rfind("system.fused_kernels", 0) == 0) {
      throw InputError("system.fused_kernels", "rejected for this test");
    }
    return load(sets);
  };
  AblationOptions o;
  o.jobs = 2;
  const Ablation a = run_ablation(base, picky, simulate, o);
  ASSERT_EQ(a.rows.size(), ablation_flips(base).size());
  EXPECT_NEAR(a.base.mfu, simulate(base).mfu, 1e-15);
  bool saw_error = false;
  for (const auto& r : a.rows) {
    if (r.flip.technique == "fused LayerNorm/GeLU/bias-dropout-add") {
      EXPECT_FALSE(r.report);
      EXPECT_NE(r.error.find("rejected for this test"), std::string::npos);
      saw_error = true;
      continue;
    }
    ASSERT_TRUE(r.report) << r.flip.technique << ": " << r.error;
    EXPECT_NEAR(delta_mfu_points(a, r), 100.0 * (r.report->mfu - a.base.mfu), 1e-12);
    if (r.flip.technique == "straggler hunting") {
      EXPECT_GT(delta_mfu_points(a, r), 0.0);  // removing slow hosts helps, if only a little on one node
      EXPECT_GT(delta_tokens_per_s_percent(a, r), 0.0);
    }
    if (r.flip.technique == "ordered communicator init") {
      EXPECT_LT(r.report->startup_s, a.base.startup_s);  // start-up only
      EXPECT_NEAR(r.report->step_time_s, a.base.step_time_s, 1e-12);
    }
  }
  EXPECT_TRUE(saw_error);
  // The same rows whatever the thread count.
  o.jobs = 1;
  const Ablation serial = run_ablation(base, picky, simulate, o);
  EXPECT_EQ(ablation_to_json(serial).dump(), ablation_to_json(a).dump());
  std::ostringstream text;
  write_ablation_text(a, text);
  EXPECT_NE(text.str().find("invalid: system.fused_kernels"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("DP overlap"), std::string::npos);
  const auto j = ablation_to_json(a);
  EXPECT_EQ(j["rows"].size(), a.rows.size());
  EXPECT_TRUE(j["base"].contains("mfu"));
}

}  // namespace
}  // namespace megasim
