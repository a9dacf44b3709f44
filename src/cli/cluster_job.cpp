#include "cluster_job.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"

namespace megasim {

JobSpec load_job_or_cluster(const CliContext& ctx, const std::string& config, const std::vector<std::string>& sets) {
  const Catalog catalog = Catalog::open(ctx.catalog_dir);
  if (!catalog.contains("clusters", config)) return ctx.load_job(config, sets);
  bool job_config = true;  // a file or bundled job of that name wins
  try {
    resolve_job_config(config, catalog);
  } catch (const InputError&) {
    job_config = false;
  }
  if (job_config) return ctx.load_job(config, sets);
  // The model is a placeholder: the fabric depends on the cluster alone.
  nlohmann::json job = {{"name", config},
                        {"model", "llama-3.1-8b"},
                        {"cluster", config},
                        {"training", {{"seq_length", 4096}, {"global_batch_size", 1}}}};
  for (const std::string& s : sets) apply_override(job, s, catalog);
  return parse_job(job, catalog, std::filesystem::current_path(), WrittenPlan::Replaced);
}

}  // namespace megasim
