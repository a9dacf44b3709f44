// Mixture of Experts and multi-head latent attention: reading the big families' unmodified
// Hugging Face configs, counting parameters and FLOPs as their papers do, Megatron-Core's
// expert-grid rules, the pipeline layout, and the routing-skew model.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "config/test_util.hpp"
#include "megasim/model/flops.hpp"
#include "megasim/model/layer_ops.hpp"
#include "megasim/model/memory.hpp"
#include "megasim/model/moe_routing.hpp"
#include "megasim/model/params.hpp"

namespace megasim {
namespace {

// `model` (a tests/data path or catalog name) on 64 H100s, no model parallelism, seq 4096.
nlohmann::json moe_job(const std::string& model) {
  auto j = test::small_job();
  j["model"] = model;
  j["cluster"] = {{"base", "dgx-h100-ndr-clos"}, {"num_gpus", 64}};
  j["parallel"] = {{"tensor_model_parallel_size", 1}, {"pipeline_model_parallel_size", 1}};
  j["training"] = {{"seq_length", 4096}, {"global_batch_size", 64}};
  return j;
}

JobSpec parse_moe(const std::string& model) { return test::parse(moe_job(model)); }

TEST(Moe, DeepSeekV3HuggingFaceConfigCountsAsThePaper) {
  const JobSpec job = parse_moe("hf/deepseek-v3-config.json");
  const ModelSpec& m = job.model;
  EXPECT_EQ(m.moe.num_experts, 256);
  EXPECT_EQ(m.moe.experts_per_token, 8);
  EXPECT_EQ(m.moe.shared_expert_intermediate_size, 2048);
  EXPECT_EQ(std::count(m.moe.layer_is_moe.begin(), m.moe.layer_is_moe.end(), 1), 58);  // first 3 dense
  EXPECT_FALSE(is_moe_layer(m, 2));
  EXPECT_TRUE(is_moe_layer(m, 3));
  EXPECT_TRUE(is_mla(m));
  EXPECT_EQ(m.num_nextn_predict_layers, 1);
  // 671 B total and 37 B activated (arXiv 2412.19437). Counting every parameter a token passes
  // through, the embedding and head included (as Mixtral's 12.9 B is counted), gives 37.55 B.
  EXPECT_NEAR(parameter_count(m) / 671e9, 1.0, 0.01);
  EXPECT_NEAR(active_parameter_count(m) / 37e9, 1.0, 0.016);
  // The MTP module as stored: 685 B - 671 B in the paper's rounding; 13.46 B counted.
  EXPECT_NEAR(mtp_parameter_count(m) / 13.46e9, 1.0, 0.01);
  // ~250 GFLOP per token at sequence 4096 without MTP (arXiv 2505.09343); with the MTP module
  // 260.6 GFLOP, what Megatron-Bridge's 338 TFLOP/s at 1,297 tokens/s implies.
  JobSpec no_mtp = job;
  no_mtp.model.num_nextn_predict_layers = 0;
  EXPECT_NEAR(model_flops_per_token(no_mtp) / 250e9, 1.0, 0.03);
  EXPECT_NEAR(model_flops_per_token(job) / 260.6e9, 1.0, 0.01);
}

// Both configs scale RoPE with YaRN. Megatron-Core fuses MLA's (fused_mla_yarn_rope_apply.py)
// but runs GPT-OSS's in unfused PyTorch ops (rope_ops.cpp add_rope).
TEST(Moe, YarnRopeIsUnfusedOutsideMla) {
  const auto rope_op = [](const JobSpec& job) {
    for (const auto& op : layer_forward_ops(job)) if (op.name.rfind("rope", 0) == 0) return op.name;
    return std::string("none");
  };
  const JobSpec deepseek = parse_moe("hf/deepseek-v3-config.json");
  EXPECT_TRUE(deepseek.model.rope_yarn);
  EXPECT_EQ(rope_op(deepseek), "rope");
  const JobSpec gpt_oss = parse_moe("hf/gpt-oss-120b-config.json");
  EXPECT_TRUE(gpt_oss.model.rope_yarn);
  EXPECT_EQ(rope_op(gpt_oss), "rope_unfused");
  EXPECT_TRUE(parse_moe("gpt-oss-120b").model.rope_yarn);  // the catalog entry says so too
  EXPECT_FALSE(parse_moe("hf/mixtral-8x7b-config.json").model.rope_yarn);
}

// Hugging Face's Qwen3 classes build q_norm and k_norm with no config key saying so; the
// native key overrides either way.
TEST(Moe, Qwen3HuggingFaceConfigNormalisesQueriesAndKeys) {
  EXPECT_TRUE(parse_moe("hf/qwen3-30b-a3b-config.json").model.qk_layernorm);
  EXPECT_TRUE(parse_moe("qwen3-235b-a22b").model.qk_layernorm);  // the catalog entry says so too
  EXPECT_FALSE(parse_moe("hf/mixtral-8x7b-config.json").model.qk_layernorm);
  EXPECT_FALSE(parse_moe("hf/deepseek-v3-config.json").model.qk_layernorm);
  auto j = moe_job("qwen3-30b-a3b");
  j["model"] = {{"base", "qwen3-30b-a3b"}, {"qk_layernorm", false}};
  EXPECT_FALSE(test::parse(j).model.qk_layernorm);
  // Other families say so with use_qk_norm (GLM-4.5, Cohere).
  nlohmann::json mixtral = read_json_file(test::data_dir() / "hf" / "mixtral-8x7b-config.json", "model");
  mixtral["use_qk_norm"] = true;
  j["model"] = mixtral;
  EXPECT_TRUE(test::parse(j).model.qk_layernorm);
}

TEST(Moe, MixtralHuggingFaceConfigCounts) {
  const ModelSpec m = parse_moe("hf/mixtral-8x7b-config.json").model;
  EXPECT_EQ(m.moe.num_experts, 8);
  EXPECT_EQ(m.moe.expert_intermediate_size, 14336);  // no moe_intermediate_size: intermediate_size
  EXPECT_NEAR(parameter_count(m) / 46.7e9, 1.0, 0.01);
  EXPECT_NEAR(active_parameter_count(m) / 12.9e9, 1.0, 0.01);
}

TEST(Moe, EachFamilysRuleForDenseLayersAndSharedExperts) {
  const ModelSpec qwen2 = parse_moe("hf/qwen2-moe-57b-a14b-config.json").model;
  EXPECT_EQ(qwen2.moe.shared_expert_intermediate_size, 20480);  // one shared expert's width
  EXPECT_EQ(std::count(qwen2.moe.layer_is_moe.begin(), qwen2.moe.layer_is_moe.end(), 1), 28);
  const ModelSpec qwen3 = parse_moe("hf/qwen3-30b-a3b-config.json").model;
  EXPECT_EQ(qwen3.moe.expert_intermediate_size, 768);
  EXPECT_NEAR(parameter_count(qwen3) / 30.5e9, 1.0, 0.01);
  // GPT-OSS: alternate layers attend within 128 tokens.
  const ModelSpec oss = parse_moe("hf/gpt-oss-120b-config.json").model;
  EXPECT_EQ(oss.moe.experts_per_token, 4);
  EXPECT_EQ(std::count(oss.layer_is_sliding.begin(), oss.layer_is_sliding.end(), 1), 18);
  EXPECT_TRUE(is_sliding_layer(oss, 0));
  EXPECT_FALSE(is_sliding_layer(oss, 1));
  EXPECT_NEAR(parameter_count(oss) / 116.83e9, 1.0, 0.01);
  // Qwen's decoder_sparse_step and mlp_only_layers.
  auto j = moe_job("hf/qwen3-30b-a3b-config.json");
  nlohmann::json model = read_json_file(test::data_dir() / "hf" / "qwen3-30b-a3b-config.json", "model");
  model["decoder_sparse_step"] = 2;
  model["mlp_only_layers"] = {1, 5};
  j["model"] = model;
  const ModelSpec sparse = test::parse(j).model;
  EXPECT_FALSE(is_moe_layer(sparse, 0));  // (0 + 1) % 2 != 0
  EXPECT_FALSE(is_moe_layer(sparse, 5));  // listed
  EXPECT_TRUE(is_moe_layer(sparse, 3));
}

TEST(Moe, CatalogModelsMatchTheirPublishedSizes) {
  struct Row { const char* name; double total, active, tol; };
  for (const Row& r : {Row{"mixtral-8x22b", 141e9, 39e9, 0.01}, Row{"qwen3-235b-a22b", 235e9, 22e9, 0.01},
                       Row{"qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02}, Row{"deepseek-v3", 671e9, 37e9, 0.016}}) {
    // Qwen3-30B-A3B: 3.35 B counted against the model card's "3.3B activated" (rounded).
    const ModelSpec m = parse_moe(r.name).model;
    EXPECT_NEAR(parameter_count(m) / r.total, 1.0, 0.01) << r.name;
    EXPECT_NEAR(active_parameter_count(m) / r.active, 1.0, r.tol) << r.name;
  }
}

TEST(Moe, BadInputsNameTheField) {
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 48;  // 128 experts
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.expert_model_parallel_size", "does not divide the 128 routed experts");
  j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 128;  // 64 GPUs
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.expert_model_parallel_size", "ETP*EP*PP");
  // pp-first placement with PP > 1: expert DP must equal DP (Megatron-Core's parallel_state).
  j = moe_job("qwen3-30b-a3b");
  j["parallel"]["pipeline_model_parallel_size"] = 2;
  j["parallel"]["expert_model_parallel_size"] = 8;
  j["parallel"]["placement"] = "pp-first";
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.placement", "needs ETP*EP = TP*CP");
  j["parallel"]["placement"] = "dp-first";
  EXPECT_NO_THROW(test::parse(j));
  nlohmann::json model = read_json_file(test::data_dir() / "hf" / "mixtral-8x7b-config.json", "model");
  model["num_experts_per_tok"] = 9;
  j = moe_job("qwen3-30b-a3b");
  j["model"] = model;
  EXPECT_INPUT_ERROR(test::parse(j), "model.num_experts_per_tok", "exceeds the 8 routed experts");
  model = read_json_file(test::data_dir() / "hf" / "mixtral-8x7b-config.json", "model");
  model["moe_jitter"] = 0.1;  // a key megasim does not understand is an error
  j["model"] = model;
  EXPECT_INPUT_ERROR(test::parse(j), "model.moe_jitter", "does not model this Hugging Face key");
  j = moe_job("qwen3-30b-a3b");
  j["model"] = "llama-3.1-8b";
  j["parallel"]["expert_model_parallel_size"] = 8;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.expert_model_parallel_size", "needs an MoE model");
  j = moe_job("qwen3-30b-a3b");
  j["model"] = read_json_file(test::data_dir() / "hf" / "qwen3-30b-a3b-config.json", "model");
  j["model"]["use_parallel_residual"] = true;
  EXPECT_INPUT_ERROR(test::parse(j), "model.use_parallel_residual", "not modelled for an MoE model");
  j = moe_job("qwen3-30b-a3b");
  j["parallel"]["tensor_model_parallel_size"] = 2;
  j["parallel"]["sequence_parallel"] = false;
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.sequence_parallel", "needs sequence parallelism");
}

// The 1F1B all-to-all overlap under Megatron-Core's TransformerConfig rules (one list,
// merged_a2a_overlap_refusal, for the validator, the planner and ablate).
TEST(Moe, MergedOverlapFollowsMegatronCoresRules) {
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  j["system"]["overlap_moe_expert_parallel_comm"] = true;
  EXPECT_NO_THROW(test::parse(j));
  auto dense = j;
  dense["model"] = "llama-3.1-8b";
  dense["parallel"].erase("expert_model_parallel_size");
  EXPECT_INPUT_ERROR(test::parse(dense), "system.overlap_moe_expert_parallel_comm", "needs an MoE model");
  auto moe_recompute = j;
  moe_recompute["training"]["recompute"] = "selective";
  moe_recompute["training"]["recompute_modules"] = {"moe"};
  EXPECT_INPUT_ERROR(test::parse(moe_recompute), "system.overlap_moe_expert_parallel_comm", "recompute_modules");
  auto mtp = j;
  mtp["model"] = read_json_file(test::data_dir() / "hf" / "deepseek-v3-config.json", "model");
  mtp["model"]["num_nextn_predict_layers"] = 2;
  mtp["parallel"]["expert_model_parallel_size"] = 64;
  EXPECT_INPUT_ERROR(test::parse(mtp), "system.overlap_moe_expert_parallel_comm", "at most 1 MTP module");
}

TEST(Moe, PipelineLayoutPlacesDeepSeekV3sLayersAndMtp) {
  auto j = moe_job("deepseek-v3");
  j["cluster"]["num_gpus"] = 1024;
  j["training"]["global_batch_size"] = 1024;
  j["parallel"] = {{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 8},
                   {"expert_model_parallel_size", 64}, {"pipeline_model_parallel_layout", "Et|(tt|)*30mL"}};
  const JobSpec job = test::parse(j);
  EXPECT_EQ(job.parallel.virtual_pipeline_model_parallel_size, 4);  // 32 virtual stages / PP 8
  EXPECT_EQ(layers_in_chunk(job, 0, 0), 1);  // E t
  EXPECT_EQ(layers_in_chunk(job, 7, 3), 0);  // m L
  EXPECT_EQ(layers_in_chunk(job, 3, 2), 2);
  EXPECT_EQ(first_layer_in_chunk(job, 0, 1), 1 + 7 * 2);  // after chunk 0 of every stage
  std::int64_t total = 0;
  for (int s = 0; s < 8; ++s) total += layers_on_stage(job, s);
  EXPECT_EQ(total, 61);
  j["parallel"]["pipeline_model_parallel_layout"] = "Et|(tt|)*29mL";
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.pipeline_model_parallel_layout", "virtual stages do not divide");
  j["parallel"]["pipeline_model_parallel_layout"] = "Et|(tt|)*30tL";
  EXPECT_INPUT_ERROR(test::parse(j), "parallel.pipeline_model_parallel_layout", "places 62 transformer layers");
}

TEST(Moe, ForcedBalanceIsNearlyEvenAndTrainedRoutersSkew) {
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  j["training"]["moe_router_force_load_balancing"] = true;
  const ExpertLoad forced = expert_load(test::parse(j));
  j["training"]["moe_router_force_load_balancing"] = false;
  const JobSpec skewed_job = test::parse(j);
  const ExpertLoad skewed = expert_load(skewed_job);
  EXPECT_EQ(forced.routing_cv, 0.0);
  EXPECT_EQ(skewed.routing_cv, default_routing_skew_cv());
  EXPECT_LT(forced.max_to_mean_rank_load, 1.05);  // multinomial noise only
  EXPECT_GT(skewed.max_to_mean_rank_load, forced.max_to_mean_rank_load);
  EXPECT_GT(skewed.max_to_mean_expert_load, skewed.max_to_mean_rank_load);  // experts spread more than ranks
  // The hottest rank's experts, busiest first; their mean is that rank's load factor.
  const auto& hot = skewed.hottest_rank_expert_load;
  ASSERT_EQ(hot.size(), 16u);
  EXPECT_TRUE(std::is_sorted(hot.rbegin(), hot.rend()));
  EXPECT_NEAR(std::accumulate(hot.begin(), hot.end(), 0.0) / 16.0, skewed.max_to_mean_rank_load, 1e-9);
  // Same seed, same loads; another seed, other loads.
  EXPECT_EQ(expert_load(skewed_job).hottest_rank_expert_load, hot);
  JobSpec other = skewed_job;
  other.seed = 7;
  EXPECT_NE(expert_load(other).hottest_rank_expert_load, hot);
  // The most-loaded rank's rows are what its expert GEMMs run.
  const auto ops = layer_forward_ops(skewed_job, LayerKind{true, false});
  const auto fc1 = std::find_if(ops.begin(), ops.end(), [](const LayerOp& op) { return op.name == "expert_fc1"; });
  ASSERT_NE(fc1, ops.end());
  // Each expert's rows are rounded to whole tokens.
  EXPECT_NEAR(static_cast<double>(fc1->gemm_m), skewed.max_to_mean_rank_load * routed_copies_per_rank(skewed_job), 8.0);
}

TEST(Moe, CapacityFactorDropsAndPaddingRunsTheCapacity) {
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  j["training"]["moe_expert_capacity_factor"] = 1.0;
  const ExpertLoad dropped = expert_load(test::parse(j));
  EXPECT_GT(dropped.dropped_token_fraction, 0.01);  // the skewed router overflows some experts
  EXPECT_LE(dropped.max_to_mean_rank_load, 1.0);
  j["training"]["moe_pad_expert_input_to_capacity"] = true;
  const ExpertLoad padded = expert_load(test::parse(j));
  for (const double l : padded.hottest_rank_expert_load) EXPECT_DOUBLE_EQ(l, 1.0);
}

TEST(Moe, ExpertWeightsAndOptimizerStatesShardOverEpAndExpertDp) {
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  const JobSpec ep8 = test::parse(j);
  const StageParameters p = stage_parameters_per_gpu(ep8, 0);
  const ModelSpec& m = ep8.model;
  const double all_experts = static_cast<double>(m.num_hidden_layers) * layer_parameters(m, true, 1, 1, 1).expert;
  EXPECT_NEAR(p.expert, all_experts / 8, 1.0);
  EXPECT_EQ(expert_data_parallel_size(ep8), 8);  // 64 / (1 * 8 * 1)
  BufferSizes none;
  const MemoryBreakdown mem = memory_per_gpu(ep8, 0, none);
  EXPECT_NEAR(mem.optimizer_states_bytes, 12.0 * (p.dense / 64 + p.expert / 8), 1e3);
}

TEST(Moe, RecomputeModulesTradeActivationsForForwardWork) {
  // DeepSeek-V3's H100 recipe: selective recompute of MLA's up-projections and the dense MLPs.
  auto j = moe_job("deepseek-v3");
  j["parallel"]["expert_model_parallel_size"] = 64;
  j["training"]["recompute"] = "selective";
  const JobSpec attn_only = test::parse(j);  // Megatron-Core's default: the attention core
  j["training"]["recompute_modules"] = {"mla_up_proj", "mlp"};
  const JobSpec recipe = test::parse(j);
  EXPECT_FALSE(recipe.training.recompute_modules.core_attn);
  const LayerKind dense{false, false}, moe{true, false};
  // MLA's Q, K, V are not kept, nor a dense layer's MLP; the MoE block's are.
  EXPECT_LT(layer_activation_bytes(recipe, 0), layer_activation_bytes(attn_only, 0));
  EXPECT_LT(layer_activation_bytes(recipe, 3), layer_activation_bytes(attn_only, 3));
  auto names = [](const std::vector<LayerOp>& ops) {
    std::vector<std::string> n;
    for (const auto& op : ops) n.push_back(op.name);
    return n;
  };
  const auto dense_ops = names(layer_recompute_ops(recipe, dense));
  const auto moe_ops = names(layer_recompute_ops(recipe, moe));
  EXPECT_NE(std::find(dense_ops.begin(), dense_ops.end(), "fc1"), dense_ops.end());
  EXPECT_NE(std::find(dense_ops.begin(), dense_ops.end(), "kv_up"), dense_ops.end());
  EXPECT_EQ(std::find(moe_ops.begin(), moe_ops.end(), "fc1"), moe_ops.end());  // mlp skips MoE layers
  EXPECT_EQ(std::find(moe_ops.begin(), moe_ops.end(), "attention_core"), moe_ops.end());
  // HFU counts the replayed forward FLOPs.
  EXPECT_GT(hardware_flops_per_step(recipe), model_flops_per_step(recipe));
  j["training"]["recompute_modules"] = {"moe"};
  const JobSpec whole_moe = test::parse(j);
  EXPECT_LT(layer_activation_bytes(whole_moe, 3), layer_activation_bytes(attn_only, 3));
  const auto replay = names(layer_recompute_ops(whole_moe, moe));
  EXPECT_NE(std::find(replay.begin(), replay.end(), "ep_dispatch"), replay.end());  // the dispatch runs again

  j["training"]["recompute_modules"] = {"mla_up_proj", "attn"};
  EXPECT_INPUT_ERROR(test::parse(j), "training.recompute_modules[1]", "unknown module \"attn\"");
  j["training"]["recompute"] = "full";
  j["training"]["recompute_modules"] = {"mlp"};
  EXPECT_INPUT_ERROR(test::parse(j), "training.recompute_modules", "needs recompute = \"selective\"");
}

}  // namespace
}  // namespace megasim

namespace megasim {
namespace {

// The position of the op of that name in `ops` (the first), or -1.
long op_position(const std::vector<LayerOp>& ops, const std::string& name) {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].name == name) return static_cast<long>(i);
  return -1L;
}

const LayerOp& op_named(const std::vector<LayerOp>& ops, const std::string& name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  if (it == ops.end()) throw std::runtime_error("no op " + name);
  return *it;
}

// Megatron-Core adds a biased expert FC2's bias outside the grouped GEMM, one local expert at a
// time (TEGroupedMLP._apply_bias: t + b * p, then a concatenation): GPT-OSS at EP 8 (16 local
// experts) launches 2 x 16 + 1 kernels forward and 6 x 16 + 4 backward (as measured,
// bench/data/h100-expert-bias-apply.json), 6 passes over the expert rows each way, at a plain
// PyTorch loop's host rate. Experts without biases (Qwen3) have no such op.
TEST(Moe, BiasedExpertsAddTheirFc2BiasPerExpert) {
  auto j = moe_job("gpt-oss-120b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  const LayerKind moe{true, false};
  const JobSpec job = test::parse(j);
  const auto fwd = layer_forward_ops(job, moe);
  const auto bwd = layer_backward_ops(job, moe);
  const LayerOp& bias = op_named(fwd, "expert_fc2_bias");
  EXPECT_EQ(bias.kernels, 33);
  EXPECT_EQ(op_named(bwd, "expert_fc2_bias_bwd").kernels, 100);
  EXPECT_TRUE(bias.plain_torch_launches);
  const LayerOp& fc2 = op_named(fwd, "expert_fc2");
  std::int64_t rows = 0;
  for (const std::int64_t r : fc2.expert_rows) rows += r;
  EXPECT_DOUBLE_EQ(bias.bytes, 6.0 * static_cast<double>(rows) * 2880.0 * 2.0);
  auto qwen = moe_job("qwen3-30b-a3b");
  qwen["parallel"]["expert_model_parallel_size"] = 8;
  const auto unbiased = layer_forward_ops(test::parse(qwen), moe);
  EXPECT_TRUE(std::none_of(unbiased.begin(), unbiased.end(),
                           [](const LayerOp& op) { return op.name == "expert_fc2_bias"; }));
}

// The router's and the all-to-all dispatcher's bookkeeping launches (moe_router_ops.cpp, counted
// from Megatron-Core and TE on the fused path the recipes run): forced balance draws random
// logits (2), the fused top-k (1), the aux loss only with a coefficient (5; per sequence 6;
// global 8), the expert bias' count (2), token dropping (6); the dispatcher's token counts and
// host copies across EP ranks (11), padded to the capacity a single fill (1).
TEST(Moe, RouterAndDispatcherLaunchesFollowMegatronCore) {
  const LayerKind moe{true, false};
  auto launches = [&](const std::vector<std::pair<std::string, nlohmann::json>>& training,
                      const std::string& name, bool forward = true) {
    auto j = moe_job("qwen3-30b-a3b");
    j["parallel"]["expert_model_parallel_size"] = 8;
    for (const auto& [k, v] : training) j["training"][k] = v;
    const JobSpec job = test::parse(j);
    const auto ops = forward ? layer_forward_ops(job, moe) : layer_backward_ops(job, moe);
    int n = 0;
    for (const auto& op : ops) if (op.name == name) n += op.kernels;
    return n;
  };
  EXPECT_EQ(launches({}, "router_topk"), 1);
  EXPECT_EQ(launches({}, "router_random_logits"), 0);
  EXPECT_EQ(launches({{"moe_router_force_load_balancing", true}}, "router_random_logits"), 2);
  // Megatron-Core's default coefficient is 0: no loss runs, whatever the type.
  EXPECT_EQ(launches({}, "router_aux_loss"), 0);
  EXPECT_EQ(launches({{"moe_aux_loss_coeff", 1e-3}}, "router_aux_loss"), 5);
  EXPECT_EQ(launches({{"moe_aux_loss_coeff", 1e-3}}, "router_aux_loss_bwd", false), 5);
  EXPECT_EQ(launches({{"moe_aux_loss_coeff", 1e-3}, {"moe_router_load_balancing_type", "seq_aux_loss"}},
                     "router_aux_loss"), 6);
  EXPECT_EQ(launches({{"moe_aux_loss_coeff", 1e-3}, {"moe_router_load_balancing_type", "global_aux_loss"}},
                     "router_aux_loss"), 8);
  EXPECT_EQ(launches({{"moe_aux_loss_coeff", 1e-3}, {"moe_router_load_balancing_type", "none"}}, "router_aux_loss"), 0);
  EXPECT_EQ(launches({{"moe_router_enable_expert_bias", true}}, "router_expert_bias_count"), 2);
  EXPECT_EQ(launches({}, "dispatch_token_counts"), 11);
  EXPECT_EQ(launches({}, "router_main_grad_add", false), 1);
  // An FP32 router (the default) casts its backward's operands up and its gradients down.
  EXPECT_EQ(launches({}, "router_fp32_casts", false), 4);
  EXPECT_EQ(launches({{"moe_router_dtype", "input"}}, "router_fp32_casts", false), 0);
  const std::vector<std::pair<std::string, nlohmann::json>> padded{{"moe_expert_capacity_factor", 1.0},
                                                                   {"moe_pad_expert_input_to_capacity", true}};
  EXPECT_EQ(launches(padded, "dispatch_token_counts"), 1);
  EXPECT_EQ(launches(padded, "router_token_drop"), 6);
  EXPECT_EQ(launches({{"moe_expert_capacity_factor", 1.0}}, "dispatch_token_counts"), 12);
  // TE's fused permute: three row-id-map passes and the move; the chunk sort: map and sort.
  EXPECT_EQ(launches({}, "permute"), 4);
  EXPECT_EQ(launches({}, "sort_by_local_expert"), 2);
  // The loss and the expert-bias count run with autograd only: once under a recomputed MoE
  // block, in the recomputation, not in the checkpointed forward; the rest runs both times.
  {
    auto j = moe_job("qwen3-30b-a3b");
    j["parallel"]["expert_model_parallel_size"] = 8;
    j["training"]["moe_aux_loss_coeff"] = 1e-3;
    j["training"]["moe_router_enable_expert_bias"] = true;
    j["training"]["recompute"] = "selective";
    j["training"]["recompute_modules"] = {"moe"};
    const JobSpec job = test::parse(j);
    auto count = [](const std::vector<LayerOp>& ops, const std::string& name) {
      return std::count_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
    };
    const auto fwd = layer_forward_ops(job, moe);
    const auto rec = layer_recompute_ops(job, moe);
    EXPECT_EQ(count(fwd, "router_aux_loss"), 0);
    EXPECT_EQ(count(rec, "router_aux_loss"), 1);
    EXPECT_EQ(count(fwd, "router_expert_bias_count"), 0);
    EXPECT_EQ(count(rec, "router_expert_bias_count"), 1);
    EXPECT_EQ(count(fwd, "router_topk"), 1);
    EXPECT_EQ(count(rec, "router_topk"), 1);
    j["training"]["recompute"] = "full";
    j["training"].erase("recompute_modules");
    const JobSpec full = test::parse(j);
    EXPECT_EQ(count(layer_forward_ops(full, moe), "router_aux_loss"), 0);
    EXPECT_EQ(count(layer_recompute_ops(full, moe), "router_aux_loss"), 1);
  }
  // Bad values name the field; the loss needs an MoE model.
  auto j = moe_job("qwen3-30b-a3b");
  j["training"]["moe_router_load_balancing_type"] = "switch";
  EXPECT_INPUT_ERROR(test::parse(j), "training.moe_router_load_balancing_type", "switch");
  j = moe_job("qwen3-30b-a3b");
  j["training"]["moe_router_load_balancing_type"] = "sinkhorn";
  EXPECT_INPUT_ERROR(test::parse(j), "training.moe_router_load_balancing_type", "not modelled");
  j = moe_job("qwen3-30b-a3b");
  j["training"]["moe_aux_loss_coeff"] = -1;
  EXPECT_INPUT_ERROR(test::parse(j), "training.moe_aux_loss_coeff", "");
  j = moe_job("qwen3-30b-a3b");
  j["model"] = "llama-3.1-8b";
  j["training"]["moe_aux_loss_coeff"] = 1e-3;
  EXPECT_INPUT_ERROR(test::parse(j), "training.moe_aux_loss_coeff", "need an MoE model");
  j = moe_job("qwen3-30b-a3b");
  j["model"] = "llama-3.1-8b";
  j["training"]["moe_router_load_balancing_type"] = "none";
  EXPECT_INPUT_ERROR(test::parse(j), "training.moe_router_load_balancing_type", "need an MoE model");
}

// The MoE block's small NCCL calls, from Megatron-Core 0d8e0714's code: the all-to-all
// dispatcher's token-count all-gather over the ETP x EP group (one int64 per expert a rank, dropless
// only: padded counts are known on the host), the probabilities' all-to-all beside the tokens'
// (forward and its backward mirror), and the load-balancing loss's count all-reduce.
TEST(Moe, SmallCollectivesFollowMegatronCore) {
  const LayerKind moe{true, false};
  auto ops_of = [&](const std::vector<std::pair<std::string, nlohmann::json>>& set, bool forward) {
    auto j = moe_job("qwen3-30b-a3b");
    j["parallel"]["expert_model_parallel_size"] = 8;
    for (const auto& [k, v] : set) {
      if (k.rfind("system.", 0) == 0) j["system"][k.substr(7)] = v;
      else j["training"][k] = v;
    }
    const JobSpec job = test::parse(j);
    return forward ? layer_forward_ops(job, moe) : layer_backward_ops(job, moe);
  };
  auto find = [](const std::vector<LayerOp>& ops, const std::string& name) -> const LayerOp* {
    for (const auto& op : ops) if (op.name == name) return &op;
    return nullptr;
  };
  const auto fwd = ops_of({}, true);
  const LayerOp* gather = find(fwd, "dispatch_token_count_all_gather");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->kind, OpKind::EpAllGather);
  EXPECT_DOUBLE_EQ(gather->comm_bytes, 8.0 * 128 * 8);  // 128 experts x 8 EP ranks x int64
  // The probabilities follow the tokens' all-to-all directly (the same exchange), 4 bytes a copy.
  std::size_t tokens_at = 0;
  for (std::size_t i = 0; i < fwd.size(); ++i) if (fwd[i].name == "ep_dispatch") tokens_at = i;
  ASSERT_LT(tokens_at + 1, fwd.size());
  EXPECT_EQ(fwd[tokens_at + 1].name, "ep_dispatch_probs");
  EXPECT_EQ(fwd[tokens_at + 1].kind, OpKind::EpDispatch);
  const double h = 2048, e = 2;
  EXPECT_NEAR(fwd[tokens_at + 1].comm_bytes * h * e / 4.0, fwd[tokens_at].comm_bytes, 1e-6 * fwd[tokens_at].comm_bytes);
  EXPECT_NE(find(ops_of({}, false), "ep_dispatch_probs_bwd"), nullptr);
  EXPECT_EQ(find(ops_of({}, false), "dispatch_token_count_all_gather"), nullptr);  // counts need no gradient
  // Padded to the capacity: no gather. The flex dispatcher moves probabilities inside its kernels.
  EXPECT_EQ(find(ops_of({{"moe_expert_capacity_factor", 1.0}, {"moe_pad_expert_input_to_capacity", true}}, true),
                 "dispatch_token_count_all_gather"),
            nullptr);
  EXPECT_EQ(find(ops_of({{"system.moe_token_dispatcher_type", "flex"}}, true), "ep_dispatch_probs"), nullptr);
  // The loss's all-reduce of one int64 per expert, with the loss only.
  EXPECT_EQ(find(fwd, "router_aux_loss_count_all_reduce"), nullptr);
  const auto with_loss = ops_of({{"moe_aux_loss_coeff", 1e-3}}, true);
  const LayerOp* reduce = find(with_loss, "router_aux_loss_count_all_reduce");
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->kind, OpKind::TpAllReduce);
  EXPECT_DOUBLE_EQ(reduce->comm_bytes, 8.0 * 128);
}

// GPT-OSS clamps its gated activation (Hugging Face swiglu_limit 7.0): Megatron-Core's
// weighted_bias_quick_geglu_impl clamps each half and concatenates them in eager ops before its
// fused kernel (measured: 3 launches, 13.6 B a FC1-output element); autograd's backward of those
// is 9 launches. A model without the clamp has neither; a clamp of 0 is an error.
TEST(Moe, ClampedActivationRunsOutsideTheFusedKernel) {
  EXPECT_DOUBLE_EQ(parse_moe("hf/gpt-oss-120b-config.json").model.swiglu_limit, 7.0);
  auto j = moe_job("gpt-oss-120b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  const LayerKind moe{true, false};
  const JobSpec job = test::parse(j);
  EXPECT_DOUBLE_EQ(job.model.swiglu_limit, 7.0);  // the catalog model carries it
  const auto fwd = layer_forward_ops(job, moe);
  const LayerOp& clamp = op_named(fwd, "expert_activation_clamp");
  const LayerOp& fc1 = op_named(fwd, "expert_fc1");
  std::int64_t rows = 0;
  for (const std::int64_t r : fc1.expert_rows) rows += r;
  EXPECT_EQ(clamp.kernels, 3);
  EXPECT_DOUBLE_EQ(clamp.bytes, static_cast<double>(rows) * 5760.0 * 13.6);
  EXPECT_TRUE(clamp.expert_side);
  EXPECT_EQ(op_named(layer_backward_ops(job, moe), "expert_activation_clamp_bwd").kernels, 9);
  auto qwen = moe_job("qwen3-30b-a3b");
  qwen["parallel"]["expert_model_parallel_size"] = 8;
  const auto plain = layer_forward_ops(test::parse(qwen), moe);
  EXPECT_TRUE(std::none_of(plain.begin(), plain.end(),
                           [](const LayerOp& op) { return op.name == "expert_activation_clamp"; }));
  nlohmann::json model = read_json_file(test::data_dir() / "hf" / "gpt-oss-120b-config.json", "model");
  model["swiglu_limit"] = 0;
  j["model"] = model;
  EXPECT_INPUT_ERROR(test::parse(j), "model.swiglu_limit", "must be > 0");
  nlohmann::json dense = read_json_file(test::data_dir() / "hf" / "mixtral-8x7b-config.json", "model");
  dense.erase("num_local_experts");
  dense.erase("num_experts_per_tok");
  dense["swiglu_limit"] = 7.0;
  auto dj = moe_job("qwen3-30b-a3b");
  dj["model"] = dense;
  EXPECT_INPUT_ERROR(test::parse(dj), "model.swiglu_limit", "routed experts of a gated MoE model");
}

// Transformer Engine v2.9's launches: GroupedLinear runs one cuBLAS GEMM per local expert;
// split_quantize fuses the experts' casts into one kernel under delayed scaling only; current
// scaling (tensorwise) makes four launches per tensor (zero amax, amax, scale, cast) and reads the
// tensor once more; blockwise and MXFP8 one per tensor.
TEST(Moe, Fp8RecipeSetsTheCastsLaunchesAsTransformerEngineDoes) {
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 8;  // 16 local experts
  j["training"]["precision"] = "fp8";
  const LayerKind moe{true, false};
  auto forward = [&](const char* recipe) {
    auto job = j;
    if (recipe != nullptr) job["training"]["fp8_recipe"] = recipe;
    return layer_forward_ops(test::parse(job), moe);
  };
  const auto delayed = forward(nullptr);  // Megatron-Core's default
  const auto tensorwise = forward("tensorwise");
  const auto blockwise = forward("blockwise");  // MXFP8 launches alike, on Blackwell
  EXPECT_EQ(op_named(delayed, "expert_fc1").kernels, 16);
  EXPECT_EQ(op_named(delayed, "fp8_cast_transpose_expert_fc1_input").kernels, 1);
  EXPECT_EQ(op_named(tensorwise, "fp8_cast_transpose_expert_fc1_input").kernels, 64);
  EXPECT_EQ(op_named(blockwise, "fp8_cast_transpose_expert_fc1_input").kernels, 16);
  EXPECT_EQ(op_named(tensorwise, "fp8_cast_attn_proj_input").kernels, 4);
  EXPECT_EQ(op_named(delayed, "fp8_cast_transpose_attn_proj_input").kernels, 1);
  // Current scaling reads the 16-bit tensor twice and, the projection keeping its 16-bit input
  // (save_original_input), writes the row-wise copy only: 2 + 2 + 1 bytes an element, not 2 + 2.
  EXPECT_DOUBLE_EQ(op_named(tensorwise, "fp8_cast_attn_proj_input").bytes,
                   1.25 * op_named(delayed, "fp8_cast_transpose_attn_proj_input").bytes);
  // GroupedLinear's forward cast writes the transposed copy its wgrad needs and saves only that:
  // no transpose of the experts' inputs in the backward.
  for (const auto& op : layer_backward_ops(test::parse(j), moe)) {
    EXPECT_EQ(op.name.find("fp8_transpose_expert"), std::string::npos) << op.name;
  }
  // Dropless routing makes the host wait for the token counts before the dispatch; padding to
  // the capacity does not.
  EXPECT_TRUE(op_named(delayed, "ep_dispatch").host_waits_for_gpu);
  auto padded = j;
  padded["training"]["moe_expert_capacity_factor"] = 1.0;
  padded["training"]["moe_pad_expert_input_to_capacity"] = true;
  EXPECT_FALSE(op_named(layer_forward_ops(test::parse(padded), moe), "ep_dispatch").host_waits_for_gpu);
}

// Under FP8 TEGroupedMLP copies the experts' rows into a buffer aligned to 16 rows an expert
// (32 under MXFP8) when any local expert's rows are not a multiple, and back after FC2; backward
// the mirror copies (Megatron-Core experts.py quantization_padding; TE fused_multi_row_padding).
// Dropless routing leaves unaligned counts; a capacity of a multiple of 16 does not; BF16 never.
TEST(Moe, Fp8ExpertRowsArePaddedToTheGemmAlignmentWhenUnaligned) {
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  j["training"]["precision"] = "fp8";
  const LayerKind moe{true, false};
  auto has = [](const std::vector<LayerOp>& ops, const char* name) {
    return std::any_of(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  };
  const JobSpec dropless = test::parse(j);
  const auto fwd = layer_forward_ops(dropless, moe);
  const auto bwd = layer_backward_ops(dropless, moe);
  const LayerOp& fc1 = op_named(fwd, "expert_fc1");
  ASSERT_TRUE(std::any_of(fc1.expert_rows.begin(), fc1.expert_rows.end(), [](std::int64_t r) { return r % 16 != 0; }));
  std::int64_t rows = 0;
  for (const std::int64_t r : fc1.expert_rows) rows += r;
  const LayerOp& pad = op_named(fwd, "fp8_pad_expert_input");
  EXPECT_DOUBLE_EQ(pad.bytes, 2.0 * static_cast<double>(rows) * 2048.0 * 2.0 + 2.0 * static_cast<double>(rows) * 4.0);
  EXPECT_EQ(pad.kernels, 2);  // the rows and the routing probabilities
  EXPECT_TRUE(pad.expert_side);
  EXPECT_TRUE(has(fwd, "fp8_unpad_expert_output"));
  EXPECT_TRUE(has(bwd, "fp8_pad_expert_output_grad"));
  EXPECT_TRUE(has(bwd, "fp8_unpad_expert_input_grad"));
  auto capacity = j;  // 4,096 tokens x 8 / 128 experts x 1.0 = 256 a source, 2,048 an expert: aligned
  capacity["training"]["moe_expert_capacity_factor"] = 1.0;
  capacity["training"]["moe_pad_expert_input_to_capacity"] = true;
  EXPECT_FALSE(has(layer_forward_ops(test::parse(capacity), moe), "fp8_pad_expert_input"));
  auto bf16 = j;
  bf16["training"]["precision"] = "bf16";
  EXPECT_FALSE(has(layer_forward_ops(test::parse(bf16), moe), "fp8_pad_expert_input"));
}

TEST(Moe, Fp8RecipeIsAKnownNameAndMxfp8NeedsBlackwell) {
  auto j = moe_job("qwen3-30b-a3b");  // on H100s
  j["training"]["fp8_recipe"] = "tensorwise";
  EXPECT_NO_THROW(test::parse(j));  // read but unused under bf16, as Megatron-Core's --fp8-recipe
  j["training"]["precision"] = "fp8";
  j["training"]["fp8_recipe"] = "current";
  EXPECT_INPUT_ERROR(test::parse(j), "training.fp8_recipe", "tensorwise");
  j["training"]["fp8_recipe"] = "mxfp8";
  EXPECT_INPUT_ERROR(test::parse(j), "training.fp8_recipe", "needs a Blackwell GPU");
  j["cluster"] = {{"base", "dgx-b200-ndr-clos"}, {"num_gpus", 64}};
  EXPECT_NO_THROW(test::parse(j));
}

// The experts' activation without bias_activation_fusion (Megatron-Core's TransformerConfig
// default): the eager activation, the product with the routing probabilities (FP32 under
// moe_router_dtype fp32: an FP32 product, then a cast) and autograd's mirror, measured on an H100
// in bytes per output element; fused, one pass.
TEST(Moe, UnfusedExpertActivationRunsTheEagerChain) {
  const LayerKind moe{true, false};
  auto ops = [&](bool fused, const char* router_dtype, bool gated, bool forward) {
    auto j = moe_job("qwen3-30b-a3b");
    j["parallel"]["expert_model_parallel_size"] = 8;
    j["system"] = {{"fused_kernels", fused}};
    if (router_dtype != nullptr) j["training"]["moe_router_dtype"] = router_dtype;
    if (!gated) j["model"] = {{"base", "qwen3-30b-a3b"}, {"gated_mlp", false}, {"hidden_act", "gelu"}};
    const JobSpec job = test::parse(j);
    return forward ? layer_forward_ops(job, moe) : layer_backward_ops(job, moe);
  };
  const auto fused = ops(true, nullptr, true, true);
  std::int64_t rows = 0;
  for (const std::int64_t r : op_named(fused, "expert_fc1").expert_rows) rows += r;
  const double out = static_cast<double>(rows) * 768.0;  // Qwen3-30B-A3B's expert width
  EXPECT_DOUBLE_EQ(op_named(fused, "expert_swiglu").bytes, out * 3.0 * 2.0);  // reads 2 halves, writes 1
  EXPECT_EQ(op_named(fused, "expert_swiglu").kernels, 1);
  const auto fp32 = ops(false, nullptr, true, true);  // fp32 is the default router dtype
  EXPECT_DOUBLE_EQ(op_named(fp32, "expert_swiglu").bytes, out * 40.2);
  EXPECT_EQ(op_named(fp32, "expert_swiglu").kernels, 5);
  EXPECT_DOUBLE_EQ(op_named(ops(false, "input", true, true), "expert_swiglu").bytes, out * 29.3);
  EXPECT_DOUBLE_EQ(op_named(ops(false, "fp32", false, true), "expert_gelu").bytes, out * 22.3);
  EXPECT_EQ(op_named(ops(false, "fp32", false, true), "expert_gelu").kernels, 3);
  EXPECT_DOUBLE_EQ(op_named(ops(false, "input", false, false), "expert_gelu_bwd").bytes, out * 21.5);
  EXPECT_DOUBLE_EQ(op_named(ops(false, "fp32", true, false), "expert_swiglu_bwd").bytes, out * 71.3);
  EXPECT_EQ(op_named(ops(false, "fp32", true, false), "expert_swiglu_bwd").kernels, 9);
  // The router dtype also sets the probabilities' bytes on the wire.
  const double p32 = op_named(fp32, "ep_dispatch_probs").comm_bytes;
  EXPECT_GT(p32, 0.0);
  EXPECT_DOUBLE_EQ(op_named(ops(true, "input", true, true), "ep_dispatch_probs").comm_bytes, p32 / 2.0);
}

// The eager chain keeps more for autograd than the fused kernel: the activation's output (GeLU),
// and for the gated chain SiLU's output and the offset linear half too; none under moe_act.
TEST(Moe, UnfusedExpertActivationKeepsMoreForBackward) {
  auto bytes = [](bool fused, bool gated, bool recompute_act) {
    auto j = moe_job("qwen3-30b-a3b");
    j["system"] = {{"fused_kernels", fused}};
    if (!gated) j["model"] = {{"base", "qwen3-30b-a3b"}, {"gated_mlp", false}, {"hidden_act", "gelu"}};
    if (recompute_act) {
      j["training"]["recompute"] = "selective";
      j["training"]["recompute_modules"] = {"moe_act"};
    }
    return moe_mlp_activation_bytes(test::parse(j), 4096.0);
  };
  const double copies_width = 4096.0 * 8.0 * 768.0;  // tokens x top-8 x the expert width
  EXPECT_DOUBLE_EQ(bytes(false, true, false) - bytes(true, true, false), 6.0 * copies_width);
  EXPECT_DOUBLE_EQ(bytes(false, false, false) - bytes(true, false, false), 2.0 * copies_width);
  EXPECT_DOUBLE_EQ(bytes(false, true, true), bytes(true, true, true));
}

TEST(Moe, RouterDtypeIsFp32OrTheInputs) {
  auto j = moe_job("qwen3-30b-a3b");
  j["training"]["moe_router_dtype"] = "fp64";
  EXPECT_INPUT_ERROR(test::parse(j), "training.moe_router_dtype", "fp64 router is not modelled");
  j["training"]["moe_router_dtype"] = "bf16";
  EXPECT_INPUT_ERROR(test::parse(j), "training.moe_router_dtype", "fp32");
  auto dense = test::small_job();
  dense["training"]["moe_router_dtype"] = "fp32";
  EXPECT_INPUT_ERROR(test::parse(dense), "training.moe_router_dtype", "need an MoE model");
}

// Which local kernels each dispatcher runs around its exchange (token_dispatcher.py): the
// all-to-all permutes before sending and sorts the received chunks by local expert; DeepEP sends
// each token once per rank and permutes on arrival (unpermutes before the combine); HybridEP
// permutes and pads inside its kernels, so neither a permute nor FP8 row padding runs beside it.
TEST(Moe, EachDispatcherRunsItsOwnLocalKernels) {
  const LayerKind moe{true, false};
  auto forward = [&](const char* dispatcher, const char* backend) {
    auto j = moe_job("deepseek-v3");
    j["parallel"]["expert_model_parallel_size"] = 8;
    j["training"]["precision"] = "fp8";
    j["training"]["fp8_recipe"] = "blockwise";
    j["system"] = {{"moe_token_dispatcher_type", dispatcher}};
    if (backend != nullptr) j["system"]["moe_flex_dispatcher_backend"] = backend;
    return layer_forward_ops(test::parse(j), moe);
  };
  auto has = [](const std::vector<LayerOp>& ops, const char* name) {
    return std::any_of(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  };
  auto before_dispatch = [](const std::vector<LayerOp>& ops, const char* name) {
    for (const LayerOp& op : ops) {
      if (op.name == "ep_dispatch") return false;
      if (op.name == name) return true;
    }
    return false;
  };
  const auto a2a = forward("alltoall", nullptr);
  const auto deepep = forward("flex", "deepep");
  const auto hybrid = forward("flex", "hybridep");
  EXPECT_TRUE(before_dispatch(a2a, "permute"));
  EXPECT_TRUE(has(a2a, "sort_by_local_expert"));
  EXPECT_TRUE(has(a2a, "fp8_pad_expert_input"));
  EXPECT_FALSE(before_dispatch(deepep, "permute"));
  EXPECT_TRUE(has(deepep, "permute"));
  EXPECT_EQ(op_named(deepep, "permute").kernels, 5);
  EXPECT_FALSE(has(deepep, "sort_by_local_expert"));
  EXPECT_TRUE(has(deepep, "fp8_pad_expert_input"));
  EXPECT_FALSE(has(hybrid, "permute"));
  EXPECT_FALSE(has(hybrid, "sort_by_local_expert"));
  EXPECT_FALSE(has(hybrid, "fp8_pad_expert_input"));
  EXPECT_FALSE(has(hybrid, "unpermute"));
  EXPECT_TRUE(has(hybrid, "shared_experts_add"));  // DeepSeek-V3's shared expert joins after the combine
  // DeepEP's permute reads each received token once: under group-limited routing (8 groups over 8
  // ranks, top-4 groups) a token reaches at most 4 ranks, so fewer rows arrive than copies.
  const LayerOp& fc1 = op_named(deepep, "expert_fc1");
  std::int64_t rows = 0;
  for (const std::int64_t r : fc1.expert_rows) rows += r;
  const double moved = op_named(deepep, "permute").bytes / (7168.0 * 2.0);
  EXPECT_GT(moved, static_cast<double>(rows) * 1.4);
  EXPECT_LT(moved, static_cast<double>(rows) * 1.6);
  auto backward_has = [&](const char* backend, const char* name) {
    auto j = moe_job("deepseek-v3");
    j["parallel"]["expert_model_parallel_size"] = 8;
    j["system"] = {{"moe_token_dispatcher_type", "flex"}, {"moe_flex_dispatcher_backend", backend}};
    return has(layer_backward_ops(test::parse(j), moe), name);
  };
  EXPECT_TRUE(backward_has("deepep", "permute_bwd"));
  EXPECT_FALSE(backward_has("hybridep", "permute_bwd"));
  EXPECT_FALSE(backward_has("hybridep", "unpermute_bwd"));
  EXPECT_FALSE(backward_has("hybridep", "sort_grad_by_local_expert"));
}

// Where each local kernel sits against the EP exchange, forward and backward: DeepEP unpermutes
// before its combine and its backward mirrors that inside the exchange; the all-gather dispatcher
// permutes after its gather, unpermutes before its reduce-scatter, which runs in the
// probabilities' dtype (token_combine's casts), with no separate expert-TP collective; nor has
// flex, whose exchange carries every ETP rank's rows.
TEST(Moe, DispatchersPlaceTheirKernelsAroundTheExchange) {
  const LayerKind moe{true, false};
  auto job = [&](const char* dispatcher, const char* backend, int etp) {
    auto j = moe_job("deepseek-v3");
    j["parallel"]["expert_model_parallel_size"] = 8;
    j["parallel"]["expert_tensor_parallel_size"] = etp;
    j["system"] = {{"moe_token_dispatcher_type", dispatcher}};
    if (backend != nullptr) j["system"]["moe_flex_dispatcher_backend"] = backend;
    return test::parse(j);
  };
  const JobSpec deepep = job("flex", "deepep", 1);
  const auto fwd = layer_forward_ops(deepep, moe);
  const auto bwd = layer_backward_ops(deepep, moe);
  EXPECT_LT(op_position(fwd, "ep_dispatch"), op_position(fwd, "permute"));
  EXPECT_LT(op_position(fwd, "unpermute"), op_position(fwd, "ep_combine"));
  EXPECT_LT(op_position(bwd, "ep_combine_bwd"), op_position(bwd, "unpermute_bwd"));
  EXPECT_LT(op_position(bwd, "permute_bwd"), op_position(bwd, "ep_dispatch_bwd"));

  const JobSpec gather = job("allgather", nullptr, 1);
  const auto gf = layer_forward_ops(gather, moe);
  const auto gb = layer_backward_ops(gather, moe);
  EXPECT_LT(op_position(gf, "ep_dispatch"), op_position(gf, "permute"));
  EXPECT_LT(op_position(gf, "unpermute"), op_position(gf, "combine_cast"));
  EXPECT_LT(op_position(gf, "combine_cast"), op_position(gf, "ep_combine"));
  EXPECT_LT(op_position(gf, "ep_combine"), op_position(gf, "combine_cast_back"));
  EXPECT_LT(op_position(gb, "ep_combine_bwd"), op_position(gb, "unpermute_bwd"));
  EXPECT_LT(op_position(gb, "permute_bwd"), op_position(gb, "ep_dispatch_bwd"));
  // FP32 router (the default): the reduce-scatter moves 4 bytes an element, the gather 2.
  const LayerOp& combine = gf[static_cast<std::size_t>(op_position(gf, "ep_combine"))];
  const LayerOp& dispatch = gf[static_cast<std::size_t>(op_position(gf, "ep_dispatch"))];
  EXPECT_DOUBLE_EQ(combine.comm_bytes, 2.0 * dispatch.comm_bytes);
  EXPECT_DOUBLE_EQ(dispatch.comm_bytes, 8.0 * 4096.0 * 7168.0 * 2.0);  // EP 8 x 4,096 tokens, BF16

  // Expert TP: the all-to-all dispatcher gathers over ETP after its exchange; flex and all-gather
  // exchange over the ETP x EP group itself.
  EXPECT_GE(op_position(layer_forward_ops(job("alltoall", nullptr, 2), moe), "etp_all_gather"), 0);
  const auto flex2 = layer_forward_ops(job("flex", "deepep", 2), moe);
  EXPECT_LT(op_position(flex2, "etp_all_gather"), 0);
  EXPECT_LT(op_position(layer_forward_ops(job("allgather", nullptr, 2), moe), "etp_all_gather"), 0);
  EXPECT_DOUBLE_EQ(flex2[static_cast<std::size_t>(op_position(flex2, "ep_dispatch"))].comm_bytes,
                   2.0 * fwd[static_cast<std::size_t>(op_position(fwd, "ep_dispatch"))].comm_bytes);
  EXPECT_GT(fwd[static_cast<std::size_t>(op_position(fwd, "ep_dispatch"))].comm_bytes, 0.0);
}

// DeepEP and HybridEP take FP32 probabilities whatever the router's dtype (they cast them), so
// the experts' unfused product is FP32 beside them.
TEST(Moe, FlexProbabilitiesAreFp32WhateverTheRouterDtype) {
  const LayerKind moe{true, false};
  auto act_bytes = [&](const char* dispatcher) {
    auto j = moe_job("qwen3-30b-a3b");
    j["parallel"]["expert_model_parallel_size"] = 8;
    j["system"] = {{"fused_kernels", false}, {"moe_token_dispatcher_type", dispatcher}};
    j["training"]["moe_router_dtype"] = "input";
    const auto ops = layer_forward_ops(test::parse(j), moe);
    std::int64_t rows = 0;
    for (const std::int64_t r : op_named(ops, "expert_fc1").expert_rows) rows += r;
    return op_named(ops, "expert_swiglu").bytes / (static_cast<double>(rows) * 768.0);
  };
  EXPECT_DOUBLE_EQ(act_bytes("alltoall"), 29.3);
  EXPECT_DOUBLE_EQ(act_bytes("flex"), 40.2);
}

// Megatron-Core's refusals: shared-expert overlap with a dispatcher other than alltoall, and
// DeepEP padding to the capacity.
TEST(Moe, MegatronCoreRefusesTheseDispatcherCombinations) {
  auto j = moe_job("deepseek-v3");
  j["parallel"]["expert_model_parallel_size"] = 8;
  j["system"] = {{"moe_token_dispatcher_type", "flex"}, {"moe_shared_expert_overlap", true}};
  EXPECT_INPUT_ERROR(test::parse(j), "system.moe_shared_expert_overlap", "alltoall token dispatcher only");
  j["system"] = {{"moe_token_dispatcher_type", "flex"}};
  j["training"]["moe_expert_capacity_factor"] = 1.0;
  j["training"]["moe_pad_expert_input_to_capacity"] = true;
  EXPECT_INPUT_ERROR(test::parse(j), "training.moe_pad_expert_input_to_capacity", "DeepEP");
  j["system"]["moe_flex_dispatcher_backend"] = "hybridep";
  EXPECT_NO_THROW(test::parse(j));
}

// moe_act under FP8: Megatron-Core makes the experts' FC2 keep its 16-bit input
// (set_save_original_input), so TE casts it row-wise only in the forward and again, column-wise,
// in the backward; TE refuses that under delayed scaling.
TEST(Moe, RecomputedExpertActivationUnderFp8KeepsFc2sInput) {
  const LayerKind moe{true, false};
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  j["training"]["precision"] = "fp8";
  j["training"]["fp8_recipe"] = "tensorwise";
  auto has = [](const std::vector<LayerOp>& ops, const char* name) {
    return std::any_of(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  };
  const JobSpec plain = test::parse(j);
  EXPECT_TRUE(has(layer_forward_ops(plain, moe), "fp8_cast_transpose_expert_fc2_input"));
  EXPECT_FALSE(has(layer_backward_ops(plain, moe), "fp8_cast_expert_fc2_input_columnwise"));
  j["training"]["recompute"] = "selective";
  j["training"]["recompute_modules"] = {"moe_act"};
  const JobSpec act = test::parse(j);
  const auto fwd = layer_forward_ops(act, moe);
  EXPECT_FALSE(has(fwd, "fp8_cast_transpose_expert_fc2_input"));
  const LayerOp& cast = op_named(fwd, "fp8_cast_expert_fc2_input");
  const auto plain_fwd = layer_forward_ops(plain, moe);
  const LayerOp& both = op_named(plain_fwd, "fp8_cast_transpose_expert_fc2_input");
  std::int64_t rows = 0;
  for (const std::int64_t r : op_named(fwd, "expert_fc1").expert_rows) rows += r;
  EXPECT_DOUBLE_EQ(both.bytes - cast.bytes, static_cast<double>(rows) * 768.0);  // one copy fewer
  const auto act_bwd = layer_backward_ops(act, moe);
  EXPECT_DOUBLE_EQ(op_named(act_bwd, "fp8_cast_expert_fc2_input_columnwise").bytes, cast.bytes);
  j["training"]["fp8_recipe"] = "delayed";
  EXPECT_INPUT_ERROR(test::parse(j), "training.recompute_modules", "delayed");
}

// The combine node's kernels (Megatron-Core's submodule_combine_forward: the unpermute after the
// all-to-all combine and the MLP's bias-dropout-add; backward their gradients, before the
// combine-gradient exchange) are marked for the merged schedule's communication stream; nothing
// else is, and a dense layer has none.
TEST(Moe, CombineNodeKernelsAreMarked) {
  auto j = moe_job("qwen3-30b-a3b");
  j["parallel"]["expert_model_parallel_size"] = 8;
  const JobSpec job = test::parse(j);
  const LayerKind moe{true, false};
  const std::vector<LayerOp> fwd = layer_forward_ops(job, moe);
  const std::vector<LayerOp> bwd = layer_backward_ops(job, moe);
  std::vector<std::string> marked;
  for (const auto& ops : {fwd, bwd})
    for (const LayerOp& op : ops)
      if (op.combine_node) marked.push_back(op.name);
  EXPECT_EQ(marked, (std::vector<std::string>{"unpermute", "bias_dropout_add_mlp", "unpermute_bwd"}));
  // In pass order: forward after the combine, backward before its gradient's exchange.
  EXPECT_GT(op_position(fwd, "unpermute"), op_position(fwd, "ep_combine"));
  EXPECT_LT(op_position(bwd, "unpermute_bwd"), op_position(bwd, "ep_combine_bwd"));
  for (const LayerOp& op : layer_forward_ops(job, LayerKind{})) EXPECT_FALSE(op.combine_node) << op.name;
}

// Under FP8 with SP, the shared experts' FC1 (a plain TE linear) quantizes its input shard
// row-wise and gathers one byte an element, whatever the recipe; MLA's separate norm feeds
// duplicated down-projections that quantize their own input shards both ways (no norm-output
// cast, no gathered copy to transpose).
TEST(Moe, Fp8SharedExpertAndMlaInputCasts) {
  auto j = moe_job("deepseek-v3");
  j["parallel"]["tensor_model_parallel_size"] = 2;
  j["parallel"]["sequence_parallel"] = true;
  j["parallel"]["expert_model_parallel_size"] = 32;
  j["training"]["precision"] = "fp8";
  j["training"]["fp8_recipe"] = "blockwise";
  const JobSpec job = test::parse(j);
  const LayerKind moe{true, false};
  const std::vector<LayerOp> fwd = layer_forward_ops(job, moe);
  const std::vector<LayerOp> bwd = layer_backward_ops(job, moe);
  const double shard = 4096.0 / 2 * 7168;
  EXPECT_DOUBLE_EQ(op_named(fwd, "tp_all_gather_shared_experts").comm_bytes, 2 * shard * 1.0);
  EXPECT_DOUBLE_EQ(op_named(bwd, "tp_all_gather_wgrad_shared_experts").comm_bytes, 2 * shard * 1.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "fp8_cast_shared_fc1_input").bytes, shard * 3.0);  // read 2, write 1
  EXPECT_DOUBLE_EQ(op_named(fwd, "fp8_cast_transpose_q_down_input").bytes, shard * 4.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "fp8_cast_transpose_kv_down_input").bytes, shard * 4.0);
  for (const auto& ops : {fwd, bwd}) {
    for (const auto& op : ops) EXPECT_EQ(op.name.find("input_norm_output"), std::string::npos) << op.name;
  }
  // Megatron-Core's MLA layout under SP: the duplicated down-projections run on the shard, the
  // hidden states are not gathered, the up-projections gather the latents (FP8 out of their fused
  // norms) and reduce-scatter the latents' gradients.
  EXPECT_EQ(op_named(fwd, "q_down").gemm_m, 2048);
  EXPECT_EQ(op_named(fwd, "kv_down").gemm_m, 2048);
  EXPECT_EQ(op_named(fwd, "q_up").gemm_m, 4096);
  for (const auto& op : fwd) EXPECT_NE(op.name, "tp_all_gather_attn");
  EXPECT_DOUBLE_EQ(op_named(fwd, "tp_all_gather_q_latent").comm_bytes, 4096.0 * 1536 * 1.0);
  EXPECT_DOUBLE_EQ(op_named(fwd, "tp_all_gather_kv_latent").comm_bytes, 4096.0 * 512 * 1.0);
  EXPECT_DOUBLE_EQ(op_named(bwd, "tp_reduce_scatter_dgrad_q_latent").comm_bytes, 4096.0 * 1536 * 2.0);
  for (const auto& op : bwd) EXPECT_NE(op.name, "tp_reduce_scatter_dgrad_attn");
  EXPECT_EQ(op_named(bwd, "q_down_wgrad").gemm_k, 2048);
  EXPECT_DOUBLE_EQ(op_named(fwd, "tp_all_gather_rope_key").comm_bytes, 4096.0 * 64 * 2.0);
  EXPECT_DOUBLE_EQ(op_named(bwd, "tp_reduce_scatter_rope_key_grad").comm_bytes, 4096.0 * 64 * 2.0);
  EXPECT_DOUBLE_EQ(op_named(bwd, "tp_reduce_scatter_dgrad_kv_latent").comm_bytes, 4096.0 * 512 * 2.0);
  // recompute_modules mla_up_proj replays the up-projections with their norms and gathers.
  auto rec = j;
  rec["training"]["recompute"] = "selective";
  rec["training"]["recompute_modules"] = {"mla_up_proj"};
  const std::vector<LayerOp> replay = layer_recompute_ops(test::parse(rec), moe);
  for (const char* name : {"q_latent_norm", "tp_all_gather_q_latent", "q_up", "kv_latent_norm", "tp_all_gather_kv_latent", "kv_up", "rope"}) {
    EXPECT_NO_THROW(op_named(replay, name)) << name;
  }
  // ... and the fused MLA RoPE as the forward runs it: the whole query, key and value rewritten.
  EXPECT_DOUBLE_EQ(op_named(replay, "rope").bytes, op_named(fwd, "rope").bytes);
  // Its bytes at TP 2 (64 heads a rank): the query (192 a head) read and written; the key-value
  // kernel reads the up-projection's nope and value parts (128 + 128) and writes the key (192)
  // and the value (128): 4,096 tokens x 64 x (2 x 192 + 256 + 320) x 2 B = 480 MiB.
  EXPECT_DOUBLE_EQ(op_named(fwd, "rope").bytes, 4096.0 * 64 * (2 * 192 + 256 + 320) * 2);
  EXPECT_DOUBLE_EQ(op_named(bwd, "rope_bwd").bytes, op_named(fwd, "rope").bytes);
  // Without a query latent the query projection is a plain TE linear on the gathered hidden
  // states: its input shard cast row-wise, gathered at 1 byte, transposed for the wgrad.
  auto no_q_latent = j;
  no_q_latent["model"] = {{"base", "deepseek-v3"}, {"q_lora_rank", 0}};
  const JobSpec q0 = test::parse(no_q_latent);
  const std::vector<LayerOp> f0 = layer_forward_ops(q0, moe);
  const std::vector<LayerOp> b0 = layer_backward_ops(q0, moe);
  EXPECT_DOUBLE_EQ(op_named(f0, "fp8_cast_q_proj_input").bytes, shard * 3.0);
  EXPECT_DOUBLE_EQ(op_named(f0, "tp_all_gather_attn").comm_bytes, 2 * shard * 1.0);
  EXPECT_EQ(op_named(f0, "q_proj").gemm_m, 4096);
  EXPECT_NO_THROW(op_named(b0, "fp8_transpose_q_proj_input"));
  EXPECT_NO_THROW(op_named(b0, "tp_reduce_scatter_dgrad_attn"));
  rec["model"] = no_q_latent["model"];
  EXPECT_NO_THROW(op_named(layer_recompute_ops(test::parse(rec), moe), "q_proj"));
}

}  // namespace
}  // namespace megasim
