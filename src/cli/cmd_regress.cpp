// `megasim regress --baseline FILE [--update] [--tolerance-points X] [--json]`: the CI gate
// for predicted MFU. Exit status 3 when any prediction drifted beyond the tolerance.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "megasim/calib/regress.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"
#include "megasim/exec/simulate.hpp"

namespace megasim {

namespace {
struct RegressArgs {
  std::string baseline;
  bool update = false;
  double tolerance = -1;
  bool json = false;
};
inline constexpr int kDriftExitCode = 3;
}  // namespace

void register_regress_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<RegressArgs>();
  auto* cmd = app.add_subcommand(
      "regress", "Re-predict MFU for the jobs in a baseline file and fail (exit 3) on drift");
  cmd->add_option("--baseline", args->baseline, "baseline JSON file")->required();
  cmd->add_flag("--update", args->update, "rewrite the baseline with this run's predictions");
  cmd->add_option("--tolerance-points", args->tolerance,
                  "allowed |change| in MFU percentage points (default: the file's, else 0.5)");
  cmd->add_flag("--json", args->json, "print the comparison as one JSON object");
  cmd->callback([args, &ctx] {
    if (args->tolerance < 0 && args->tolerance != -1) {
      throw InputError("--tolerance-points", "must be >= 0");
    }
    const std::filesystem::path file(args->baseline);
    const auto baseline = read_json_file(file, "--baseline");
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    const auto dir = file.parent_path();
    RegressRunner runner = [&](const std::string& config, const std::vector<std::string>& sets,
                               const std::string& engine) {
      SimulateOptions opts;
      opts.engine = parse_engine_kind(engine);
      const auto relative = dir / config;
      const std::string resolved = std::filesystem::exists(relative) ? relative.string() : config;
      return simulate_step(ctx.load_job(resolved, sets), catalog, opts);
    };
    const auto result = run_regress(baseline, runner, args->tolerance);
    if (args->json) {
      ctx.out << to_json(result).dump(2) << "\n";
    } else {
      print_regress(result, ctx.out);
    }
    if (args->update) {
      std::ofstream out(file);
      if (!out) throw InputError("--baseline", "cannot write " + file.string());
      out << updated_baseline(baseline, result).dump(2) << "\n";
      ctx.err << "regress: baseline updated: " << file.string() << "\n";
      return;
    }
    if (result.any_drift) ctx.exit_code = kDriftExitCode;
  });
}

}  // namespace megasim
