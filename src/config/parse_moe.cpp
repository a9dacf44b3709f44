// The Mixture-of-Experts, multi-head latent attention and per-layer parts of a model section, in
// every spelling the big families' Hugging Face config.json files use (DESIGN.md A4,
// reference/moe.md section 1), and the rule for the keys a Hugging Face file may carry that
// megasim does not need.
#include <algorithm>
#include <array>
#include <string>

#include "config/json_reader.hpp"
#include "config/parse_parts.hpp"

namespace megasim::config_detail {

namespace {

std::string s(std::int64_t v) { return std::to_string(v); }

// One concept, several spellings: the value of the first key present; every other spelling
// present must agree (GPT-OSS writes both experts_per_token and num_experts_per_tok).
std::optional<std::int64_t> int_spelled(ObjectReader& r, std::initializer_list<const char*> keys,
                                        std::int64_t min) {
  std::optional<std::int64_t> value;
  const char* first = nullptr;
  for (const char* key : keys) {
    const auto v = r.int_opt(key, min, kMaxInt);
    if (!v) continue;
    if (!value) {
      value = v;
      first = key;
    } else if (*v != *value) {
      throw InputError(r.path_of(key), "is " + s(*v) + " but " + std::string(first) + " is " + s(*value) +
                                           " (two spellings of one setting must agree)");
    }
  }
  return value;
}

// A per-layer list of 0/1 (Megatron-Core's moe_layer_freq as a list).
std::vector<std::uint8_t> read_layer_flags(ObjectReader& r, std::string_view key, std::int64_t layers) {
  const nlohmann::json& v = *r.raw(key);
  if (!v.is_array() || static_cast<std::int64_t>(v.size()) != layers) {
    throw InputError(r.path_of(key), "must be an integer or a list of num_hidden_layers (" + s(layers) +
                                         ") entries of 0 (dense) or 1 (MoE); got " + describe(v));
  }
  std::vector<std::uint8_t> flags;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || (v[i].get<std::int64_t>() != 0 && v[i].get<std::int64_t>() != 1)) {
      throw InputError(r.path_of(key) + "[" + std::to_string(i) + "]", "must be 0 (dense) or 1 (MoE)");
    }
    flags.push_back(static_cast<std::uint8_t>(v[i].get<std::int64_t>()));
  }
  return flags;
}

// Which layers carry an MoE block, by the family's rule: DeepSeek's first_k_dense_replace and
// integer moe_layer_freq (layer i is MoE when i >= k and i % freq == 0), Qwen's
// decoder_sparse_step and mlp_only_layers ((i + 1) % step == 0 and i not listed), or
// Megatron-Core's per-layer list; otherwise every layer (Mixtral, GPT-OSS).
std::vector<std::uint8_t> moe_layer_pattern(ObjectReader& r, std::int64_t layers) {
  std::vector<std::uint8_t> moe(static_cast<std::size_t>(layers), 1);
  const nlohmann::json* freq = r.raw("moe_layer_freq");
  if (freq != nullptr && freq->is_array()) {
    moe = read_layer_flags(r, "moe_layer_freq", layers);
  } else if (const auto f = r.int_opt("moe_layer_freq", 1, kMaxInt)) {
    for (std::int64_t i = 0; i < layers; ++i) moe[static_cast<std::size_t>(i)] = i % *f == 0 ? 1 : 0;
  }
  if (const auto k = r.int_opt("first_k_dense_replace", 0, layers)) {
    std::fill_n(moe.begin(), *k, 0);
  }
  if (const auto step = r.int_opt("decoder_sparse_step", 1, kMaxInt)) {
    for (std::int64_t i = 0; i < layers; ++i) {
      if ((i + 1) % *step != 0) moe[static_cast<std::size_t>(i)] = 0;
    }
  }
  if (const nlohmann::json* only = r.raw("mlp_only_layers"); only != nullptr && !only->is_null()) {
    if (!only->is_array()) throw InputError(r.path_of("mlp_only_layers"), "must be a list of layer indices");
    for (std::size_t j = 0; j < only->size(); ++j) {
      const auto& e = (*only)[j];
      if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= layers) {
        throw InputError(r.path_of("mlp_only_layers") + "[" + std::to_string(j) + "]",
                         "must be a layer index in [0, " + s(layers - 1) + "]");
      }
      moe[static_cast<std::size_t>(e.get<std::int64_t>())] = 0;
    }
  }
  return moe;
}

// Keys a Hugging Face config.json may carry that do not change what training costs as megasim
// models it: metadata, token ids, inference switches, initialisation and numerics, auxiliary
// losses and routing details that do not move work (score function, scaling, normalisation).
// Anything else unread is an error: a key megasim does not understand might change the model.
constexpr std::array<std::string_view, 47> kHfKeysWithoutCost{
    "architectures", "auto_map", "model_type", "torch_dtype", "dtype", "transformers_version", "_name_or_path",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "use_cache", "output_router_logits", "output_attentions", "output_hidden_states", "return_dict",
    "attn_implementation", "_attn_implementation", "quantization_config", "pretraining_tp",
    "initializer_range", "initial_context_length", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon",
    "norm_epsilon", "rope_theta", "rope_scaling", "rope_parameters", "rotary_emb_base", "rotary_pct",
    "partial_rotary_factor", "max_window_layers", "router_aux_loss_coef", "aux_loss_alpha", "seq_aux",
    "router_z_loss_coef", "router_jitter_noise", "scoring_func", "norm_topk_prob", "routed_scaling_factor",
    "topk_method", "ep_size", "classifier_dropout", "embd_pdrop", "summary_type"};

}  // namespace

void read_moe(ObjectReader& r, ModelSpec& m) {
  MoeSpec& e = m.moe;
  e.num_experts = int_spelled(r, {"num_local_experts", "n_routed_experts", "num_experts"}, 0).value_or(0);
  const auto topk = int_spelled(r, {"num_experts_per_tok", "experts_per_token", "moe_topk"}, 1);
  const auto width = r.int_opt("moe_intermediate_size", 1, kMaxInt);
  const auto n_shared = r.int_opt("n_shared_experts", 0, kMaxInt);
  const auto shared_width = r.int_opt("shared_expert_intermediate_size", 0, kMaxInt);
  const auto groups = r.int_opt("n_group", 1, kMaxInt);
  const auto topk_groups = r.int_opt("topk_group", 1, kMaxInt);
  const std::vector<std::uint8_t> pattern = moe_layer_pattern(r, m.num_hidden_layers);
  if (e.num_experts == 0) return;  // dense: the MoE keys above may be present, unused (Qwen2 dense)

  if (!topk) {
    throw InputError(r.path_of("num_experts_per_tok"),
                     "an MoE model (" + s(e.num_experts) + " experts) needs its top-k (num_experts_per_tok)");
  }
  if (*topk > e.num_experts) {
    throw InputError(r.path_of("num_experts_per_tok"), "top-k " + s(*topk) + " exceeds the " +
                                                           s(e.num_experts) + " routed experts");
  }
  e.experts_per_token = *topk;
  e.expert_intermediate_size = width.value_or(m.intermediate_size);
  if (n_shared && shared_width) {
    throw InputError(r.path_of("shared_expert_intermediate_size"),
                     "give either n_shared_experts (DeepSeek) or shared_expert_intermediate_size (Qwen2-MoE), not both");
  }
  e.shared_expert_intermediate_size = shared_width.value_or(n_shared.value_or(0) * e.expert_intermediate_size);
  if (groups || topk_groups) {
    if (!groups || !topk_groups) {
      throw InputError(r.path_of(groups ? "topk_group" : "n_group"),
                       "group-limited routing needs both n_group and topk_group");
    }
    if (e.num_experts % *groups != 0) {
      throw InputError(r.path_of("n_group"), s(*groups) + " groups do not divide the " + s(e.num_experts) +
                                                 " routed experts");
    }
    if (*topk_groups > *groups) {
      throw InputError(r.path_of("topk_group"), s(*topk_groups) + " exceeds n_group " + s(*groups));
    }
    e.num_groups = *groups;
    e.topk_groups = *topk_groups;
  }
  e.layer_is_moe = pattern;
  if (std::count(pattern.begin(), pattern.end(), 1) == 0) {
    throw InputError(r.path_of("num_local_experts"),
                     "the model has routed experts but its layer rule leaves no MoE layer");
  }
}

void read_mla(ObjectReader& r, ModelSpec& m) {
  MlaSpec& a = m.mla;
  a.kv_lora_rank = r.int_opt("kv_lora_rank", 0, kMaxInt).value_or(0);
  a.q_lora_rank = r.int_opt("q_lora_rank", 0, kMaxInt).value_or(0);
  a.qk_nope_head_dim = r.int_opt("qk_nope_head_dim", 1, kMaxInt).value_or(0);
  a.qk_rope_head_dim = r.int_opt("qk_rope_head_dim", 0, kMaxInt).value_or(0);
  a.v_head_dim = r.int_opt("v_head_dim", 1, kMaxInt).value_or(0);
  if (a.kv_lora_rank == 0) {
    if (a.q_lora_rank > 0) {
      throw InputError(r.path_of("q_lora_rank"), "multi-head latent attention needs kv_lora_rank as well");
    }
    return;
  }
  for (const auto& [value, key] : {std::pair{a.qk_nope_head_dim, "qk_nope_head_dim"},
                                   std::pair{a.v_head_dim, "v_head_dim"}}) {
    if (value == 0) {
      throw InputError(r.path_of(key), "multi-head latent attention (kv_lora_rank " + s(a.kv_lora_rank) +
                                           ") needs " + key);
    }
  }
  // MLA has no key/value groups: every head has its own (decompressed) key and value.
  m.num_key_value_heads = m.num_attention_heads;
  m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
}

void read_layer_types(ObjectReader& r, ModelSpec& m) {
  const nlohmann::json* v = r.raw("layer_types");
  if (v == nullptr || v->is_null()) return;
  if (!v->is_array() || static_cast<std::int64_t>(v->size()) != m.num_hidden_layers) {
    throw InputError(r.path_of("layer_types"), "must list num_hidden_layers (" + s(m.num_hidden_layers) +
                                                   ") entries of \"full_attention\" or \"sliding_attention\"");
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& t = (*v)[i];
    const bool sliding = t == "sliding_attention";
    if (!sliding && t != "full_attention") {
      throw InputError(r.path_of("layer_types") + "[" + std::to_string(i) + "]",
                       "must be \"full_attention\" or \"sliding_attention\"; got " + describe(t));
    }
    m.layer_is_sliding.push_back(sliding ? 1 : 0);
  }
  if (!m.sliding_window && std::count(m.layer_is_sliding.begin(), m.layer_is_sliding.end(), 1) > 0) {
    throw InputError(r.path_of("sliding_window"), "layer_types has sliding_attention layers but no sliding_window");
  }
}

void reject_unmodelled_hf_keys(const ObjectReader& r) {
  for (const std::string& key : r.unused_keys()) {
    if (std::find(kHfKeysWithoutCost.begin(), kHfKeysWithoutCost.end(), key) != kHfKeysWithoutCost.end()) continue;
    throw InputError(r.path_of(key), "megasim does not model this Hugging Face key; it may change the "
                                     "architecture, so it is not ignored (remove it from a copy if it does not)");
  }
}

}  // namespace megasim::config_detail
