// `megasim validate [--suite NAME] [--engine des|analytic] [--jobs N] [--set PATH=VALUE]... [--json]`:
// predicted against published values for the bundled suites (configs/validation/). --set is a
// what-if reading applied to every simulated row after the row's own overrides (e.g. another
// GPU type for all of MegaScale's runs); the published values stay as they are.
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "job_arguments.hpp"
#include "megasim/calib/validate.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/exec/startup.hpp"
#include "megasim/sweep/parallel_for.hpp"

namespace megasim {

namespace {
struct ValidateArgs {
  std::string suite;
  std::string engine = "des";
  bool json = false;
  int jobs = 0;
  std::vector<std::string> sets;  // applied to every simulated row, after its own
};
}  // namespace

void register_validate_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate", "Compare predictions with published runs: MegaScale's tables, Megatron-LM papers, "
                  "NVIDIA's and MosaicML's recipes (the suites in configs/validation/)");
  cmd->add_option("--suite", args->suite,
                  "run one suite (default: all), by the id in its file, e.g. table2, "
                  "megatron_bridge_h100_moe, mosaicml_mpt_h100; an unknown id lists them all");
  cmd->add_option("--engine", args->engine, "des (default) | analytic");
  cmd->add_flag("--json", args->json, "print {\"cases\": [...], \"summary\": {...}}");
  add_jobs_option(cmd, args->jobs, "rows simulated in parallel (default: hardware concurrency)");
  cmd->add_option("--set", args->sets,
                  "what-if: override a config field in every simulated row, after the row's own "
                  "overrides: PATH=VALUE (repeatable)");
  cmd->callback([args, &ctx] {
    check_jobs_option(args->jobs);
    SimulateOptions opts;
    opts.engine = parse_engine_kind(args->engine);
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    JobRunner runner = [&](const std::string& base, const std::vector<std::string>& row_sets) {
      std::vector<std::string> sets = row_sets;
      sets.insert(sets.end(), args->sets.begin(), args->sets.end());
      return simulate_step(ctx.load_job(base, sets), catalog, opts);
    };
    // MegaScale measured start-up for its 175B plan (TP 8, PP 8) at each GPU count.
    StartupModel startup = [&catalog](std::int64_t gpus, const std::string& store, bool ordered) {
      return communicator_startup_for_plan_s(gpus, 8, 8, 1, parse_comm_init_store(store, "store"), ordered, catalog);
    };
    auto progress = [&ctx](const std::string& line) { ctx.err << "validate: " << line << "\n"; };
    const int jobs = resolve_jobs(args->jobs);
    RowScheduler schedule = [jobs](std::size_t n, const std::function<void(std::size_t)>& fn) {
      parallel_for(n, jobs, fn);
    };
    const auto result = run_validation((catalog.root() / "validation").string(), args->suite,
                                       runner, startup, progress, schedule);
    // An acceptance check that printed FAIL fails the command (DESIGN.md A1: exit 3), so that CI
    // can gate on validate as on regress.
    if (!result.summary.all_pass) ctx.exit_code = 3;
    if (args->json) {
      ctx.out << to_json(result, args->sets).dump(2) << "\n";
    } else {
      if (!args->sets.empty()) {
        ctx.out << "what-if overrides on every simulated row:";
        for (const auto& s : args->sets) ctx.out << " " << s;
        ctx.out << "\n";
      }
      print_validation(result, ctx.out);
    }
  });
}

}  // namespace megasim
