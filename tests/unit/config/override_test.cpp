#include <gtest/gtest.h>

#include "config/test_util.hpp"

namespace megasim {
namespace {

using nlohmann::json;

json set(json j, std::string_view assignment) {
  apply_override(j, assignment, test::catalog(), test::data_dir());
  return j;
}

TEST(Override, ValuesParseAsJsonElseString) {
  auto j = set(test::small_job(), "parallel.tensor_model_parallel_size=4");
  EXPECT_EQ(j["parallel"]["tensor_model_parallel_size"], 4);
  j = set(j, "parallel.sequence_parallel=false");
  EXPECT_EQ(j["parallel"]["sequence_parallel"], false);
  j = set(j, "name=my run");
  EXPECT_EQ(j["name"], "my run");
  j = set(j, "model.sliding_window=null");
  EXPECT_TRUE(j["model"]["sliding_window"].is_null());
  j = set(j, "system.tp_overlap=true");  // creates the missing section
  EXPECT_EQ(j["system"]["tp_overlap"], true);
  j = set(j, "cluster.network={\"nic_bandwidth\": \"400Gbps\"}");
  EXPECT_DOUBLE_EQ(test::parse(j).cluster.network.nic_bandwidth_Bps, 50e9);
}

TEST(Override, ResolvesStringSectionsFirst) {
  auto j = test::small_job();
  j["cluster"] = "megascale-a100-clos";
  j = set(j, "cluster.num_gpus=4096");
  j["training"]["global_batch_size"] = 1024;  // DP = 4096 / (2 * 2)
  ASSERT_TRUE(j["cluster"].is_object());
  const JobSpec job = test::parse(j);
  EXPECT_EQ(job.cluster.num_gpus, 4096);
  EXPECT_TRUE(job.cluster.network.split_port);  // the rest still comes from the catalog
  EXPECT_EQ(job.cluster.gpu.name, "a100-sxm4-80gb");

  j = set(j, "cluster.gpu.memory=40GiB");  // nested catalog section
  EXPECT_DOUBLE_EQ(test::parse(j).cluster.gpu.memory_bytes, 40.0 * 1073741824.0);

  j = test::small_job();
  j["model"] = "gpt3-175b";
  j = set(j, "model.vocab_size=64000");
  j["parallel"] = {{"tensor_model_parallel_size", 8}};
  j["training"]["global_batch_size"] = 2;
  EXPECT_EQ(test::parse(j).model.vocab_size, 64000);
  EXPECT_EQ(test::parse(j).model.num_attention_heads, 96);

  j = test::small_job();
  j["model"] = "hf-gpt-neox-20b-config.json";  // file relative to base_dir
  j = set(j, "model.num_hidden_layers=4");
  EXPECT_EQ(test::parse(j).model.num_hidden_layers, 4);
  EXPECT_TRUE(test::parse(j).model.use_parallel_residual);
}

TEST(Override, SystemPresetSwitchesWholePreset) {
  auto j = test::small_job();
  j["system"] = "megatron-lm";
  j = set(j, "system.preset=megascale");
  EXPECT_TRUE(test::parse(j).system.tp_overlap);
  j = set(test::small_job(), "system=megascale");
  EXPECT_STREQ(to_string(test::parse(j).system.comm_init_store), "redis");
}

TEST(Override, MalformedAssignments) {
  const auto j = test::small_job();
  EXPECT_INPUT_ERROR(set(j, "parallel.tensor_model_parallel_size"), "--set", "expected PATH=VALUE");
  EXPECT_INPUT_ERROR(set(j, "=4"), "--set", "expected PATH=VALUE");
  EXPECT_INPUT_ERROR(set(j, "parallel..x=4"), "--set", "empty key in path \"parallel..x\"");
  EXPECT_INPUT_ERROR(set(j, "training.seq_length.x=1"), "--set",
                     "cannot set \"training.seq_length.x\": \"training.seq_length\" is number 2048, not an object");
  auto k = j;
  k["model"] = "no-such-model";
  EXPECT_INPUT_ERROR(set(k, "model.vocab_size=1"), "model", "unknown model \"no-such-model\"");
  // A misspelt key is set as written and then rejected by the parser with a suggestion.
  EXPECT_INPUT_ERROR(test::parse(set(j, "parallel.tensor_parallel_size=4")), "parallel.tensor_parallel_size",
                     "did you mean \"tensor_model_parallel_size\"?");
}

}  // namespace
}  // namespace megasim
