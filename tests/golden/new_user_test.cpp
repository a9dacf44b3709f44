// What a new user meets first, through the CLI: the default system is today's Megatron-Core,
// jobs inside one node need no NIC, missing sections say what they need, the planner plans a
// job whose written plan cannot run, and Megatron-Core's accounted pipeline split.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "golden_support.hpp"

namespace megasim {
namespace {

using testing::run;

// Writes `json` to a temporary config file and returns its path.
std::string config_file(const std::string& name, const std::string& json) {
  const auto path = std::filesystem::temp_directory_path() / ("megasim-new-user-" + name + ".json");
  std::ofstream(path) << json;
  return path.string();
}

TEST(NewUser, JobsInsideOneNodeNeedNoNic) {
  const auto one = config_file("one-gpu", R"({
    "model": {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16, "vocab_size": 32000},
    "cluster": {"gpu": "h200-sxm-141gb", "num_gpus": 1, "gpus_per_node": 1},
    "training": {"seq_length": 2048, "global_batch_size": 8}})");
  const auto node = config_file("one-node", R"({"model": "llama-3.1-8b",
    "cluster": {"gpu": "h100-sxm5-80gb", "num_gpus": 8, "gpus_per_node": 8},
    "parallel": {"tensor_model_parallel_size": 2},
    "training": {"seq_length": 4096, "global_batch_size": 16}})");
  for (const auto& cfg : {one, node}) {
    for (const char* engine : {"des", "analytic"}) {
      const auto r = run({"simulate", cfg, "--engine", engine, "--json"});
      ASSERT_EQ(r.code, 0) << cfg << " " << engine << ": " << r.err;
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_GT(j["step_time_s"].get<double>(), 0.0);
      EXPECT_TRUE(j["memory"]["fits"].get<bool>());
    }
  }
  const auto ex = run({"explain", node});
  ASSERT_EQ(ex.code, 0) << ex.err;
  EXPECT_NE(ex.out.find("one node, no scale-out network"), std::string::npos) << ex.out;
  // A job that spans nodes still has to state its NICs.
  const auto two = config_file("two-nodes", R"({"model": "llama-3.1-8b",
    "cluster": {"gpu": "h100-sxm5-80gb", "num_gpus": 16, "gpus_per_node": 8},
    "training": {"seq_length": 4096, "global_batch_size": 16}})");
  const auto bad = run({"simulate", two});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("cluster.network.nic_bandwidth: required when the job spans more than one node"),
            std::string::npos)
      << bad.err;
}

TEST(NewUser, MissingSectionSaysWhatItNeeds) {
  const auto cfg = config_file("no-training", R"({"model": "llama-3.1-8b", "cluster": "dgx-h100-ndr-clos"})");
  const auto r = run({"simulate", cfg});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("training: required section is missing: give an object with at least seq_length and "
                       "global_batch_size"),
            std::string::npos)
      << r.err;
  const auto help = run({"simulate", "--help"});
  EXPECT_NE(help.out.find("\"training\": {\"seq_length\": 8192, \"global_batch_size\": 512}"), std::string::npos)
      << help.out;
}

// Llama 3.1 8B on 8 H100s at sequence 8192 without a system section: the default is Megatron-Core
// with cuDNN's fused attention, which keeps no score matrices; the 2023 megatron-lm preset's
// unfused attention keeps them (about 168 GiB per GPU of them at this shape) and runs slower.
TEST(NewUser, DefaultSystemIsTodaysMegatronCore) {
  const auto cfg = config_file("llama8b-8xh100", R"({"model": "llama-3.1-8b",
    "cluster": {"base": "dgx-h100-ndr-clos", "num_gpus": 8},
    "training": {"seq_length": 8192, "global_batch_size": 16}})");
  const auto today = run({"simulate", cfg, "--engine", "analytic", "--json"});
  const auto old = run({"simulate", cfg, "--engine", "analytic", "--json", "--set", "system.preset=megatron-lm"});
  ASSERT_EQ(today.code, 0) << today.err;
  ASSERT_EQ(old.code, 0) << old.err;
  const auto t = nlohmann::json::parse(today.out);
  const auto o = nlohmann::json::parse(old.out);
  EXPECT_LT(t["step_time_s"].get<double>(), o["step_time_s"].get<double>());
  const double gib = 1024.0 * 1024.0 * 1024.0;
  EXPECT_GT(o["memory"]["breakdown_bytes"]["activations"].get<double>() -
                t["memory"]["breakdown_bytes"]["activations"].get<double>(),
            100 * gib);
  const auto systems = run({"list", "systems"});
  for (const char* preset : {"megatron-core", "megascale", "megatron-lm", "pytorch-fsdp", "torchtitan", "megatron-deepspeed"}) {
    EXPECT_NE(systems.out.find(preset), std::string::npos) << preset;
  }
}

// Calculon's example: 530B with a batch of 2,520 on 5,128 GPUs (8 x 641, and 641 is prime): no
// plan tiles it, and the written plan (DP 641) is invalid; the planner plans 5,120 GPUs instead.
TEST(NewUser, PlannerPlansWhenTheWrittenPlanCannotRun) {
  const auto r = run({"plan", "megascale-175b-12288", "--set", "model=megascale-530b", "--set",
                      "cluster.num_gpus=5128", "--set", "training.global_batch_size=2520", "--rerank",
                      "analytic", "--top", "3", "--no-progress", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["num_gpus"], 5128);
  EXPECT_LT(j["num_gpus_used"].get<int>(), 5128);
  EXPECT_EQ(j["num_gpus_used"].get<int>() % 8, 0);
  ASSERT_FALSE(j["ranked"].empty());
  EXPECT_EQ(j["nearest_gpu_counts"][0], j["num_gpus_used"]);
}

TEST(NewUser, ExplainShowsTheAccountedPipelineSplit) {
  const auto r = run({"explain", "llama-3.1-70b-1024-h100", "--set", "model=llama-3.1-405b", "--set",
                      "parallel.tensor_model_parallel_size=8", "--set", "parallel.pipeline_model_parallel_size=8",
                      "--set", "parallel.virtual_pipeline_model_parallel_size=8", "--set",
                      "parallel.account_for_embedding_in_pipeline_split=true", "--set",
                      "parallel.account_for_loss_in_pipeline_split=true", "--max-rows", "4"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stage 0: 15 layers in 8 chunks of 1+2+2+2+2+2+2+2 (+ embedding as a layer)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("stage 7: 15 layers in 8 chunks of 2+2+2+2+2+2+2+1 (+ loss as a layer)"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace megasim
