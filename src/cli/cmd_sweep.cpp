// `megasim sweep CONFIG --vary PATH=V1,V2,...|A:B:xF|A:B:+S [--vary ...] [--set ...]
//                       [--engine analytic|des] [--jobs N] [--csv FILE] [--json] [--shard I/N]`
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "job_arguments.hpp"
#include "commands.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/sweep/sweep_run.hpp"

namespace megasim {

namespace {

struct SweepArgs {
  std::string config;
  std::vector<std::string> vary;
  std::vector<std::string> sets;
  std::string engine = "analytic";
  int jobs = 0;
  std::string csv;
  bool json = false;
  std::string shard;
  bool no_progress = false;
};

}  // namespace

void register_sweep_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "Simulate a grid of config variations, one table row per point");
  add_job_arguments(cmd, args->config, args->sets, "override a config field for every point: PATH=VALUE (repeatable)");
  cmd->add_option("--vary", args->vary,
                  "PATH=V1,V2,... | PATH=A:B:xF (geometric) | PATH=A:B:+S (arithmetic); repeatable, "
                  "the grid is their cartesian product")
      ->required();
  cmd->add_option("--engine", args->engine, "analytic (default) | des");
  add_jobs_option(cmd, args->jobs);
  cmd->add_option("--csv", args->csv, "write the table as CSV to FILE");
  cmd->add_flag("--json", args->json, "print the table as one JSON object on stdout");
  cmd->add_option("--shard", args->shard, "I/N: run only points p with p % N == I (0-based); join with merge");
  cmd->add_flag("--no-progress", args->no_progress, "no progress line on stderr");
  cmd->callback([args, &ctx] {
    SweepOptions opts;
    for (const auto& v : args->vary) opts.vary.push_back(parse_vary(v));
    grid_size(opts.vary);  // duplicate paths and oversized grids exit 2 before any work
    opts.engine = parse_engine_kind(args->engine);
    check_jobs_option(args->jobs);
    opts.jobs = args->jobs;
    if (!args->shard.empty()) opts.shard = parse_shard(args->shard);
    if (!args->no_progress) {
      opts.progress = progress_line(ctx);
    }
    const SweepJobLoader load = job_loader(ctx, args->config, args->sets);
    // An unreadable CONFIG is a usage error, not a per-point one; other problems of the base
    // config may well be fixed by the varied values, so they are left to the points.
    try {
      load({});
    } catch (const InputError& e) {
      if (e.path() == "CONFIG") throw;
    }
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    const SweepTable table = run_sweep(load, catalog, opts);
    if (!args->no_progress) ctx.err << "\n";
    if (!args->csv.empty()) {
      std::ofstream f(args->csv, std::ios::binary);
      if (!f) throw InputError("--csv", "cannot write \"" + args->csv + "\"");
      write_csv(table, f);
    }
    if (args->json) {
      write_json(table, ctx.out);
    } else if (args->csv.empty()) {
      write_csv(table, ctx.out);
    }
  });
}

}  // namespace megasim
