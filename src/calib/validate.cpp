#include "megasim/core/version.hpp"
#include "megasim/calib/validate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "megasim/core/error.hpp"
#include "suite_file.hpp"

namespace megasim {

namespace {

using calib_detail::CheckKind;
using calib_detail::SuiteFile;

// A suite that reruns another suite's rows with a few settings changed (the FP8 twins of the
// DGXC BF16 runs) names that suite in "runs_like" and each row names its twin in "like": the
// row runs on the twin's base with the twin's settings, then the suite's and its own "set".
// `twin` is the "runs_like" file, read once per suite. Returns the row's settings; `base` gets
// the twin suite's base.
std::vector<std::string> like_settings(const nlohmann::json& suite, const nlohmann::json& twin,
                                       const nlohmann::json& row, std::string& base) {
  const std::string like = row.at("like").get<std::string>();
  for (const auto& t : twin.at("rows")) {
    if (t.at("name").get<std::string>() != like) continue;
    base = twin.at("base").get<std::string>();
    auto sets = t.at("set").get<std::vector<std::string>>();
    for (const auto* extra : {&suite, &row}) {
      if (extra->contains("set")) {
        for (const auto& v : extra->at("set")) sets.push_back(v.get<std::string>());
      }
    }
    return sets;
  }
  throw InputError(suite.at("runs_like").get<std::string>(), "has no row named \"" + like + "\"");
}

// The metrics a suite may publish, in the order a row prints them (time, throughput,
// utilisation, layer times) rather than the alphabetical order of the suite's JSON object.
struct Metric {
  const char* name;
  double (*of)(const StepReport&);
};
constexpr std::array<Metric, 9> kMetrics{{
    {"step_time_s", [](const StepReport& r) { return r.step_time_s; }},
    {"tokens_per_s", [](const StepReport& r) { return r.tokens_per_s; }},
    {"mfu", [](const StepReport& r) { return r.mfu; }},
    {"hfu", [](const StepReport& r) { return r.hfu; }},
    {"layer_forward_ms", [](const StepReport& r) { return 1e3 * r.layer_time.forward_s; }},
    {"layer_backward_ms", [](const StepReport& r) { return 1e3 * r.layer_time.backward_s; }},
    {"layer_fwd_bwd_ms", [](const StepReport& r) { return 1e3 * (r.layer_time.forward_s + r.layer_time.backward_s); }},
    {"moe_block_forward_ms", [](const StepReport& r) { return r.moe ? 1e3 * r.moe->block_forward_s : 0.0; }},
    {"moe_block_backward_ms", [](const StepReport& r) { return r.moe ? 1e3 * r.moe->block_backward_s : 0.0; }},
}};

void check_metrics_known(const nlohmann::json& published) {
  for (const auto& [name, value] : published.items()) {
    const bool known = std::any_of(kMetrics.begin(), kMetrics.end(), [&](const Metric& m) { return name == m.name; });
    if (!known) throw InputError("published." + name, "unknown metric in validation suite");
  }
}

ValidationCase make_case(const std::string& suite, const std::string& name,
                         const std::string& metric, double published, double predicted,
                         bool upper_bound) {
  ValidationCase c{suite, name, metric, published, predicted, 0.0, upper_bound};
  c.error_pct = published != 0 ? 100.0 * (predicted - published) / published : 0.0;
  return c;
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

void check(ValidationSummary& s, const std::string& key, bool pass, const std::string& text) {
  s.lines.push_back(std::string(pass ? "PASS  " : "FAIL  ") + text);
  s.json[key] = {{"pass", pass}, {"detail", text}};
  s.all_pass = s.all_pass && pass;
}

// Largest |predicted - published| of a suite's cases in points of its metric (MFU or HFU); -1 when it has none.
double worst_error_points(const ValidationResult& r, const std::string& suite) {
  double worst = -1;
  for (const auto& c : r.cases)
    if (c.suite == suite) worst = std::max(worst, 100.0 * std::fabs(c.predicted - c.published));
  return worst;
}

// Largest |error_pct| of a suite's cases; -1 when it has none.
double worst_error_pct(const ValidationResult& r, const std::string& suite) {
  double worst = -1;
  for (const auto& c : r.cases)
    if (c.suite == suite) worst = std::max(worst, std::fabs(c.error_pct));
  return worst;
}

// Mean |error_pct| of a suite's cases; -1 when it has none.
double mean_error_pct(const ValidationResult& r, const std::string& suite) {
  double sum = 0;
  int n = 0;
  for (const auto& c : r.cases) {
    if (c.suite != suite) continue;
    sum += std::fabs(c.error_pct);
    ++n;
  }
  return n == 0 ? -1.0 : sum / n;
}

// The acceptance checks: MegaScale Table 2 and 3's and the communicator start-up's, computed
// here, and every suite's own bars (its file's "checks"), in suite order.
void summarise(ValidationResult& r, const std::vector<SuiteFile>& suites) {
  auto& s = r.summary;
  s.json = nlohmann::json::object();
  std::vector<const ValidationCase*> t2_step;
  std::map<std::string, double> t2_step_pred;
  for (const auto& c : r.cases) {
    if (c.suite == "table2" && c.metric == "step_time_s") {
      t2_step.push_back(&c);
      t2_step_pred[c.name] = c.predicted;
    }
  }
  if (!t2_step.empty()) {
    double sum = 0, worst = 0;
    for (const auto* c : t2_step) {
      sum += std::fabs(c->error_pct);
      worst = std::max(worst, std::fabs(c->error_pct));
    }
    const double mae = sum / static_cast<double>(t2_step.size());
    check(s, "table2_step_time_mae", mae <= 5.0,
          fmt("Table 2 step time: mean |error| %.2f%% (target <= 5%%)", mae));
    check(s, "table2_step_time_max", worst <= 10.0,
          fmt("Table 2 step time: worst |error| %.2f%% (target <= 10%%)", worst));
    const auto a = t2_step_pred.find("Megatron-LM 12288 GPUs batch 6144");
    const auto b = t2_step_pred.find("MegaScale 12288 GPUs batch 6144");
    if (a != t2_step_pred.end() && b != t2_step_pred.end() && b->second > 0) {
      const double speedup = a->second / b->second;
      check(s, "table2_speedup_12288", std::fabs(speedup - 1.34) <= 0.07,
            fmt("MegaScale/Megatron-LM speed-up at 12,288 GPUs %.3fx (target 1.34 +/- 0.07)",
                speedup));
    }
  }
  std::vector<const ValidationCase*> t3;
  for (const auto& c : r.cases)
    if (c.suite == "table3") t3.push_back(&c);
  if (!t3.empty()) {
    bool dirs = true;
    double worst_pts = 0;
    for (std::size_t i = 0; i < t3.size(); ++i) {
      worst_pts = std::max(worst_pts, 100.0 * std::fabs(t3[i]->predicted - t3[i]->published));
      if (i > 0) {
        const double pub_step = t3[i]->published - t3[i - 1]->published;
        const double pred_step = t3[i]->predicted - t3[i - 1]->predicted;
        if (pub_step * pred_step <= 0) dirs = false;
      }
    }
    check(s, "table3_directions", dirs, "Table 3: every ablation step moves MFU in the published direction");
    check(s, "table3_cumulative", worst_pts <= 1.5,
          fmt("Table 3: worst cumulative MFU error %.2f points (target <= 1.5)", worst_pts));
  }
  for (const SuiteFile& suite : suites) {
    for (const auto& c : suite.checks) {
      const double v = c.kind == CheckKind::WorstErrorPoints ? worst_error_points(r, suite.id)
                       : c.kind == CheckKind::WorstErrorPct  ? worst_error_pct(r, suite.id)
                                                             : mean_error_pct(r, suite.id);
      if (v < 0) continue;  // the suite did not run
      std::string detail = c.detail;
      detail.replace(detail.find("{error}"), 7, fmt("%.2f", v));
      check(s, c.key, v <= c.bar, detail);
    }
  }
  bool init_ok = true, any_init = false;
  for (const auto& c : r.cases) {
    if (c.suite != "comm_init") continue;
    any_init = true;
    init_ok = init_ok && (c.upper_bound ? c.predicted <= c.published : std::fabs(c.error_pct) <= 10.0);
  }
  if (any_init) {
    check(s, "comm_init", init_ok,
          "Communicator init: 1047 s / 361 s within 10%, < 5 s at 2,048 and < 30 s at 12,288 GPUs");
  }
}

}  // namespace

ValidationResult run_validation(const std::string& validation_dir, const std::string& suite,
                                const JobRunner& run, const StartupModel& startup,
                                const std::function<void(const std::string&)>& progress,
                                const RowScheduler& schedule) {
  const std::vector<SuiteFile> suites = calib_detail::load_suites(validation_dir);
  bool known = suite.empty();
  std::string valid;
  for (const SuiteFile& f : suites) {
    known = known || suite == f.id;
    valid += (valid.empty() ? "" : ", ") + f.id;
  }
  if (!known) throw InputError("--suite", "unknown suite \"" + suite + "\"; valid: " + valid);
  // Every row, in file order. Simulated rows run through the scheduler (possibly in
  // parallel); the cases are assembled in file order afterwards, so the result never depends
  // on the schedule.
  struct Row {
    std::string suite, name, base;
    std::vector<std::string> sets;
    nlohmann::json published;
    std::vector<ValidationCase> startup_cases;  // comm_init rows: computed while reading
  };
  std::vector<Row> rows;
  for (const SuiteFile& f : suites) {
    const std::string& name = f.id;
    if (!suite.empty() && suite != name) continue;
    const nlohmann::json& data = f.data;
    const nlohmann::json twin = data.contains("runs_like")
                                    ? calib_detail::read_json_file(std::filesystem::path(validation_dir) /
                                                                   data.at("runs_like").get<std::string>())
                                    : nlohmann::json();
    for (const auto& row : data.at("rows")) {
      Row r{name, row.at("name").get<std::string>(), "", {}, row.at("published"), {}};
      if (name == "comm_init") {
        const double t = startup(row.at("gpus").get<std::int64_t>(), row.at("store").get<std::string>(),
                                 row.at("ordered").get<bool>());
        for (const auto& [metric, value] : r.published.items()) {
          const bool upper = metric.size() > 4 && metric.substr(metric.size() - 4) == "_max";
          r.startup_cases.push_back(make_case(name, r.name, upper ? "startup_s" : metric,
                                              value.get<double>(), t, upper));
        }
      } else if (data.contains("runs_like")) {
        r.sets = like_settings(data, twin, row, r.base);
      } else {
        r.base = data.at("base").get<std::string>();
        r.sets = row.at("set").get<std::vector<std::string>>();
      }
      rows.push_back(std::move(r));
    }
  }
  std::vector<std::size_t> simulated;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].suite != "comm_init") simulated.push_back(i);
  std::vector<StepReport> reports(rows.size());
  std::mutex progress_mutex;
  std::size_t done = 0;
  const std::function<void(std::size_t)> simulate_row = [&](std::size_t k) {
    const Row& r = rows[simulated[k]];
    reports[simulated[k]] = run(r.base, r.sets);
    if (progress) {
      const std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      progress(std::to_string(done) + "/" + std::to_string(simulated.size()) + " " + r.suite + ": " + r.name);
    }
  };
  if (schedule) {
    schedule(simulated.size(), simulate_row);
  } else {
    for (std::size_t k = 0; k < simulated.size(); ++k) simulate_row(k);
  }

  ValidationResult result;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    if (r.suite == "comm_init") {
      result.cases.insert(result.cases.end(), r.startup_cases.begin(), r.startup_cases.end());
      continue;
    }
    if (!reports[i].memory_fits) {
      constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
      result.memory_warnings.push_back(
          r.suite + ": " + r.name + ": does not fit in GPU memory (" +
          fmt("%.1f of %.1f GiB)", reports[i].memory.total_bytes() / kGiB, reports[i].memory_capacity_bytes / kGiB));
    }
    check_metrics_known(r.published);
    for (const Metric& metric : kMetrics) {
      if (!r.published.contains(metric.name)) continue;
      result.cases.push_back(make_case(r.suite, r.name, metric.name, r.published.at(metric.name).get<double>(),
                                       metric.of(reports[i]), false));
    }
  }
  summarise(result, suites);
  return result;
}

nlohmann::json to_json(const ValidationResult& r, const std::vector<std::string>& overrides) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : r.cases) {
    cases.push_back({{"suite", c.suite},
                     {"name", c.name},
                     {"metric", c.metric},
                     {"published", c.published},
                     {"predicted", c.predicted},
                     {"error_pct", c.error_pct},
                     {"published_is_upper_bound", c.upper_bound}});
  }
  nlohmann::json summary = r.summary.json;
  summary["all_pass"] = r.summary.all_pass;
  summary["cases"] = r.cases.size();
  if (!r.memory_warnings.empty()) summary["memory_warnings"] = r.memory_warnings;
  if (!overrides.empty()) summary["overrides"] = overrides;
  return {{"schema_version", kSchemaVersion}, {"cases", cases}, {"summary", summary}};
}

void print_validation(const ValidationResult& r, std::ostream& out) {
  std::string last_suite;
  char buf[512];
  for (const auto& c : r.cases) {
    if (c.suite != last_suite) {
      out << "\n== " << c.suite << "\n";
      std::snprintf(buf, sizeof buf, "  %-52s %-12s %12s %12s %9s\n", "case", "metric",
                    "published", "predicted", "error");
      out << buf;
      last_suite = c.suite;
    }
    std::snprintf(buf, sizeof buf, "  %-52s %-12s %s%11.4g %12.4g %8.2f%%\n", c.name.c_str(),
                  c.metric.c_str(), c.upper_bound ? "<" : " ", c.published, c.predicted,
                  c.error_pct);
    out << buf;
  }
  out << "\nsummary:\n";
  for (const auto& l : r.summary.lines) out << "  " << l << "\n";
  if (!r.memory_warnings.empty()) {
    out << "\nrows that would not fit in GPU memory (compared anyway):\n";
    for (const auto& w : r.memory_warnings) out << "  " << w << "\n";
  }
}

}  // namespace megasim
