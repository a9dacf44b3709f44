#pragma once
// Small jobs for the planner and sweep tests, loaded through the real config parser.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"

namespace megasim::testing {

inline Catalog test_catalog() { return Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs"); }

// A 6-layer, 12-head GPT-style model (h 768) on one 8-GPU A100 node: small enough that every
// plan fits in memory, shaped so that some TP/PP choices break divisibility.
inline nlohmann::json small_job_json() {
  return nlohmann::json::parse(R"({
    "name": "small",
    "model": {"hidden_size": 768, "num_hidden_layers": 6, "num_attention_heads": 12,
              "vocab_size": 32000, "hidden_act": "gelu"},
    "cluster": {"base": "dgx-a100-hdr-clos", "num_gpus": 8},
    "parallel": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1, "zero_stage": 1},
    "training": {"seq_length": 1024, "global_batch_size": 16, "micro_batch_size": 1},
    "system": "megatron-lm"
  })");
}

inline JobSpec load_with(const Catalog& cat, nlohmann::json cfg, const std::vector<std::string>& sets) {
  for (const auto& s : sets) apply_override(cfg, s, cat, {});
  return parse_job(cfg, cat, {});
}

}  // namespace megasim::testing
