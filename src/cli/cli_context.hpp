#pragma once
// What every subcommand needs from the CLI shell: where the catalogs are, the output
// streams, and the shared config loader (config file + --set overrides -> JobSpec).
// Subcommands are registered by `register_<name>_command(CLI::App&, CliContext&)` functions
// (one file each, src/cli/cmd_<name>.cpp) and run inside run_cli(), which maps exceptions to
// exit codes: InputError -> 2, anything else -> 1.
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "megasim/config/specs.hpp"

namespace CLI {
class App;
}

namespace megasim {

class Catalog;

struct CliContext {
  std::filesystem::path catalog_dir;
  std::ostream& out;
  std::ostream& err;
  // Loads CONFIG (a path or a bundled job name) and applies --set overrides in order.
  std::function<JobSpec(const std::string& config, const std::vector<std::string>& sets)> load_job;
  // Set by a subcommand callback to its exit status (0 unless the command reports failure,
  // e.g. `regress` drifting beyond tolerance returns 3).
  int exit_code = 0;
  // As load_job, but the written parallel plan is only a starting point (WrittenPlan::Replaced):
  // the planner's loader, so that a plan it will replace cannot stop it.
  std::function<JobSpec(const std::string& config, const std::vector<std::string>& sets)> load_job_replacing_plan;
};

// The one-line progress display of the long-running commands (plan, sweep, ablate): each text
// overwrites the previous one on stderr; the command ends the line when it is done.
inline std::function<void(const std::string&)> progress_line(CliContext& ctx, std::string prefix = {}) {
  return [&ctx, prefix = std::move(prefix)](const std::string& text) {
    ctx.err << "\r" << prefix << text << "   " << std::flush;
  };
}

// Loads CONFIG with the user's --set's and then `extra` overrides (a sweep point's values, an
// ablation's flip): the loader `sweep` and `ablate` hand to their library functions.
inline std::function<JobSpec(const std::vector<std::string>& extra)> job_loader(CliContext& ctx, std::string config,
                                                                                 std::vector<std::string> sets) {
  return [&ctx, config = std::move(config), sets = std::move(sets)](const std::vector<std::string>& extra) {
    auto all = sets;
    all.insert(all.end(), extra.begin(), extra.end());
    return ctx.load_job(config, all);
  };
}

}  // namespace megasim
