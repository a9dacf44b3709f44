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

namespace megasim {

namespace {

nlohmann::json read_suite(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file.string(), "cannot read validation suite");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file.string(), std::string("not valid JSON: ") + e.what());
  }
}

// A suite that reruns another suite's rows with a few settings changed (the FP8 twins of the
// DGXC BF16 runs) names that suite in "runs_like" and each row names its twin in "like": the
// row runs on the twin's base with the twin's settings, then the suite's and its own "set".
// Returns the row's settings; `base` gets the twin suite's base.
std::vector<std::string> like_settings(const nlohmann::json& suite, const nlohmann::json& row,
                                       const std::filesystem::path& dir, std::string& base) {
  const auto twin = read_suite(dir / suite.at("runs_like").get<std::string>());
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

// Suites judged by their worst row against one bar: the 530B weak scaling (issue #5) and the
// transfer suites (published runs outside MegaScale: the A100 papers held to the 530B suite's
// 3-point bar, layer and step times held to Table 2's 10% per-row bar).
struct WorstRowCheck {
  const char* suite;
  const char* key;   // summary key
  bool in_points;    // error in points of the suite's MFU/HFU; otherwise |error| in percent
  double bar;
  const char* label; // printf format of the summary line; %.2f is the worst error
};
constexpr WorstRowCheck kWorstRowChecks[] = {
    {"weak530b", "weak530b_mfu", true, 3.0,
     "530B weak scaling: worst MFU error %.2f points (target <= 3)"},
    {"korthikanti2022", "korthikanti2022_mfu", true, 3.0,
     "Transfer, Megatron-LM 530B on 2,240 A100s (Korthikanti 2022): worst MFU error %.2f points (bar: 3)"},
    {"narayanan2021", "narayanan2021_hfu", true, 3.0,
     "Transfer, Megatron-LM 1.7B-1T on 32-3,072 A100s (Narayanan 2021): worst HFU error %.2f points (bar: 3)"},
    {"korthikanti2022_layer", "korthikanti2022_layer_time", false, 10.0,
     "Transfer, one 22B layer on 8 A100s (Korthikanti 2022 Table 4): worst time error %.2f%% (bar: 10%%)"},
    {"nvidia_dgxc_h100", "nvidia_dgxc_h100_step_time", false, 10.0,
     "Transfer, NeMo BF16 on 8-2,304 DGX H100s, 8B-405B (NVIDIA DGXC recipes): worst step-time error %.2f%% (bar: 10%%)"},
    {"nvidia_dgxc_h100_fp8", "nvidia_dgxc_h100_fp8_step_time", false, 10.0,
     "Transfer, NeMo FP8 on 8-2,304 DGX H100s, 8B-405B (NVIDIA DGXC recipes): worst step-time error %.2f%% (bar: 10%%)"},
    {"megatron_bridge_h100_moe", "megatron_bridge_h100_moe_step_time", false, 15.0,
     "Transfer, Mixture of Experts on 16-1,024 DGX H100s (Megatron-Bridge recipes): worst step-time error %.2f%% (bar: 15%%)"},
    {"megatron_lm_moe_layer", "megatron_lm_moe_layer_time", false, 15.0,
     "Transfer, one MoE layer on 8 H100s, EP 8 (Megatron-LM moe_perf): worst time error %.2f%% (bar: 15%%)"},
    {"megatron_bridge_b200_dense", "megatron_bridge_b200_dense_step_time", false, 10.0,
     "Transfer, Blackwell: dense FP8 on 8-128 DGX B200s (Megatron-Bridge): worst step-time error %.2f%% (bar: 10%%)"},
    {"megatron_bridge_gb200_dense", "megatron_bridge_gb200_dense_step_time", false, 10.0,
     "Transfer, rack-scale Blackwell: dense FP8 on 8-128 GB200 NVL72 GPUs (Megatron-Bridge): worst step-time error %.2f%% (bar: 10%%)"},
    {"mosaicml_mpt_h100", "mosaicml_mpt_h100_step_time", false, 15.0,
     "Transfer, PyTorch FSDP: MPT 760M-70B on 8-64 H100s (llm-foundry): worst step-time error %.2f%% (bar: 15%%)"},
};

// Suites also judged by their mean |error| (issue 28: the MPT suite within mean 8%).
struct MeanErrorCheck {
  const char* suite;
  const char* key;
  double bar;
  const char* label;  // printf format; %.2f is the mean |error| in percent
};
constexpr MeanErrorCheck kMeanErrorChecks[] = {
    {"mosaicml_mpt_h100", "mosaicml_mpt_h100_step_time_mean", 8.0,
     "Transfer, PyTorch FSDP: MPT 760M-70B on 8-64 H100s (llm-foundry): mean step-time error %.2f%% (bar: 8%%)"},
};

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

// Acceptance checks of issue #5, computed from the cases.
void summarise(ValidationResult& r) {
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
  for (const auto& w : kWorstRowChecks) {
    const double worst = w.in_points ? worst_error_points(r, w.suite) : worst_error_pct(r, w.suite);
    if (worst >= 0) check(s, w.key, worst <= w.bar, fmt(w.label, worst));
  }
  for (const auto& m : kMeanErrorChecks) {
    const double mean = mean_error_pct(r, m.suite);
    if (mean >= 0) check(s, m.key, mean <= m.bar, fmt(m.label, mean));
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
  static const char* const kFiles[][2] = {{"table2", "megascale-table2.json"},
                                          {"table3", "megascale-table3.json"},
                                          {"weak530b", "megascale-530b-weak.json"},
                                          {"comm_init", "megascale-comm-init.json"},
                                          {"korthikanti2022", "korthikanti-2022-530b.json"},
                                          {"narayanan2021", "narayanan-2021-table1.json"},
                                          {"korthikanti2022_layer", "korthikanti-2022-layer-22b.json"},
                                          {"nvidia_dgxc_h100", "nvidia-dgxc-h100.json"},
                                          {"nvidia_dgxc_h100_fp8", "nvidia-dgxc-h100-fp8.json"},
                                          {"megatron_bridge_h100_moe", "megatron-bridge-h100-moe.json"},
                                          {"megatron_bridge_b200_dense", "megatron-bridge-b200-dense.json"},
                                          {"megatron_bridge_gb200_dense", "megatron-bridge-gb200-dense.json"},
                                          {"megatron_lm_moe_layer", "megatron-lm-moe-layer.json"},
                                          {"mosaicml_mpt_h100", "mosaicml-mpt-h100.json"}};
  bool known = suite.empty();
  std::string valid;
  for (const auto& f : kFiles) {
    known = known || suite == f[0];
    valid += (valid.empty() ? "" : ", ") + std::string(f[0]);
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
  for (const auto& f : kFiles) {
    const std::string name = f[0];
    if (!suite.empty() && suite != name) continue;
    const auto data = read_suite(std::filesystem::path(validation_dir) / f[1]);
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
        r.sets = like_settings(data, row, validation_dir, r.base);
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
  summarise(result);
  return result;
}

nlohmann::json to_json(const ValidationResult& r) {
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
