// `megasim ablate CONFIG [--set ...] [--engine des|analytic] [--jobs N] [--json]`: what each
// MegaScale technique buys this job, one switch flipped per row (src/sweep/ablation.cpp).
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "job_arguments.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/sweep/ablation.hpp"

namespace megasim {

namespace {

struct AblateArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string engine = "des";
  int jobs = 0;
  bool json = false;
  bool no_progress = false;
};

}  // namespace

void register_ablate_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<AblateArgs>();
  auto* cmd = app.add_subcommand("ablate", "What each MegaScale technique buys this job: flip one switch per row "
                                           "(on -> off, off -> on) and re-simulate");
  add_job_arguments(cmd, args->config, args->sets);
  cmd->add_option("--engine", args->engine, "des (event engine, default) | analytic");
  add_jobs_option(cmd, args->jobs);
  cmd->add_flag("--json", args->json, "print one JSON object on stdout");
  cmd->add_flag("--no-progress", args->no_progress, "no progress line on stderr");
  cmd->callback([args, &ctx] {
    const EngineKind engine = parse_engine_kind(args->engine);
    check_jobs_option(args->jobs);
    const SweepJobLoader load = job_loader(ctx, args->config, args->sets);
    const JobSpec base = load({});
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    AblationOptions opts;
    opts.jobs = args->jobs;
    if (!args->no_progress) {
      opts.progress = progress_line(ctx);
    }
    const Ablation a = run_ablation(
        base, load,
        [&catalog, engine](const JobSpec& job) {
          SimulateOptions so;
          so.engine = engine;
          return simulate_step(job, catalog, so);
        },
        opts);
    if (!args->no_progress) ctx.err << "\n";
    if (args->json) {
      ctx.out << ablation_to_json(a).dump(2) << "\n";
    } else {
      write_ablation_text(a, ctx.out);
    }
  });
}

}  // namespace megasim
