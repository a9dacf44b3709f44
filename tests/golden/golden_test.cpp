// Golden CLI outputs: the bundled jobs' reports, compared field by field with a relative
// tolerance of 1e-6 (so a deliberate model change shows up as a readable diff, and a refresh
// is `MEGASIM_UPDATE_GOLDEN=1 ctest -R Golden`).
#include <gtest/gtest.h>

#include "golden_support.hpp"

namespace megasim {
namespace {

using testing::matches_golden;
using testing::run;

nlohmann::json without_version(nlohmann::json j) {
  j.erase("megasim_version");
  return j;
}

TEST(Golden, SimulateDefaultAnalytic) {
  const auto r = run({"simulate", "megascale-175b-12288", "--engine", "analytic", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(matches_golden("simulate-megascale-175b-12288-analytic.json",
                             without_version(nlohmann::json::parse(r.out))));
}

TEST(Golden, SimulateDefaultDes) {
  const auto r = run({"simulate", "megascale-175b-12288", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["engine"], "des");
  EXPECT_TRUE(matches_golden("simulate-megascale-175b-12288-des.json", without_version(j)));
}

TEST(Golden, SimulateMegatronBaselineAnalytic) {
  const auto r = run({"simulate", "megatron-175b-12288", "--engine", "analytic", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(matches_golden("simulate-megatron-175b-12288-analytic.json",
                             without_version(nlohmann::json::parse(r.out))));
}

TEST(Golden, ReportHasEveryContractField) {
  const auto r = run({"simulate", "megascale-175b-12288", "--engine", "analytic", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"schema_version", "megasim_version", "engine", "step_time_s", "tokens_per_s",
                          "mfu", "hfu", "model_tflops_per_gpu", "model_flops_per_step",
                          "time_to_train_days", "breakdown_s", "memory", "plan", "model_parameters"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"compute", "exposed_tp_comm", "exposed_pp_comm", "exposed_dp_comm",
                          "exposed_cp_comm", "pipeline_bubble", "optimizer", "data_loading", "other"}) {
    EXPECT_TRUE(j["breakdown_s"].contains(key)) << key;
  }
  for (const char* key : {"peak_bytes_per_gpu", "capacity_bytes", "fits", "breakdown_bytes"}) {
    EXPECT_TRUE(j["memory"].contains(key)) << key;
  }
  for (const char* key : {"tp", "pp", "vpp", "cp", "dp", "micro_batches_per_pipeline"}) {
    EXPECT_TRUE(j["plan"].contains(key)) << key;
  }
  // The breakdown adds up to the step time.
  double sum = 0;
  for (const auto& [k, v] : j["breakdown_s"].items()) sum += v.get<double>();
  EXPECT_NEAR(sum, j["step_time_s"].get<double>(), 1e-9 * sum);
  EXPECT_EQ(j["plan"]["dp"], 192);
  EXPECT_EQ(j["plan"]["micro_batches_per_pipeline"], 32);
}

TEST(Golden, ListGpusNamesTheContractCatalog) {
  const auto r = run({"list", "gpus"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* g : {"a100-sxm4-40gb", "a100-sxm4-80gb", "a800-sxm4-80gb", "h100-sxm5-80gb",
                        "h800-sxm5-80gb", "h200-sxm-141gb", "b200-sxm-180gb"}) {
    EXPECT_NE(r.out.find(g), std::string::npos) << g;
  }
}

}  // namespace
}  // namespace megasim
