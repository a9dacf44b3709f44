// The model section: native A2 keys, or an unmodified Hugging Face config.json.
#include <algorithm>
#include <array>
#include <initializer_list>

#include "config/json_reader.hpp"
#include "config/parse_parts.hpp"

namespace megasim::config_detail {

namespace {

constexpr std::array<EnumName<Activation>, 10> kActivations{{{"gelu", Activation::Gelu},
                                                            {"gelu_new", Activation::GeluNew},
                                                            {"gelu_fast", Activation::GeluNew},
                                                            {"gelu_pytorch_tanh", Activation::GeluNew},
                                                            {"silu", Activation::Silu},
                                                            {"swiglu", Activation::Silu},
                                                            {"swish", Activation::Silu},
                                                            {"relu", Activation::Relu},
                                                            {"relu2", Activation::SquaredRelu},  // Nemotron-4
                                                            {"quick_gelu", Activation::Gelu}}};

constexpr std::array<EnumName<Norm>, 2> kNorms{{{"layernorm", Norm::LayerNorm}, {"rmsnorm", Norm::RmsNorm}}};

// HF model_type values whose architecture is Llama-like: gated SiLU MLP, RMSNorm, rotary
// embeddings and no linear biases unless the config says otherwise.
constexpr std::array<std::string_view, 11> kLlamaLike{"llama",  "mistral", "mixtral", "qwen2",
                                                      "qwen3",  "gemma",   "gemma2",  "phi3",
                                                      "olmo2",  "internlm2", "granite"};

bool is_llama_like(const std::optional<std::string>& model_type) {
  return model_type && std::find(kLlamaLike.begin(), kLlamaLike.end(), *model_type) != kLlamaLike.end();
}

// HF model_type values whose attention normalises queries and keys after the projection with no
// config key saying so (transformers modeling_qwen3.py, modeling_qwen3_moe.py, modeling_qwen3_next.py,
// modeling_olmo2.py, modeling_olmo3.py, modeling_olmoe.py, modeling_gemma3.py: q_norm and k_norm
// built unconditionally; per head in Qwen3 and Gemma 3, over the whole projection in OLMo).
// Others say so with use_qk_norm (GLM-4.5, Cohere).
constexpr std::array<std::string_view, 8> kQkNormed{"qwen3",  "qwen3_moe", "qwen3_next", "olmo2",
                                                    "olmo3",  "olmoe",     "gemma3",     "gemma3_text"};

bool model_type_has_qk_norm(const std::optional<std::string>& model_type) {
  return model_type && std::find(kQkNormed.begin(), kQkNormed.end(), *model_type) != kQkNormed.end();
}

// Hugging Face spells the RoPE scaling {"rope_type": "yarn", ...} (older configs: "type").
bool hf_rope_type_is_yarn(const nlohmann::json* scaling) {
  if (scaling == nullptr || !scaling->is_object()) return false;
  for (const char* key : {"rope_type", "type"}) {
    const auto it = scaling->find(key);
    if (it != scaling->end() && it->is_string() && it->get<std::string>() == "yarn") return true;
  }
  return false;
}

bool is_hf(const nlohmann::json& v) {
  return v.is_object() && (v.contains("model_type") || v.contains("architectures") || v.contains("torch_dtype"));
}

// Accepts null (full causal attention) or a positive token count.
std::optional<std::int64_t> read_sliding_window(ObjectReader& r) {
  const nlohmann::json* v = r.raw("sliding_window");
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_number() && v->get<double>() <= 0) {
    throw InputError(r.path_of("sliding_window"),
                     "must be a positive number of tokens, or null for full causal attention; got " + v->dump());
  }
  return r.int_opt("sliding_window", 1, kMaxInt);
}

}  // namespace

ModelSpec parse_model(const nlohmann::json& v, const std::string& path, const std::string& default_name) {
  const bool hf = is_hf(v);
  ObjectReader r(v, path);
  ModelSpec m;
  m.name = r.string_opt("name").value_or(default_name);
  m.hidden_size = r.int_req("hidden_size", 1, kMaxInt);
  m.num_hidden_layers = r.int_req("num_hidden_layers", 1, kMaxInt);
  m.num_attention_heads = r.int_req("num_attention_heads", 1, kMaxInt);
  m.vocab_size = r.int_req("vocab_size", 1, kMaxInt);
  m.num_key_value_heads = r.int_opt("num_key_value_heads", 1, kMaxInt).value_or(m.num_attention_heads);
  if (m.num_attention_heads % m.num_key_value_heads != 0) {
    throw InputError(r.path_of("num_key_value_heads"),
                     "num_attention_heads " + std::to_string(m.num_attention_heads) +
                         " is not divisible by num_key_value_heads " + std::to_string(m.num_key_value_heads));
  }
  if (const auto hd = r.int_opt("head_dim", 1, kMaxInt)) {
    m.head_dim = *hd;
  } else if (m.hidden_size % m.num_attention_heads != 0) {
    throw InputError(r.path_of("num_attention_heads"),
                     "hidden_size " + std::to_string(m.hidden_size) + " is not divisible by num_attention_heads " +
                         std::to_string(m.num_attention_heads) + "; give head_dim explicitly");
  } else {
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  m.intermediate_size = r.int_opt("intermediate_size", 1, kMaxInt).value_or(4 * m.hidden_size);

  const auto model_type = hf ? r.string_opt("model_type") : std::nullopt;
  const bool llama_like = is_llama_like(model_type);
  const auto act_name = r.string_opt("hidden_act");
  m.hidden_act = r.enum_opt("hidden_act", kActivations).value_or(llama_like ? Activation::Silu : Activation::Gelu);
  const bool gated_act = act_name ? (*act_name == "silu" || *act_name == "swiglu" || *act_name == "swish")
                                  : llama_like;
  m.gated_mlp = r.bool_opt("gated_mlp").value_or(gated_act || llama_like);

  if (const auto n = r.enum_opt("normalization", kNorms)) {
    m.normalization = *n;
  } else if (hf && r.raw("rms_norm_eps") != nullptr) {
    m.normalization = Norm::RmsNorm;
  } else if (hf && (r.raw("layer_norm_eps") != nullptr || r.raw("layer_norm_epsilon") != nullptr)) {
    m.normalization = Norm::LayerNorm;
  } else {
    m.normalization = llama_like ? Norm::RmsNorm : Norm::LayerNorm;
  }
  m.use_parallel_residual = r.bool_opt("use_parallel_residual").value_or(false);

  m.sliding_window = read_sliding_window(r);
  if (hf && r.bool_opt("use_sliding_window") == false) m.sliding_window.reset();  // Qwen2 style

  // HF's PretrainedConfig ties embeddings unless told otherwise; A2's native default is untied.
  m.tie_word_embeddings = r.bool_opt("tie_word_embeddings").value_or(hf);
  const auto attention_bias = r.bool_opt("attention_bias");
  const auto mlp_bias = hf ? r.bool_opt("mlp_bias") : std::nullopt;
  // One flag covers all linear biases; Llama-style configs that set only one of them keep the
  // attention one (mlp_bias is false in every published Llama config).
  m.attention_bias = attention_bias.value_or(mlp_bias.value_or(!llama_like));
  m.max_position_embeddings = r.int_opt("max_position_embeddings", 0, kMaxInt).value_or(0);
  // Native default: Megatron-LM's 0.1. Hugging Face: the config's own keys (GPT-2 spells them
  // resid_pdrop / attn_pdrop, OPT "dropout"); configs that train with dropout write it, and the
  // transformers classes of the others (Llama, GPT-NeoX, Mistral, Qwen, Falcon) default to 0.
  const double drop_default = hf ? 0.0 : 0.1;
  constexpr double kMaxDropout = 0.5;  // beyond this no LLM trains; likely a percentage typo
  // The first key present wins; later spellings are not read.
  auto first_of = [&](std::initializer_list<const char*> keys) -> double {
    for (const char* key : keys) {
      if (const auto p = r.number_opt(key, 0, kMaxDropout)) return *p;
    }
    return drop_default;
  };
  m.hidden_dropout = hf ? first_of({"hidden_dropout", "resid_pdrop", "dropout"}) : first_of({"hidden_dropout"});
  m.attention_dropout = hf ? first_of({"attention_dropout", "attn_pdrop"}) : first_of({"attention_dropout"});
  if (const auto rope = r.bool_opt("rope")) {
    m.rope = *rope;
  } else if (hf) {
    const auto pos_type = r.string_opt("position_embedding_type");
    m.rope = llama_like || r.raw("rope_theta") != nullptr || r.raw("rotary_pct") != nullptr ||
             r.raw("rotary_emb_base") != nullptr || r.raw("rope_scaling") != nullptr ||
             (pos_type && (*pos_type == "rope" || *pos_type == "rotary"));
  }
  if (const auto yarn = r.bool_opt("rope_yarn")) {
    m.rope_yarn = *yarn;
  } else if (hf) {
    m.rope_yarn = hf_rope_type_is_yarn(r.raw("rope_scaling")) || hf_rope_type_is_yarn(r.raw("rope_parameters"));
  }
  if (m.rope_yarn && !m.rope) throw InputError(r.path_of("rope_yarn"), "YaRN scaling needs rotary embeddings (rope)");
  if (const auto qk = r.bool_opt("qk_layernorm")) {
    m.qk_layernorm = *qk;
  } else if (hf) {
    m.qk_layernorm = r.bool_opt("use_qk_norm").value_or(model_type_has_qk_norm(model_type));
  }
  read_mla(r, m);
  read_moe(r, m);
  // Modelled where Megatron-Core runs it for GPT-OSS: the routed experts' gated activation. Its
  // dense MLP refuses the fused clamped activation, and the shared experts' clamp is not modelled.
  if (const auto limit = r.number_opt("swiglu_limit", 0, 1e9)) {
    if (!(*limit > 0)) throw InputError(r.path_of("swiglu_limit"), "must be > 0 (omit it for no clamp)");
    if (m.moe.num_experts == 0 || !m.gated_mlp || m.moe.shared_expert_intermediate_size > 0) {
      throw InputError(r.path_of("swiglu_limit"),
                       "is modelled for the routed experts of a gated MoE model without shared experts (GPT-OSS)");
    }
    m.swiglu_limit = *limit;
  }
  read_layer_types(r, m);
  m.num_nextn_predict_layers = r.int_opt("num_nextn_predict_layers", 0, kMaxInt).value_or(0);
  if (hf) {
    reject_unmodelled_hf_keys(r);
  } else {
    r.finish();
  }
  return m;
}

}  // namespace megasim::config_detail
