#include "cluster_job.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"

namespace megasim {

JobSpec load_job_or_cluster(const CliContext& ctx, const std::string& config, const std::vector<std::string>& sets) {
  const Catalog catalog = Catalog::open(ctx.catalog_dir);
  const bool job_file = std::filesystem::exists(config) || std::filesystem::exists(catalog.root() / (config + ".json"));
  if (job_file || !catalog.contains("clusters", config)) return ctx.load_job(config, sets);
  // The model only sizes nothing here: the fabric depends on the cluster alone.
  nlohmann::json job = {{"name", config},
                        {"model", "llama-3.1-8b"},
                        {"cluster", config},
                        {"training", {{"seq_length", 4096}, {"global_batch_size", 1}}}};
  for (const std::string& s : sets) apply_override(job, s, catalog);
  return parse_job(job, catalog, std::filesystem::current_path(), WrittenPlan::Replaced);
}

}  // namespace megasim
