#include "run_cli.hpp"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cmd_collective.hpp"
#include "commands.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"
#include "megasim/core/version.hpp"
#include "megasim/exec/simulate.hpp"

namespace megasim {

namespace {

void configure_logging(std::ostream& err, const std::string& level) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(err, /*force_flush=*/true);
  auto logger = std::make_shared<spdlog::logger>("megasim", sink);
  logger->set_pattern("[%l] %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace

const char* const kMinimalConfigHelp =
    "A minimal CONFIG (model and cluster from the catalogs; `megasim list models|clusters|systems`):\n"
    "  {\"model\": \"llama-3.1-8b\",\n"
    "   \"cluster\": {\"base\": \"dgx-h100-ndr-clos\", \"num_gpus\": 64},\n"
    "   \"training\": {\"seq_length\": 8192, \"global_batch_size\": 512}}\n"
    "parallel defaults to TP = PP = CP = 1 (pure data parallelism, ZeRO-1); system defaults to the\n"
    "megatron-core preset. Try `megasim plan CONFIG` for the best plan.";

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"megasim: predicts step time, MFU, memory and time-to-train of LLM training "
               "on GPU clusters before anyone rents the cluster.",
               "megasim"};
  app.require_subcommand(0, 1);
  app.footer(kMinimalConfigHelp);
  app.set_version_flag("--version", std::string("megasim ") + kVersion);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off (logs go to stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.parse_complete_callback([&] { configure_logging(err, log_level); });

  const char* argv0 = argc > 0 ? argv[0] : "megasim";
  CliContext ctx{default_catalog_dir(argv0), out, err, {}, 0, {}};
  auto loader = [&ctx](WrittenPlan plan) {
    return [&ctx, plan](const std::string& config, const std::vector<std::string>& sets) {
      const Catalog catalog = Catalog::open(ctx.catalog_dir);
      return load_job(resolve_job_config(config, catalog), sets, catalog, plan);
    };
  };
  ctx.load_job = loader(WrittenPlan::Checked);
  ctx.load_job_replacing_plan = loader(WrittenPlan::Replaced);

  register_simulate_command(app, ctx);
  register_explain_command(app, ctx);
  register_list_command(app, ctx);
  register_validate_command(app, ctx);
  register_regress_command(app, ctx);
  register_plan_command(app, ctx);
  register_sweep_command(app, ctx);
  register_ablate_command(app, ctx);
  register_merge_command(app, ctx);
  register_topology_command(app, ctx);
  register_collective_command(app, ctx);
  register_report_command(app, ctx, [&ctx](const JobSpec& job) {
    SimulateOptions opts;
    opts.engine = EngineKind::Analytic;
    return simulate_step(job, Catalog::open(ctx.catalog_dir), opts);
  });

  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      out << app.help();
      return 0;
    }
    return ctx.exit_code;
  } catch (const CLI::ParseError& e) {
    // CLI11 reports help requests for subcommands through ParseError with exit code 0.
    if (e.get_exit_code() == 0) {
      app.exit(e, out, err);
      return 0;
    }
    err << "megasim: " << e.what() << "\n";
    return 2;
  } catch (const InputError& e) {
    err << "megasim: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "megasim: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace megasim
