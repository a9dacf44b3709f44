// `megasim report CONFIG [--gpus-range A:B] [--tokens T] [--gpu-hour-price P] [--seed N]
//                        [--out DIR] [--trials N] [--reliability FILE] [--set PATH=VALUE ...]`
// Capacity-planning report: sweeps the GPU count (TP/PP/VPP/CP kept, DP adjusted), simulates a
// step per point with the engine the caller supplies, adds start-up and goodput under failures,
// and writes report.html, report.md and one CSV per chart into DIR.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "job_arguments.hpp"
#include "cli_context.hpp"
#include "megasim/capreport/capacity_report.hpp"
#include "megasim/core/error.hpp"
#include "megasim/catalogs/reliability_reader.hpp"
#include "megasim/report/step_report.hpp"

namespace megasim {

namespace {

struct ReportArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string gpus_range;
  std::string tokens;
  double gpu_hour_price = 2.0;
  std::int64_t seed = -1;
  std::string out = "megasim-report";
  int trials = 500;
  std::string reliability;
};

// A plain count ("3e11") or one with a suffix: K, M, B (1e9), T (1e12).
double parse_token_count(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError("--tokens", "must be a number such as 3e11 or 300B");
  }
  const std::string suffix = text.substr(used);
  double scale = 1;
  if (suffix == "K") scale = 1e3;
  else if (suffix == "M") scale = 1e6;
  else if (suffix == "B" || suffix == "G") scale = 1e9;
  else if (suffix == "T") scale = 1e12;
  else if (!suffix.empty()) throw InputError("--tokens", "unknown suffix \"" + suffix + "\" (K, M, B, T)");
  if (!(v * scale > 0)) throw InputError("--tokens", "must be > 0");
  return v * scale;
}

std::pair<std::int64_t, std::int64_t> parse_range(const std::string& text) {
  const auto colon = text.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    std::size_t u1 = 0, u2 = 0;
    const std::string a = text.substr(0, colon), b = text.substr(colon + 1);
    const long long lo = std::stoll(a, &u1), hi = std::stoll(b, &u2);
    if (u1 != a.size() || u2 != b.size()) throw std::invalid_argument("trailing text");
    if (lo <= 0 || hi < lo) throw std::invalid_argument("order");
    return {lo, hi};
  } catch (const std::exception&) {
    throw InputError("--gpus-range", "must be A:B with integers 0 < A <= B, e.g. 1024:16384");
  }
}

}  // namespace

void register_report_command(CLI::App& app, CliContext& ctx,
                             std::function<StepReport(const JobSpec&)> simulate) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report", "Capacity-planning report: MFU, step-time breakdown, memory, time to train and cost "
                "vs GPU count, with failures (report.html, report.md, CSVs)");
  add_job_arguments(cmd, args->config, args->sets);
  cmd->add_option("--gpus-range", args->gpus_range, "GPU counts to sweep, A:B (default: N/4 : 4N)");
  cmd->add_option("--tokens", args->tokens, "training tokens, e.g. 3e11 or 300B (default: "
                                            "training.train_tokens, else 300B)");
  cmd->add_option("--gpu-hour-price", args->gpu_hour_price, "price of one GPU-hour (default 2.0)");
  cmd->add_option("--seed", args->seed, "seed of the failure Monte Carlo (default: config seed)");
  cmd->add_option("--out", args->out, "output directory (default: megasim-report)");
  cmd->add_option("--trials", args->trials, "Monte Carlo runs per GPU count (default 500)");
  cmd->add_option("--reliability", args->reliability,
                  "JSON merge patch over configs/reliability/default.json (failure rates, recovery)");
  cmd->callback([args, &ctx, simulate] {
    const JobSpec job = ctx.load_job(args->config, args->sets);
    CapacityOptions opts;
    if (!args->gpus_range.empty()) {
      const auto [lo, hi] = parse_range(args->gpus_range);
      opts.gpus_min = lo;
      opts.gpus_max = hi;
    }
    if (!args->tokens.empty()) opts.train_tokens = parse_token_count(args->tokens);
    if (!(args->gpu_hour_price >= 0)) throw InputError("--gpu-hour-price", "must be >= 0");
    opts.gpu_hour_price = args->gpu_hour_price;
    opts.seed = args->seed >= 0 ? static_cast<std::uint64_t>(args->seed) : job.seed;
    if (args->trials < 0 || args->trials > 100000) throw InputError("--trials", "must be in [0, 100000]");
    opts.mc_trials = args->trials;
    const auto reliability_dir = ctx.catalog_dir / "reliability";
    const ReliabilityCatalog reliability =
        args->reliability.empty() ? load_reliability_catalog(reliability_dir)
                                  : load_reliability_catalog(reliability_dir, args->reliability, "--reliability");
    const CapacityReport rep = build_capacity_report(job, simulate, reliability, opts);
    const auto files = write_capacity_report(rep, args->out);
    std::size_t skipped = 0;
    for (const auto& p : rep.points) skipped += p.ok ? 0 : 1;
    ctx.err << "megasim report: " << rep.points.size() << " GPU counts, " << skipped << " skipped\n";
    for (const auto& f : files) ctx.out << f.string() << "\n";
  });
}

}  // namespace megasim
