#include <gtest/gtest.h>

#include <fstream>

#include "config/test_util.hpp"

namespace megasim {
namespace {

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "megasim-config-load";
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p) << text;
  return p;
}

// Textbook (MegaScale Table 2, last row): 12,288 GPUs / (TP 8 * PP 8 * CP 1) = DP 192;
// 6144 sequences / (MBS 1 * DP 192) = 32 micro-batches per pipeline, 32 % PP 8 = 0 as the
// interleaved schedule requires; 96 layers / PP 8 = 12 per stage = 6 chunks of 2 layers.
TEST(Load, MegaScale175bOn12288Textbook) {
  const auto cat = test::catalog();
  const JobSpec job = load_job(cat.root() / "megascale-175b-12288.json", {}, cat);
  EXPECT_EQ(job.name, "megascale-175b-12288");
  EXPECT_EQ(job.model.name, "megascale-175b");
  EXPECT_EQ(job.model.hidden_size, 12288);
  EXPECT_EQ(job.model.num_attention_heads, 128);
  EXPECT_EQ(job.model.head_dim, 96);
  EXPECT_EQ(job.model.vocab_size, 64000);
  EXPECT_EQ(job.cluster.name, "megascale-a800-clos");
  EXPECT_EQ(job.cluster.gpu.name, "a800-sxm4-80gb");
  EXPECT_EQ(job.cluster.num_gpus, 12288);
  EXPECT_DOUBLE_EQ(job.cluster.network.nic_bandwidth_Bps, 25e9);
  EXPECT_EQ(job.parallel.data_parallel_size, 192);
  EXPECT_EQ(job.parallel.virtual_pipeline_model_parallel_size, 6);
  EXPECT_EQ(job.parallel.zero_stage, 2);
  EXPECT_TRUE(job.parallel.sequence_parallel);
  EXPECT_EQ(job.training.global_batch_size / (job.training.micro_batch_size * job.parallel.data_parallel_size), 32);
  EXPECT_EQ(job.training.train_tokens, 3e11);
  EXPECT_EQ(job.training.optimizer, Optimizer::Adam);
  EXPECT_EQ(job.system.preset, "megascale");
  EXPECT_TRUE(job.system.tp_overlap);
  EXPECT_STREQ(to_string(job.system.attention_kernel), "flash-v2");
}

// The framework presets of issue 28 carry their frameworks' defaults (each sourced in its file).
TEST(Load, FrameworkPresetsCarryTheirFrameworksDefaults) {
  const auto cat = test::catalog();
  const auto file = cat.root() / "megatron-175b-12288.json";
  const JobSpec fsdp = load_job(file, {"system.preset=pytorch-fsdp"}, cat);
  EXPECT_TRUE(fsdp.system.dp_reduce_every_micro_batch);  // FULL_SHARD keeps sharded gradients
  EXPECT_FALSE(fsdp.system.fused_kernels);               // eager modules
  EXPECT_FALSE(fsdp.system.dp_prefetch_first_all_gather);
  EXPECT_TRUE(fsdp.system.grad_reduce_in_fp32);
  const JobSpec titan = load_job(file, {"system.preset=torchtitan"}, cat);
  EXPECT_TRUE(titan.system.gc_stragglers_fixed);  // gc.disable + collect in step
  EXPECT_FALSE(titan.system.tp_overlap);          // async TP off unless compiled and asked for
  EXPECT_TRUE(titan.system.dp_reduce_every_micro_batch);
  const JobSpec ds = load_job(file, {"system.preset=megatron-deepspeed"}, cat);
  EXPECT_FALSE(ds.system.pp_overlap);  // blocking p2p
  EXPECT_FALSE(ds.system.dp_overlap);  // ReduceGrads after the last micro-batch
  EXPECT_FALSE(ds.system.grad_reduce_in_fp32);  // communication_data_type BF16
  EXPECT_STREQ(to_string(ds.system.attention_kernel), "unfused");
}

TEST(Load, MegatronBaselineAndOverrides) {
  const auto cat = test::catalog();
  const auto file = cat.root() / "megatron-175b-12288.json";
  const JobSpec base = load_job(file, {}, cat);
  EXPECT_EQ(base.system.preset, "megatron-lm");
  EXPECT_FALSE(base.system.tp_overlap);
  EXPECT_STREQ(to_string(base.system.attention_kernel), "unfused");
  EXPECT_STREQ(to_string(base.system.comm_init_store), "tcpstore");
  // 6144 GPUs -> DP 96 -> 64 micro-batches per pipeline.
  const JobSpec half = load_job(file, {"cluster.num_gpus=6144", "system.preset=megascale"}, cat);
  EXPECT_EQ(half.parallel.data_parallel_size, 96);
  EXPECT_TRUE(half.system.tp_overlap);
  EXPECT_INPUT_ERROR(load_job(file, {"cluster.num_gpus=6000"}, cat), "cluster.num_gpus", "not divisible by TP*PP*CP");
}

TEST(Load, SampleJobWithHuggingFaceModelFile) {
  const auto cat = test::catalog();
  const JobSpec job = load_job(test::data_dir() / "llama-3.1-8b-job.json", {}, cat);
  EXPECT_EQ(job.name, "llama-3.1-8b-job");  // file stem
  EXPECT_EQ(job.model.num_key_value_heads, 8);
  EXPECT_EQ(job.cluster.gpu.name, "h100-sxm5-80gb");
  EXPECT_EQ(job.cluster.num_gpus, 64);
  EXPECT_EQ(job.parallel.data_parallel_size, 8);  // 64 / (4 * 2)
  EXPECT_EQ(job.system.preset, "megascale");
}

TEST(Load, UnreadableAndMalformedFiles) {
  const auto cat = test::catalog();
  EXPECT_INPUT_ERROR(load_job("/nonexistent/job.json", {}, cat), "CONFIG", "cannot read \"/nonexistent/job.json\"");
  const auto bad = temp_file("bad.json", "{\n  \"model\": \"gpt3-175b\",\n  \"cluster\": ,\n}\n");
  EXPECT_INPUT_ERROR(load_job(bad, {}, cat), "CONFIG", "not valid JSON at line 3, column 14");
  EXPECT_INPUT_ERROR(read_json_file(std::filesystem::path(::testing::TempDir()), "model"), "model", "is a directory");
  // A section file that is broken names the section's JSON path.
  temp_file("broken-model.json", "{\"hidden_size\": 12");
  auto j = test::small_job();
  j["model"] = "broken-model.json";
  EXPECT_INPUT_ERROR(parse_job(j, cat, bad.parent_path()), "model", "broken-model.json\": not valid JSON at line 1");
}

// A key written twice in one object would leave one value unread: exit 2 naming it, in the job
// file (top-level names) and in a section file (under its section).
TEST(Load, KeyWrittenTwiceIsAnError) {
  const auto cat = test::catalog();
  const auto twice = temp_file("twice.json",
                               "{\"model\": \"llama-3.1-8b\", \"cluster\": {\"base\": \"dgx-h100-ndr-clos\", \"num_gpus\": 8},\n"
                               " \"training\": {\"seq_length\": 4096, \"global_batch_size\": 64, \"seq_length\": 8192}}\n");
  EXPECT_INPUT_ERROR(load_job(twice, {}, cat), "training.seq_length", "key written twice in one object");
  temp_file("twice-model.json", "{\"base\": \"llama-3.1-8b\", \"rope\": {\"theta\": 1, \"theta\": 2}}");
  auto j = test::small_job();
  j["model"] = "twice-model.json";
  EXPECT_INPUT_ERROR(parse_job(j, cat, twice.parent_path()), "model.rope.theta", "key written twice");
  // The same key in two different objects is fine.
  const auto apart = temp_file("apart.json", "{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}, \"c\": [{\"x\": 1}, {\"x\": 2}]}");
  EXPECT_NO_THROW(read_json_file(apart, "model"));
}

TEST(Load, SectionFilesAndBase) {
  const auto cat = test::catalog();
  const auto dir = temp_file("my-gpu.json", R"({"peak_bf16": "100TFLOPS", "peak_fp32": "10TFLOPS",
      "memory": "24GiB", "memory_bandwidth": "1TB/s", "nvlink_bandwidth": "100GB/s",
      "architecture_sm": 80, "profile": "ampere"})").parent_path();
  temp_file("my-cluster.json", R"({"gpu": "my-gpu.json", "num_gpus": 8})");
  auto j = test::small_job();
  j["cluster"] = "my-cluster.json";
  j["parallel"]["pipeline_model_parallel_size"] = 4;
  JobSpec job = parse_job(j, cat, dir);
  EXPECT_EQ(job.cluster.gpu.name, "my-gpu");
  EXPECT_DOUBLE_EQ(job.cluster.gpu.memory_bytes, 24.0 * 1073741824.0);
  EXPECT_EQ(job.cluster.name, "my-cluster");
  // "base" extends a catalog entry; the file's relative gpu path survives being moved.
  j["cluster"] = {{"base", (dir / "my-cluster.json").string()}, {"gpus_per_node", 4}, {"num_gpus", 4}};
  j["parallel"]["pipeline_model_parallel_size"] = 2;
  job = parse_job(j, cat, "/");
  EXPECT_EQ(job.cluster.gpus_per_node, 4);
  EXPECT_EQ(job.cluster.gpu.name, "my-gpu");
  temp_file("loop.json", R"({"base": "loop.json"})");
  j["cluster"] = "loop.json";
  EXPECT_INPUT_ERROR(parse_job(j, cat, dir), "cluster.base.base.base.base.base.base.base.base.base.base", "a cycle?");
}

TEST(Load, EnumNamesRoundTrip) {
  EXPECT_STREQ(to_string(Activation::GeluNew), "gelu_new");
  EXPECT_STREQ(to_string(Norm::RmsNorm), "rmsnorm");
  EXPECT_STREQ(to_string(Precision::Fp8), "fp8");
  EXPECT_STREQ(to_string(Recompute::Selective), "selective");
  EXPECT_STREQ(to_string(Optimizer::Lamb), "lamb");
  EXPECT_STREQ(to_string(Topology::RailOptimizedClos), "rail-optimized-clos");
  EXPECT_STREQ(to_string(Routing::IdealSpray), "ideal-spray");
  EXPECT_STREQ(to_string(PlacementOrder::PpFirst), "pp-first");
}

}  // namespace
}  // namespace megasim
