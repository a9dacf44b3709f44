#include "cluster_job.hpp"

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
  return load_cluster_as_job(config, sets, catalog);
}

}  // namespace megasim
