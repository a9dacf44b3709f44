#include <gtest/gtest.h>

#include "config/test_util.hpp"

namespace megasim {
namespace {

using nlohmann::json;

TEST(Validate, SmallJobDerivesPlan) {
  const JobSpec job = test::parse(test::small_job());
  // DP = 16 / (TP 2 * PP 2 * CP 1) = 4.
  EXPECT_EQ(job.parallel.data_parallel_size, 4);
  EXPECT_TRUE(job.parallel.sequence_parallel);  // default when TP > 1
  EXPECT_EQ(job.parallel.virtual_pipeline_model_parallel_size, 1);
  EXPECT_EQ(job.parallel.zero_stage, 1);
  EXPECT_EQ(job.parallel.placement, PlacementOrder::DpFirst);
  EXPECT_EQ(job.system.preset, "megatron-core");  // no system section: today's default
  EXPECT_EQ(job.seed, 1u);
  auto j = test::small_job();
  j["parallel"]["tensor_model_parallel_size"] = 1;
  EXPECT_FALSE(test::parse(j).parallel.sequence_parallel);  // nothing to shard with TP 1
  j["parallel"]["data_parallel_size"] = 8;                  // 16 / 2 = 8
  EXPECT_EQ(test::parse(j).parallel.data_parallel_size, 8);
  j["parallel"]["data_parallel_size"] = 4;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.data_parallel_size", "is derived as");
}

TEST(Validate, UnitStrings) {
  auto j = test::small_job();
  j["cluster"]["network"]["nic_bandwidth"] = "200Gbs";
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.network.nic_bandwidth", "unknown unit \"Gbs\"");
  j["cluster"]["network"]["nic_bandwidth"] = 200;
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.network.nic_bandwidth", "a bare number is not allowed");
  j["cluster"]["network"]["nic_bandwidth"] = "fast";
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.network.nic_bandwidth", "malformed bandwidth");
  j["cluster"]["network"]["nic_bandwidth"] = "1e400Gbps";
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.network.nic_bandwidth", "malformed");
  j = test::small_job();
  j["cluster"]["network"].erase("nic_bandwidth");
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.network.nic_bandwidth", "required when the job spans more than one node");
  j["cluster"]["num_gpus"] = 8;  // one node: no NIC needed
  j["parallel"]["pipeline_model_parallel_size"] = 1;
  EXPECT_EQ(test::parse(j).cluster.network.nic_bandwidth_Bps, 0.0);
}

TEST(Validate, ClusterShape) {
  auto j = test::small_job();
  j["cluster"]["num_gpus"] = 20;
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.num_gpus", "is not a whole number of 8-GPU nodes");
  j["cluster"]["num_gpus"] = 16;
  j["parallel"]["context_parallel_size"] = 3;
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.num_gpus", "not divisible by TP*PP*CP = 2*2*3 = 12");
  j = test::small_job();
  j["parallel"]["tensor_model_parallel_size"] = 16;
  j["parallel"]["pipeline_model_parallel_size"] = 1;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.tensor_model_parallel_size", "exceeds the NVLink domain of 8");
  j = test::small_job();
  j["cluster"]["gpus_per_node"] = 0;
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.gpus_per_node", "must be positive");
}

// Rack-scale NVLink: hosts of 4 GPUs inside 72-GPU NVLink domains.
TEST(Validate, NvlinkDomain) {
  auto j = test::small_job();
  j["cluster"]["gpus_per_node"] = 4;
  j["cluster"]["nvlink_domain_size"] = 70;
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.nvlink_domain_size", "must be a multiple of gpus_per_node (4)");
  j["cluster"]["nvlink_domain_size"] = 72;
  j["cluster"]["num_gpus"] = 100;
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.num_gpus", "not a whole number of 72-GPU NVLink domains");
  j["cluster"]["num_gpus"] = 144;
  j["parallel"]["tensor_model_parallel_size"] = 8;  // two hosts, one NVLink domain: allowed
  j["parallel"]["pipeline_model_parallel_size"] = 2;
  j["training"]["global_batch_size"] = 9;
  j["training"]["micro_batch_size"] = 1;
  const JobSpec ok = test::parse(j);
  EXPECT_EQ(ok.cluster.nvlink_domain_size, 72);
  EXPECT_EQ(nvlink_domain_gpus(ok.cluster), 72);
  j["parallel"]["tensor_model_parallel_size"] = 16;  // does not divide 72
  j["parallel"]["pipeline_model_parallel_size"] = 1;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.tensor_model_parallel_size", "does not divide the NVLink domain of 72");
  j = test::small_job();
  EXPECT_EQ(test::parse(j).cluster.nvlink_domain_size, test::parse(j).cluster.gpus_per_node);
}

TEST(Validate, TensorParallelDividesHeads) {
  auto j = test::small_job();
  j["model"]["num_attention_heads"] = 20;
  j["model"]["hidden_size"] = 1280;
  j["parallel"]["tensor_model_parallel_size"] = 8;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.tensor_model_parallel_size", "does not divide num_attention_heads 20");
  j = test::small_job();
  j["model"]["num_key_value_heads"] = 2;
  j["parallel"]["tensor_model_parallel_size"] = 4;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.tensor_model_parallel_size", "does not divide num_key_value_heads 2");
}

TEST(Validate, PipelineLayers) {
  auto j = test::small_job();
  j["cluster"]["num_gpus"] = 24;
  j["parallel"]["pipeline_model_parallel_size"] = 3;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.pipeline_model_parallel_size",
                     "num_hidden_layers 8 does not split evenly over PP 3 stages");
  j = test::small_job();
  j["parallel"]["virtual_pipeline_model_parallel_size"] = 3;  // 4 layers per stage
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.virtual_pipeline_model_parallel_size", "divisible by VPP");
  j["parallel"]["pipeline_model_parallel_size"] = 1;
  j["parallel"]["virtual_pipeline_model_parallel_size"] = 2;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.virtual_pipeline_model_parallel_size", "needs pipeline_model_parallel_size > 1");
}

// Uneven split, Megatron-Core style: L 10 over PP 4 with first 1 and last 1 leaves 8 layers for
// the 2 middle stages = 4 each. first 2 + last 1 leaves 7, which 2 stages cannot share evenly.
TEST(Validate, UnevenFirstLastStages) {
  auto j = test::small_job();
  j["model"]["num_hidden_layers"] = 10;
  j["cluster"]["num_gpus"] = 32;
  j["parallel"] = {{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 4},
                   {"decoder_first_pipeline_num_layers", 1}, {"decoder_last_pipeline_num_layers", 1}};
  EXPECT_EQ(test::parse(j).parallel.decoder_first_pipeline_num_layers, 1);
  j["parallel"]["decoder_first_pipeline_num_layers"] = 2;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.decoder_first_pipeline_num_layers",
                     "remaining 7 of 10 layers must split evenly");
  // With VPP 2 every stage's layer count must be even: first 2, last 2, middle 3 each fails.
  j["parallel"]["decoder_last_pipeline_num_layers"] = 2;
  j["parallel"]["virtual_pipeline_model_parallel_size"] = 2;
  j["training"]["global_batch_size"] = 16;  // DP 4 -> 4 micro-batches, divisible by PP 4
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.virtual_pipeline_model_parallel_size", "middle stage");
  j["parallel"]["decoder_first_pipeline_num_layers"] = 20;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.decoder_first_pipeline_num_layers", "remaining -12");
}

TEST(Validate, BatchRules) {
  auto j = test::small_job();
  j["training"]["global_batch_size"] = 30;  // DP 4 * MBS 1 = 4 does not divide 30
  EXPECT_INPUT_ERROR(test::parse(j), "training.global_batch_size", "not divisible by micro_batch_size * DP = 1*4 = 4");
  // Interleaved: GBS 12 / (MBS 1 * DP 4) = 3 micro-batches, not a multiple of PP 2.
  j["training"]["global_batch_size"] = 12;
  j["parallel"]["virtual_pipeline_model_parallel_size"] = 2;
  EXPECT_INPUT_ERROR(test::parse(j), "training.global_batch_size", "divisible by PP 2 (Megatron's rule)");
  j["parallel"]["virtual_pipeline_model_parallel_size"] = 1;
  EXPECT_NO_THROW(test::parse(j));  // the plain 1F1B schedule takes any count
}

TEST(Validate, ContextParallelSequence) {
  auto j = test::small_job();
  j["parallel"]["context_parallel_size"] = 2;
  j["parallel"]["pipeline_model_parallel_size"] = 1;
  j["training"]["seq_length"] = 2050;
  EXPECT_INPUT_ERROR(test::parse(j), "training.seq_length", "not divisible by 2*CP = 4");
  j["training"]["seq_length"] = 4096;
  EXPECT_EQ(test::parse(j).parallel.data_parallel_size, 4);
  j["parallel"]["context_parallel_size"] = 1;
  j["training"]["seq_length"] = 2047;  // odd tokens cannot shard over TP 2 with sequence parallel
  EXPECT_INPUT_ERROR(test::parse(j), "training.seq_length", "divisible by TP 2");
}

TEST(Validate, EnumsAndRanges) {
  auto j = test::small_job();
  j["training"]["precision"] = "bf32";
  EXPECT_INPUT_ERROR(test::parse(j), "training.precision", "unknown value \"bf32\"; valid: bf16, fp16, fp8");
  j = test::small_job();
  j["training"]["precision"] = "fp8";  // A100 has no FP8 tensor cores
  EXPECT_INPUT_ERROR(test::parse(j), "training.precision", "fp8 needs FP8 tensor cores");
  j["cluster"]["gpu"] = "h100-sxm5-80gb";
  EXPECT_EQ(test::parse(j).training.precision, Precision::Fp8);
  // Only sharded gradients (ZeRO-2/3) are reduced every micro-batch.
  j["parallel"]["zero_stage"] = 1;
  j["system"]["dp_reduce_every_micro_batch"] = true;
  EXPECT_INPUT_ERROR(test::parse(j), "system.dp_reduce_every_micro_batch", "needs parallel.zero_stage >= 2");
  j["parallel"]["zero_stage"] = 2;
  EXPECT_TRUE(test::parse(j).system.dp_reduce_every_micro_batch);
  j["system"].erase("dp_reduce_every_micro_batch");
  // LAMB is Apex's FusedLAMB only; PyTorch has no LAMB to run foreach or per tensor.
  j["training"]["optimizer"] = "lamb";
  j["system"]["optimizer_implementation"] = "foreach";
  EXPECT_INPUT_ERROR(test::parse(j), "system.optimizer_implementation", "must be \"fused\" with training.optimizer = lamb");
  j["system"]["optimizer_implementation"] = "fused";
  EXPECT_EQ(test::parse(j).training.optimizer, Optimizer::Lamb);
  j["training"].erase("optimizer");
  j["system"].erase("optimizer_implementation");
  // FP8 reduce-scatter userbuffers need FP8 training and TP overlap.
  j["system"]["tp_overlap"] = false;
  j["system"]["tp_fp8_forward_reduce_scatter"] = true;
  EXPECT_INPUT_ERROR(test::parse(j), "system.tp_fp8_forward_reduce_scatter", "needs training.precision = fp8");
  j["system"]["tp_overlap"] = true;
  EXPECT_TRUE(test::parse(j).system.tp_fp8_forward_reduce_scatter);
  j["training"]["precision"] = "bf16";
  EXPECT_INPUT_ERROR(test::parse(j), "system.tp_fp8_forward_reduce_scatter", "and system.tp_overlap = true");
  j = test::small_job();
  j["parallel"]["placement"] = "dp-last";
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.placement", "valid: dp-first, pp-first");
  j = test::small_job();
  j["parallel"]["zero_stage"] = 4;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.zero_stage", "must be at most 3");
  j = test::small_job();
  j["training"]["recompute"] = "some";
  EXPECT_INPUT_ERROR(test::parse(j), "training.recompute", "valid: none, selective, full");
  j = test::small_job();
  j["training"]["train_tokens"] = -1;
  EXPECT_INPUT_ERROR(test::parse(j), "training.train_tokens", "must be between");
  j = test::small_job();
  j["cluster"]["network"]["topology"] = "torus";
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.network.topology", "valid: rail-optimized-clos, fat-tree, rail-only");
}

TEST(Validate, StructureErrors) {
  auto j = test::small_job();
  j["trainning"] = j["training"];
  EXPECT_INPUT_ERROR(test::parse(j), "trainning", "did you mean \"training\"?");
  j = test::small_job();
  j.erase("training");
  EXPECT_INPUT_ERROR(test::parse(j), "training", "required section is missing: give an object with at least seq_length and global_batch_size");
  j = test::small_job();
  j["parallel"] = 3;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel", "expected an object, got number 3");
  j["parallel"] = "tp8";  // files only for parallel
  EXPECT_INPUT_ERROR(test::parse(j), "parallel", "must be a path to a JSON file");
  j = test::small_job();
  j["cluster"]["gpu"] = "a100";
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.gpu", "unknown gpu \"a100\"; valid: a100-sxm4-40gb");
  j = test::small_job();
  j["model"] = "missing/model.json";
  EXPECT_INPUT_ERROR(test::parse(j), "model", "cannot read");
  j = test::small_job();
  j["cluster"]["network"]["nic_bandwidth"] = {{"value", "200Gbps"}, {"sorce", "typo"}};
  EXPECT_INPUT_ERROR(test::parse(j), "cluster.network.nic_bandwidth", "may only hold");
}

TEST(Validate, SystemPresetAndOverrides) {
  auto j = test::small_job();
  j["system"] = {{"preset", "megatron-lm"}, {"tp_overlap", true}};
  SystemSpec s = test::parse(j).system;
  EXPECT_TRUE(s.tp_overlap);
  EXPECT_FALSE(s.pp_overlap);
  EXPECT_STREQ(to_string(s.attention_kernel), "unfused");
  j["system"] = "megascale";
  s = test::parse(j).system;
  EXPECT_EQ(s.preset, "megascale");
  EXPECT_TRUE(s.tp_overlap && s.pp_overlap && s.dp_overlap && s.dp_prefetch_first_all_gather && s.fused_kernels &&
              s.async_data_preprocessing && s.data_loader_per_node && s.gc_stragglers_fixed && s.comm_init_ordered);
  EXPECT_STREQ(to_string(s.attention_kernel), "flash-v2");
  EXPECT_STREQ(to_string(s.comm_init_store), "redis");
  EXPECT_STREQ(to_string(s.dp_overlap_granularity), "chunk");  // MegaScale §3.2 overlaps per model chunk
  j["system"] = {{"preset", "megascale"}, {"tp_overlapp", false}};
  EXPECT_INPUT_ERROR(test::parse(j), "system.tp_overlapp", "did you mean \"tp_overlap\"?");
  j["system"] = {{"preset", "deepspeed"}};
  EXPECT_INPUT_ERROR(test::parse(j), "system.preset", "unknown system preset \"deepspeed\"; valid: megascale, megatron-core, megatron-deepspeed, megatron-lm, pytorch-fsdp, torchtitan");
  j["system"] = {{"attention_kernel", "flash-v3"}};
  EXPECT_INPUT_ERROR(test::parse(j), "system.attention_kernel", "valid: unfused, flash-v1, flash-v2, cudnn-fused, auto");
  j["system"] = {{"dp_overlap_granularity", "bucket"}};
  EXPECT_STREQ(to_string(test::parse(j).system.dp_overlap_granularity), "bucket");
  j["system"] = {{"dp_overlap_granularity", "layer"}};
  EXPECT_INPUT_ERROR(test::parse(j), "system.dp_overlap_granularity", "valid: chunk, bucket");
  j["system"] = {{"straggler_host_fraction", 1.5}};
  EXPECT_INPUT_ERROR(test::parse(j), "system.straggler_host_fraction", "must be between 0 and 1");
}

TEST(Validate, DefaultSystemIsTodaysMegatronCore) {
  // No system section: Megatron-Core with Transformer Engine as NeMo's recipes run it.
  auto j = test::small_job();
  SystemSpec s = test::parse(j).system;
  EXPECT_EQ(s.preset, "megatron-core");
  EXPECT_TRUE(s.tp_overlap && s.pp_overlap && s.dp_overlap && s.fused_kernels && s.async_data_preprocessing);
  EXPECT_STREQ(to_string(s.tp_overlap_scope), "all-linears");
  EXPECT_STREQ(to_string(s.dp_overlap_granularity), "bucket");
  // "auto": FlashAttention-2 on Ampere (no cuDNN block), cuDNN fused attention on Hopper and
  // Blackwell (whose cuDNN block is derived from published FlashAttention-4 figures).
  EXPECT_STREQ(to_string(s.attention_kernel), "flash-v2");
  j["cluster"]["gpu"] = "h100-sxm5-80gb";
  EXPECT_STREQ(to_string(test::parse(j).system.attention_kernel), "cudnn-fused");
  j["cluster"]["gpu"] = "b200-sxm-180gb";
  EXPECT_STREQ(to_string(test::parse(j).system.attention_kernel), "cudnn-fused");
  // An explicit kernel wins over the preset's auto.
  j["system"] = {{"attention_kernel", "unfused"}};
  EXPECT_STREQ(to_string(test::parse(j).system.attention_kernel), "unfused");
}

TEST(Validate, MissingSectionsSayWhatTheyNeed) {
  for (const char* section : {"model", "cluster", "training"}) {
    auto j = test::small_job();
    j.erase(section);
    EXPECT_INPUT_ERROR(test::parse(j), section, "required section is missing: give ");
  }
  auto j = test::small_job();
  j["training"].erase("seq_length");
  EXPECT_INPUT_ERROR(test::parse(j), "training.seq_length", "required field is missing");
}

TEST(Validate, EmbeddingAndLossAccountedInPipelineSplit) {
  // Llama 3.1 405B's 126 layers on PP 8 x VPP 8: (126 + 2) / 64 = 2 slots per chunk, the first
  // chunk's first slot is the embedding and the last chunk's last slot the loss.
  auto j = test::small_job();
  j["model"] = "llama-3.1-405b";
  j["cluster"] = {{"base", "dgx-h100-ndr-clos"}, {"num_gpus", 512}};
  j["parallel"] = {{"tensor_model_parallel_size", 8}, {"pipeline_model_parallel_size", 8},
                   {"virtual_pipeline_model_parallel_size", 8},
                   {"account_for_embedding_in_pipeline_split", true}, {"account_for_loss_in_pipeline_split", true}};
  j["training"]["global_batch_size"] = 64;  // DP 8 -> 8 micro-batches, divisible by PP 8
  const JobSpec job = test::parse(j);
  EXPECT_TRUE(job.parallel.account_for_embedding_in_pipeline_split && job.parallel.account_for_loss_in_pipeline_split);
  // Without the accounting 126 layers do not split over 8 stages.
  j["parallel"]["account_for_embedding_in_pipeline_split"] = false;
  j["parallel"]["account_for_loss_in_pipeline_split"] = false;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.pipeline_model_parallel_size", "does not split evenly");
  // One of the two: 127 slots do not split into 64 chunks.
  j["parallel"]["account_for_embedding_in_pipeline_split"] = true;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.account_for_embedding_in_pipeline_split", "does not split evenly");
  // Exclusive with an explicit first stage (Megatron-Core's rule).
  j["parallel"]["account_for_loss_in_pipeline_split"] = true;
  j["parallel"]["decoder_first_pipeline_num_layers"] = 14;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.account_for_embedding_in_pipeline_split", "cannot be combined");
  // A chunk with one slot would lose its only layer.
  j["parallel"].erase("decoder_first_pipeline_num_layers");
  j["parallel"]["virtual_pipeline_model_parallel_size"] = 16;
  j["training"]["global_batch_size"] = 64;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.account_for_embedding_in_pipeline_split", "no transformer layer");
}

TEST(Validate, OutOfMemoryPlanIsNotAnError) {
  auto j = test::small_job();
  j["model"] = "llama-3.1-405b";
  j["cluster"]["num_gpus"] = 8;
  j["parallel"] = {{"tensor_model_parallel_size", 8}};
  j["training"]["global_batch_size"] = 8;
  EXPECT_EQ(test::parse(j).model.hidden_size, 16384);
}

}  // namespace
}  // namespace megasim
