#pragma once
// Config loading (DESIGN.md A2): JSON file -> --set overrides -> validated JobSpec.
//
// Usage (what `megasim simulate` does):
//   const Catalog cat = Catalog::open(default_catalog_dir(argv[0]));
//   JobSpec job = load_job("configs/megascale-175b-12288.json",
//                          {"cluster.num_gpus=6144", "system.preset=megatron-lm"}, cat);
// Or step by step:
//   nlohmann::json cfg = read_json_file(file, "CONFIG");
//   apply_override(cfg, "parallel.tensor_model_parallel_size=4", cat, file.parent_path());
//   JobSpec job = parse_job(cfg, cat, file.parent_path());
// Every problem with the user's input throws InputError(json_path, rule), one line.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "megasim/config/catalog.hpp"
#include "megasim/config/specs.hpp"

namespace megasim {

// Parses JSON text; on a syntax error throws InputError(json_path, "<where>: not valid JSON
// at line L, column C: ..."). `where` names the source (a file name) in the message.
nlohmann::json parse_json_text(std::string_view text, const std::string& json_path, const std::string& where);

// Reads and parses one JSON file; unreadable or malformed files throw InputError(json_path, ...)
// naming the file and the parse error position.
nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& json_path);

// Applies one `--set a.b.c=VALUE`. VALUE is parsed as JSON, else taken as a string. Sections on
// the way that are strings (a catalog name or a file) are first replaced by the object they name,
// so `--set cluster.num_gpus=4096` works with `"cluster": "megascale-a100-clos"`. A string
// `system` section becomes {"preset": name}. Relative file names resolve against `base_dir`.
// Malformed assignments throw InputError("--set", ...).
void apply_override(nlohmann::json& config, std::string_view assignment, const Catalog& catalog,
                    const std::filesystem::path& base_dir = {});

// What becomes of the config's parallel plan (TP, PP, VPP, CP, uneven or accounted stages,
// micro-batch size). Checked: it must tile the GPUs, heads, layers and batch, as Megatron
// checks it. Replaced: the planner's starting point; the job gets the neutral plan (all sizes
// 1, micro-batch 1, DP = num_gpus) and the divisibility rules that depend on the plan are not
// applied, so a written plan the planner will replace cannot stop it. Every other section is
// validated as usual; sequence_parallel keeps what was written (default on) for the planner.
enum class WrittenPlan { Checked, Replaced };

// Validates a whole config and returns the typed job. Relative file names in sections resolve
// against `base_dir` (the config file's directory). A plan that does not fit in memory is not
// an error here.
JobSpec parse_job(const nlohmann::json& config, const Catalog& catalog, const std::filesystem::path& base_dir,
                  WrittenPlan plan = WrittenPlan::Checked);

// CONFIG as the CLI and the user API take it: an existing file, else the name of a bundled job
// (<catalog>/<name>.json); InputError("CONFIG") when it is neither.
std::filesystem::path resolve_job_config(const std::string& config, const Catalog& catalog);

// read_json_file + apply_override (in order) + parse_job. The job name defaults to the file stem.
JobSpec load_job(const std::filesystem::path& file, const std::vector<std::string>& overrides,
                 const Catalog& catalog, WrittenPlan plan = WrittenPlan::Checked);

// A bundled cluster (clusters/<name>) as a job, for commands that need only its fabric
// (`topology`, `collective`): the model and training sections are a placeholder (Llama 3.1 8B,
// one 4,096-token sequence) and the plan is replaced, so only the cluster is checked.
// `overrides` apply as in load_job (working directory as the base).
JobSpec load_cluster_as_job(const std::string& cluster, const std::vector<std::string>& overrides,
                            const Catalog& catalog);

}  // namespace megasim
