#pragma once
// Per-section parsers (private to the config module). Each takes the already-resolved JSON of
// its section and the section's JSON path, checks every key, and fills its spec with defaults.
// Checks that involve more than one section live in validate.cpp.
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "megasim/config/catalog.hpp"
#include "megasim/config/specs.hpp"

namespace megasim::config_detail {

// Native keys (A2) or a Hugging Face config.json (detected by model_type/architectures/torch_dtype).
ModelSpec parse_model(const nlohmann::json& v, const std::string& path, const std::string& default_name);

// Parts of the model section (parse_moe.cpp): Mixture of Experts in every family's spelling with
// its rule for which layers are MoE, multi-head latent attention, per-layer attention types; and
// the rule for Hugging Face keys megasim does not read (harmless ones pass, the rest are errors).
class ObjectReader;
void read_moe(ObjectReader& r, ModelSpec& m);
void read_mla(ObjectReader& r, ModelSpec& m);
void read_layer_types(ObjectReader& r, ModelSpec& m);
void reject_unmodelled_hf_keys(const ObjectReader& r);

// parallel.pipeline_model_parallel_layout (parse_layout.cpp): transformer layers per virtual
// stage, in Megatron-Core's order (virtual stage i = chunk i / PP of stage i % PP). Sets `vpp` to
// the layout's virtual stages per pipeline stage (an error if a written VPP > 1 disagrees).
std::vector<int> parse_pipeline_layout(const std::string& text, const std::string& path, std::int64_t layers,
                                       std::int64_t mtp_layers, int pp, int& vpp);

// `dir` resolves a relative "gpu" file path.
ClusterSpec parse_cluster(const nlohmann::json& v, const std::string& path, const Catalog& catalog,
                          const std::filesystem::path& dir, const std::string& default_name);

struct ParallelInput {
  ParallelSpec spec;
  std::optional<bool> sequence_parallel;      // as written; default derived from TP
  std::optional<std::int64_t> data_parallel_size;  // as written; must match the derived one
  std::optional<std::string> pipeline_layout;      // as written; expanded by validate_and_derive
};
ParallelInput parse_parallel(const nlohmann::json& v, const std::string& path);

TrainingSpec parse_training(const nlohmann::json& v, const std::string& path);

// {"preset": name, ...overrides}; the preset is configs/systems/<name>.json.
// The preset, then the object's overrides; attention_kernel "auto" resolved for `gpu`.
SystemSpec parse_system(const nlohmann::json& v, const std::string& path, const Catalog& catalog,
                        const GpuSpec& gpu);

// Cross-section rules (divisibility, placement) and derived fields (data_parallel_size,
// sequence_parallel default).
void validate_and_derive(JobSpec& job, const ParallelInput& parallel);
// WrittenPlan::Replaced: the neutral plan written in, then every rule that does not depend on it.
void validate_without_plan(JobSpec& job, const ParallelInput& parallel);

}  // namespace megasim::config_detail
