#include <gtest/gtest.h>

#include "config/test_util.hpp"

namespace megasim {
namespace {

JobSpec with_model(const nlohmann::json& model) {
  auto j = test::small_job();
  j["model"] = model;
  return test::parse(j);
}

nlohmann::json base_model() { return test::small_job().at("model"); }

TEST(Model, HuggingFaceLlama31_8b) {
  auto j = test::small_job();
  j["model"] = "hf-llama-3.1-8b-config.json";  // relative to tests/data
  j["parallel"]["tensor_model_parallel_size"] = 8;
  j["parallel"]["pipeline_model_parallel_size"] = 2;
  const ModelSpec m = test::parse(j).model;
  EXPECT_EQ(m.name, "hf-llama-3.1-8b-config");
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.num_hidden_layers, 32);
  EXPECT_EQ(m.num_attention_heads, 32);
  EXPECT_EQ(m.num_key_value_heads, 8);
  EXPECT_EQ(m.head_dim, 128);  // 4096 / 32
  EXPECT_EQ(m.intermediate_size, 14336);
  EXPECT_EQ(m.vocab_size, 128256);
  EXPECT_EQ(m.hidden_act, Activation::Silu);
  EXPECT_TRUE(m.gated_mlp);
  EXPECT_EQ(m.normalization, Norm::RmsNorm);  // from rms_norm_eps
  EXPECT_TRUE(m.rope);                        // from rope_theta
  EXPECT_FALSE(m.attention_bias);
  EXPECT_FALSE(m.tie_word_embeddings);
  EXPECT_FALSE(m.sliding_window.has_value());
  EXPECT_EQ(m.max_position_embeddings, 131072);
}

// YaRN from either Hugging Face spelling (rope_scaling, or rope_parameters of transformers v5;
// rope_type or the older type); other scalings and no scaling leave it off.
TEST(Model, HuggingFaceRopeScalingYarn) {
  auto j = test::small_job();
  j["model"] = "hf-llama-3.1-8b-config.json";  // rope_scaling rope_type llama3
  EXPECT_FALSE(test::parse(j).model.rope_yarn);
  nlohmann::json hf = nlohmann::json::parse(R"({"model_type": "llama", "hidden_size": 1024,
      "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 4096,
      "vocab_size": 32000, "rope_theta": 10000})");
  EXPECT_FALSE(with_model(hf).model.rope_yarn);
  hf["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 32.0}};
  EXPECT_TRUE(with_model(hf).model.rope_yarn);
  hf["rope_scaling"] = {{"type", "yarn"}, {"factor", 40}};
  EXPECT_TRUE(with_model(hf).model.rope_yarn);
  hf.erase("rope_scaling");
  hf["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 150000}};
  EXPECT_TRUE(with_model(hf).model.rope_yarn);
  hf["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 150000}};
  EXPECT_FALSE(with_model(hf).model.rope_yarn);
}

TEST(Model, NativeRopeYarnNeedsRope) {
  auto m = base_model();
  m["rope"] = true;
  m["rope_yarn"] = true;
  EXPECT_TRUE(with_model(m).model.rope_yarn);
  m["rope"] = false;
  EXPECT_INPUT_ERROR(with_model(m), "model.rope_yarn", "needs rotary embeddings");
}

TEST(Model, HuggingFaceGptNeox20b) {
  auto j = test::small_job();
  j["model"] = "hf-gpt-neox-20b-config.json";
  const ModelSpec m = test::parse(j).model;
  EXPECT_EQ(m.hidden_size, 6144);
  EXPECT_EQ(m.num_hidden_layers, 44);
  EXPECT_EQ(m.num_key_value_heads, 64);
  EXPECT_EQ(m.intermediate_size, 24576);
  EXPECT_EQ(m.vocab_size, 50432);
  EXPECT_EQ(m.hidden_act, Activation::GeluNew);  // gelu_fast is the tanh approximation
  EXPECT_FALSE(m.gated_mlp);
  EXPECT_TRUE(m.use_parallel_residual);
  EXPECT_EQ(m.normalization, Norm::LayerNorm);
  EXPECT_TRUE(m.rope);  // rotary_pct
  EXPECT_TRUE(m.attention_bias);
  EXPECT_FALSE(m.tie_word_embeddings);
}

TEST(Model, HuggingFacePassesCostFreeKeysAndRejectsUnknownOnes) {
  auto hf = base_model();
  hf["model_type"] = "mistral";
  hf["torch_dtype"] = "bfloat16";
  hf["bos_token_id"] = 1;           // carries no training cost: read past
  hf["router_aux_loss_coef"] = 0.02;
  const ModelSpec m = with_model(hf).model;
  // Llama-like model_type with no hidden_act: gated SiLU, RMSNorm, rope, no biases.
  EXPECT_EQ(m.hidden_act, Activation::Silu);
  EXPECT_TRUE(m.gated_mlp);
  EXPECT_EQ(m.normalization, Norm::RmsNorm);
  EXPECT_TRUE(m.rope);
  EXPECT_FALSE(m.attention_bias);
  EXPECT_TRUE(m.tie_word_embeddings);  // HF's PretrainedConfig default
  // A key megasim does not know might change the architecture: an error, never ignored.
  hf["some_future_key"] = 3;
  EXPECT_INPUT_ERROR(with_model(hf), "model.some_future_key", "does not model this Hugging Face key");

  auto native = base_model();
  native["some_future_key"] = 3;
  EXPECT_INPUT_ERROR(with_model(native), "model.some_future_key", "unknown key \"some_future_key\"; valid keys:");
}

TEST(Model, UnknownKeySuggestsClosest) {
  auto m = base_model();
  m.erase("hidden_size");
  m["hiden_size"] = 1024;
  m["hidden_size"] = 1024;
  EXPECT_INPUT_ERROR(with_model(m), "model.hiden_size", "unknown key \"hiden_size\"; did you mean \"hidden_size\"?");
}

TEST(Model, DefaultsFollowA2) {
  const ModelSpec m = with_model(base_model()).model;
  EXPECT_EQ(m.num_key_value_heads, 16);     // = num_attention_heads
  EXPECT_EQ(m.intermediate_size, 4 * 1024); // 4h
  EXPECT_EQ(m.head_dim, 64);                // 1024 / 16
  EXPECT_EQ(m.hidden_act, Activation::Gelu);
  EXPECT_FALSE(m.gated_mlp);
  EXPECT_EQ(m.normalization, Norm::LayerNorm);
  EXPECT_FALSE(m.tie_word_embeddings);
  EXPECT_TRUE(m.attention_bias);
  EXPECT_FALSE(m.rope);
}

TEST(Model, GatedDefaultFollowsActivation) {
  auto m = base_model();
  m["hidden_act"] = "swiglu";
  EXPECT_TRUE(with_model(m).model.gated_mlp);
  m["gated_mlp"] = false;
  EXPECT_FALSE(with_model(m).model.gated_mlp);
  m.erase("gated_mlp");
  m["hidden_act"] = "gelu_new";
  EXPECT_FALSE(with_model(m).model.gated_mlp);
}

TEST(Model, SlidingWindow) {
  auto m = base_model();
  m["sliding_window"] = nullptr;
  EXPECT_FALSE(with_model(m).model.sliding_window.has_value());
  m["sliding_window"] = 4096;
  EXPECT_EQ(with_model(m).model.sliding_window, 4096);
  m["sliding_window"] = 0;
  EXPECT_INPUT_ERROR(with_model(m), "model.sliding_window", "must be a positive number of tokens");
  m["sliding_window"] = -5;
  EXPECT_INPUT_ERROR(with_model(m), "model.sliding_window", "must be a positive number of tokens");
}

TEST(Model, TypeAndRangeErrors) {
  auto m = base_model();
  m["hidden_size"] = "4096";
  EXPECT_INPUT_ERROR(with_model(m), "model.hidden_size", "expected an integer, got string \"4096\"");
  m["hidden_size"] = 1024.5;
  EXPECT_INPUT_ERROR(with_model(m), "model.hidden_size", "expected an integer");
  m["hidden_size"] = 0;
  EXPECT_INPUT_ERROR(with_model(m), "model.hidden_size", "must be positive");
  m["hidden_size"] = -1024;
  EXPECT_INPUT_ERROR(with_model(m), "model.hidden_size", "must be positive");
  m = base_model();
  m.erase("vocab_size");
  EXPECT_INPUT_ERROR(with_model(m), "model.vocab_size", "required field is missing");
  m = base_model();
  m["hidden_act"] = "gelu2";
  EXPECT_INPUT_ERROR(with_model(m), "model.hidden_act", "unknown value \"gelu2\"; valid: gelu, gelu_new,");
  m = base_model();
  m["tie_word_embeddings"] = 1;
  EXPECT_INPUT_ERROR(with_model(m), "model.tie_word_embeddings", "expected true or false");
  m = base_model();
  m["normalization"] = "batchnorm";
  EXPECT_INPUT_ERROR(with_model(m), "model.normalization", "valid: layernorm, rmsnorm");
}

// Megatron-LM's 0.1 natively; Hugging Face configs give their own (Llama writes
// attention_dropout 0.0; GPT-2 spells them resid_pdrop/attn_pdrop) and default to 0.
TEST(Model, DropoutDefaultsAndRange) {
  const ModelSpec native = with_model(base_model()).model;
  EXPECT_DOUBLE_EQ(native.hidden_dropout, 0.1);
  EXPECT_DOUBLE_EQ(native.attention_dropout, 0.1);
  auto j = test::small_job();
  j["model"] = "hf-llama-3.1-8b-config.json";
  const ModelSpec llama = test::parse(j).model;
  EXPECT_DOUBLE_EQ(llama.hidden_dropout, 0.0);
  EXPECT_DOUBLE_EQ(llama.attention_dropout, 0.0);
  j["model"] = "hf-gpt-neox-20b-config.json";  // no dropout keys: transformers' default 0
  EXPECT_DOUBLE_EQ(test::parse(j).model.hidden_dropout, 0.0);
  auto m = base_model();
  m["hidden_dropout"] = 0.0;
  m["attention_dropout"] = {{"value", 0.0}, {"source", "no dropout"}};
  const ModelSpec none = with_model(m).model;
  EXPECT_DOUBLE_EQ(none.hidden_dropout, 0.0);
  EXPECT_DOUBLE_EQ(none.attention_dropout, 0.0);
  m["hidden_dropout"] = 1.0;
  EXPECT_INPUT_ERROR(with_model(m), "model.hidden_dropout", "must be between 0 and 0.5, got 1");
  m["hidden_dropout"] = "0.1";
  EXPECT_INPUT_ERROR(with_model(m), "model.hidden_dropout", "expected a number");
  m = base_model();
  m["attention_dropout"] = -0.1;
  EXPECT_INPUT_ERROR(with_model(m), "model.attention_dropout", "must be between 0 and 0.5, got -0.1");
}

TEST(Model, HeadShapes) {
  auto m = base_model();
  m["num_key_value_heads"] = 5;
  EXPECT_INPUT_ERROR(with_model(m), "model.num_key_value_heads", "not divisible by num_key_value_heads 5");
  m = base_model();
  m["hidden_size"] = 1000;  // 1000 / 16 is not whole
  EXPECT_INPUT_ERROR(with_model(m), "model.num_attention_heads", "give head_dim explicitly");
  m["head_dim"] = 64;
  EXPECT_EQ(with_model(m).model.head_dim, 64);
}

// Textbook: GPT-3 175B parameters with tied embeddings and learned positions,
// P = L*(12h^2 + 13h) + (V + s)*h = 96*(12*12288^2 + 13*12288) + (50257 + 2048)*12288
//   = 173,946,175,488 + 15,335,424 + 642,723,840 = 174,604,234,752 (~174.6B).
TEST(Model, CatalogModelsLoadTextbook) {
  const auto cat = test::catalog();
  for (const auto& name : cat.names("models")) {
    auto j = test::small_job();
    j["model"] = name;
    // TP 4: every catalog model's heads and query groups split 4 ways (Qwen3-MoE has 4).
    j["parallel"] = {{"tensor_model_parallel_size", 4}, {"pipeline_model_parallel_size", 1}};
    j["cluster"]["num_gpus"] = 8;
    j["training"]["global_batch_size"] = 8;
    EXPECT_EQ(parse_job(j, cat, test::data_dir()).model.name, name);
  }
  auto j = test::small_job();
  j["model"] = "gpt3-175b";
  const ModelSpec m = test::parse(j).model;
  const std::int64_t h = m.hidden_size;
  const std::int64_t params = m.num_hidden_layers * (12 * h * h + 13 * h) +
                              (m.vocab_size + m.max_position_embeddings) * h;
  EXPECT_EQ(params, 174604234752);
  EXPECT_TRUE(m.tie_word_embeddings);
}

}  // namespace
}  // namespace megasim
