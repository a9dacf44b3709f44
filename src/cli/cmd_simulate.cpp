// `megasim simulate CONFIG [--json] [--set PATH=VALUE ...] [--engine des|analytic]
//                          [--trace FILE] [--seed N] [--full]`
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "job_arguments.hpp"
#include "commands.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/report/json_report.hpp"

namespace megasim {

namespace {

struct SimulateArgs {
  std::string config;
  std::vector<std::string> sets;
  bool json = false;
  std::string engine = "des";
  std::string trace;
  std::uint64_t seed = 0;
  bool full = false;
};

}  // namespace

void register_simulate_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<SimulateArgs>();
  auto* cmd = app.add_subcommand("simulate", "Simulate one training step and report step time, "
                                             "MFU, memory and time to train");
  add_job_arguments(cmd, args->config, args->sets);
  cmd->footer(kMinimalConfigHelp);
  cmd->add_flag("--json", args->json, "print exactly one JSON object (schema_version 1)");
  cmd->add_option("--engine", args->engine, "des (event engine, default) | analytic");
  cmd->add_option("--trace", args->trace, "write a Chrome Trace Event timeline (des engine)");
  auto* seed = cmd->add_option("--seed", args->seed,
                               "seed for everything random: the job seed and ECMP hashing (overrides cluster.network.ecmp_seed)");
  seed->check(CLI::Validator(
      [](const std::string& v) {
        return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos
                   ? std::string()
                   : std::string("must be a non-negative integer, got \"" + v + "\"");
      },
      "UINT", "non-negative integer"));
  cmd->add_flag("--full", args->full, "simulate every rank instead of folding symmetric ones");
  cmd->callback([args, seed, &ctx] {
    auto sets = args->sets;
    // --seed seeds everything random in the run (DESIGN.md A1): the job's seed and the ECMP
    // hash salts, which the fabric's routing otherwise takes from cluster.network.ecmp_seed.
    if (seed->count() > 0) {
      sets.push_back("seed=" + std::to_string(args->seed));
      sets.push_back("cluster.network.ecmp_seed=" + std::to_string(args->seed));
    }
    const JobSpec job = ctx.load_job(args->config, sets);
    SimulateOptions opts;
    opts.engine = parse_engine_kind(args->engine);
    opts.trace_path = args->trace;
    opts.full = args->full;
    opts.progress = true;
    if (!args->trace.empty() && opts.engine != EngineKind::Des) {
      throw InputError("--trace", "a timeline needs the event engine (--engine des)");
    }
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    const StepReport report = simulate_step(job, catalog, opts);
    if (args->json) {
      ctx.out << step_report_to_json(report).dump(2) << "\n";
    } else {
      print_text_report(report, ctx.out);
    }
  });
}

}  // namespace megasim
