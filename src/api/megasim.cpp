#include "megasim/megasim.hpp"

#include <cstdlib>

#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/report/json_report.hpp"

namespace megasim {

namespace {

std::filesystem::path catalog_dir_for(const std::filesystem::path& given) {
  if (const char* env = std::getenv("MEGASIM_CATALOG_DIR"); env != nullptr && *env != '\0') return env;
  if (!given.empty()) return given;
  return default_catalog_dir(nullptr);
}

}  // namespace

Job load_job(const std::string& config, const std::vector<std::string>& overrides,
             const std::filesystem::path& catalog_dir) {
  Job job;
  job.catalog_dir = catalog_dir_for(catalog_dir);
  const Catalog catalog = Catalog::open(job.catalog_dir);
  job.spec = load_job(resolve_job_config(config, catalog), overrides, catalog);
  return job;
}

StepReport simulate(const Job& job, const SimulationOptions& options) {
  SimulateOptions o;
  o.engine = options.engine == Engine::analytic ? EngineKind::Analytic : EngineKind::Des;
  o.full = options.full;
  return simulate_step(job.spec, Catalog::open(job.catalog_dir), o);
}

std::string to_json(const StepReport& report) { return step_report_to_json(report).dump(2); }

}  // namespace megasim
