#include "capreport/report_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "megasim/capreport/svg_chart.hpp"
#include "megasim/report/human_number.hpp"

namespace megasim::capreport {

namespace {

constexpr double kDay = 86400.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kHistogramBins = 20;

std::string gpus_label(std::int64_t g) { return std::to_string(g) + " GPUs"; }

std::vector<const CapacityPoint*> feasible(const CapacityReport& r) {
  std::vector<const CapacityPoint*> v;
  for (const auto& p : r.points) {
    if (p.ok) v.push_back(&p);
  }
  return v;
}

ChartSeries series(const std::string& name, const std::vector<const CapacityPoint*>& pts,
                   double (*get)(const CapacityPoint&)) {
  ChartSeries s{name, {}};
  for (const auto* p : pts) s.values.push_back(get(*p));
  return s;
}

void add_chart(ReportData& d, const std::string& id, ChartSpec spec, std::string svg,
               const std::string& csv, const std::string& caption) {
  d.charts.push_back({id, spec.title, std::move(svg), csv, caption});
}

double nan_unless(bool ok, double v) { return ok ? v : std::numeric_limits<double>::quiet_NaN(); }

}  // namespace

std::string tokens_text(double t) {
  if (t >= 1e12) return num(t / 1e12, 4) + "T";
  if (t >= 1e9) return num(t / 1e9, 4) + "B";
  if (t >= 1e6) return num(t / 1e6, 4) + "M";
  return num(t, 6);
}

std::string num(double v, int digits) {
  if (!std::isfinite(v)) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string to_csv(const ReportTable& t) {
  auto cell = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out;
  for (std::size_t i = 0; i < t.header.size(); ++i) out += (i ? "," : "") + cell(t.header[i]);
  out += "\n";
  for (const auto& row : t.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + cell(row[i]);
    out += "\n";
  }
  return out;
}

ReportData make_report_data(const CapacityReport& r) {
  ReportData d;
  const auto pts = feasible(r);
  std::vector<double> x;
  std::vector<std::string> cats;
  for (const auto* p : pts) {
    x.push_back(static_cast<double>(p->num_gpus));
    cats.push_back(std::to_string(p->num_gpus));
  }

  // 1. MFU and throughput.
  ReportTable scaling{"scaling.csv", "MFU and throughput vs GPU count",
                      {"gpus", "mfu", "tokens_per_s", "step_time_s", "model_tflops_per_gpu"}, {}};
  for (const auto* p : pts) {
    scaling.rows.push_back({std::to_string(p->num_gpus), num(p->step.mfu, 6), num(p->step.tokens_per_s, 6),
                            num(p->step.step_time_s, 6), num(p->step.model_tflops_per_gpu, 6)});
  }
  ChartSpec mfu{"MFU vs GPU count", "GPUs (log scale)", "MFU (%)", 760, 380, true, "chart-mfu"};
  add_chart(d, mfu.id, mfu,
            svg_line_chart(mfu, x, {series("MFU", pts, [](const CapacityPoint& p) { return 100 * p.step.mfu; })}),
            scaling.file, "Model FLOPs utilisation (dense peak of the training precision).");
  ChartSpec tps{"Throughput vs GPU count", "GPUs (log scale)", "tokens/s", 760, 380, true, "chart-tokens"};
  add_chart(d, tps.id, tps,
            svg_line_chart(tps, x, {series("tokens/s", pts, [](const CapacityPoint& p) { return p.step.tokens_per_s; })}),
            scaling.file, "Training throughput of one step, without failures.");

  // 2. Step-time breakdown.
  ReportTable brk{"step_breakdown.csv", "Step-time breakdown",
                  {"gpus", "compute_s", "exposed_tp_comm_s", "exposed_pp_comm_s", "exposed_dp_comm_s",
                   "exposed_cp_comm_s", "pipeline_bubble_s", "optimizer_s", "data_loading_s", "other_s",
                   "of_which_straggler_s"}, {}};
  using Get = double (*)(const CapacityPoint&);
  const std::vector<std::pair<std::string, Get>> parts = {
      {"compute", [](const CapacityPoint& p) { return p.step.breakdown.compute_s; }},
      {"exposed TP comm", [](const CapacityPoint& p) { return p.step.breakdown.exposed_tp_comm_s; }},
      {"exposed PP comm", [](const CapacityPoint& p) { return p.step.breakdown.exposed_pp_comm_s; }},
      {"exposed DP comm", [](const CapacityPoint& p) { return p.step.breakdown.exposed_dp_comm_s; }},
      {"exposed CP comm", [](const CapacityPoint& p) { return p.step.breakdown.exposed_cp_comm_s; }},
      {"pipeline bubble", [](const CapacityPoint& p) { return p.step.breakdown.pipeline_bubble_s; }},
      {"optimizer", [](const CapacityPoint& p) { return p.step.breakdown.optimizer_s; }},
      {"data loading", [](const CapacityPoint& p) { return p.step.breakdown.data_loading_s; }},
      {"other", [](const CapacityPoint& p) { return p.step.breakdown.other_s; }}};
  std::vector<ChartSeries> stacks;
  for (const auto& [name, get] : parts) stacks.push_back(series(name, pts, get));
  for (const auto* p : pts) {
    std::vector<std::string> row{std::to_string(p->num_gpus)};
    for (const auto& part : parts) row.push_back(num(part.second(*p), 6));
    row.push_back(num(p->step.breakdown.straggler_s, 6));  // inside other_s: not stacked again
    brk.rows.push_back(row);
  }
  ChartSpec bs{"Step-time breakdown", "GPUs", "time per step (s)", 760, 400, false, "chart-breakdown"};
  add_chart(d, bs.id, bs, svg_stacked_bar(bs, cats, stacks), brk.file,
            "Where one step's wall-clock time goes; the stack adds up to the step time.");

  // 3. Memory per GPU.
  ReportTable mem{"memory.csv", "Memory per GPU by component",
                  {"gpus", "weights_GiB", "gradients_GiB", "optimizer_states_GiB", "activations_GiB",
                   "buffers_GiB", "capacity_GiB", "fits", "peak_pipeline_stage"}, {}};
  const std::vector<std::pair<std::string, Get>> mparts = {
      {"weights", [](const CapacityPoint& p) { return p.step.memory.weights_bytes / kGiB; }},
      {"gradients", [](const CapacityPoint& p) { return p.step.memory.gradients_bytes / kGiB; }},
      {"optimizer states", [](const CapacityPoint& p) { return p.step.memory.optimizer_states_bytes / kGiB; }},
      {"activations", [](const CapacityPoint& p) { return p.step.memory.activations_bytes / kGiB; }},
      {"buffers", [](const CapacityPoint& p) { return p.step.memory.buffers_bytes / kGiB; }}};
  std::vector<ChartSeries> mstacks;
  for (const auto& [name, get] : mparts) mstacks.push_back(series(name, pts, get));
  const ChartSeries cap = series("GPU capacity", pts, [](const CapacityPoint& p) { return p.step.memory_capacity_bytes / kGiB; });
  for (const auto* p : pts) {
    std::vector<std::string> row{std::to_string(p->num_gpus)};
    for (const auto& part : mparts) row.push_back(num(part.second(*p), 6));
    row.push_back(num(p->step.memory_capacity_bytes / kGiB, 6));
    row.push_back(p->step.memory_fits ? "yes" : "no");
    row.push_back(std::to_string(p->step.memory_peak_stage));
    mem.rows.push_back(row);
  }
  ChartSpec ms{"Memory per GPU by component vs capacity", "GPUs", "memory per GPU (GiB)", 760, 400, false, "chart-memory"};
  add_chart(d, ms.id, ms, svg_stacked_bar(ms, cats, mstacks, cap), mem.file,
            "Peak memory of the busiest GPU; the dashed line is the usable HBM capacity.");

  // 4. Time to train and cost.
  ReportTable ttt{"time_to_train.csv", "Time to train and cost vs GPU count",
                  {"gpus", "ideal_days", "expected_days", "p10_days", "p50_days", "p90_days",
                   "ideal_cost", "expected_cost", "ettr"}, {}};
  for (const auto* p : pts) {
    const bool g = p->goodput_ok;
    const bool mc = g && !p->goodput.mc_elapsed_s.empty();
    ttt.rows.push_back({std::to_string(p->num_gpus), num(p->ideal_days, 6),
                        num(nan_unless(g, p->expected_days), 6),
                        num(nan_unless(mc, (p->goodput.p10_elapsed_s + p->startup_s) / kDay), 6),
                        num(nan_unless(mc, (p->goodput.p50_elapsed_s + p->startup_s) / kDay), 6),
                        num(nan_unless(mc, (p->goodput.p90_elapsed_s + p->startup_s) / kDay), 6),
                        num(p->ideal_cost, 6), num(nan_unless(g, p->expected_cost), 6),
                        num(nan_unless(g, p->goodput.ettr), 6)});
  }
  const auto tokens = tokens_text(r.train_tokens);
  ChartSpec ts{"Time to train " + tokens + " tokens", "GPUs (log scale)", "wall-clock time (days)", 760, 380, true, "chart-ttt"};
  add_chart(d, ts.id, ts,
            svg_line_chart(ts, x, {series("no failures", pts, [](const CapacityPoint& p) { return p.ideal_days; }),
                                   series("with failures (expected)", pts, [](const CapacityPoint& p) { return nan_unless(p.goodput_ok, p.expected_days); }),
                                   series("with failures (p90)", pts, [](const CapacityPoint& p) {
                                     return nan_unless(p.goodput_ok && !p.goodput.mc_elapsed_s.empty(), (p.goodput.p90_elapsed_s + p.startup_s) / kDay);
                                   })}),
            ttt.file, "Including start-up; 'with failures' adds detection, diagnosis, restart, lost work and checkpoint stalls.");
  ChartSpec cs{"Cost to train " + tokens + " tokens", "GPUs (log scale)", "cost (price units, GPU-hours x price)", 760, 380, true, "chart-cost"};
  add_chart(d, cs.id, cs,
            svg_line_chart(cs, x, {series("no failures", pts, [](const CapacityPoint& p) { return p.ideal_cost; }),
                                   series("with failures (expected)", pts, [](const CapacityPoint& p) { return nan_unless(p.goodput_ok, p.expected_cost); })}),
            ttt.file, "GPUs x wall-clock hours x " + num(r.gpu_hour_price, 4) + " per GPU-hour.");
  ChartSpec es{"Effective training time ratio vs GPU count", "GPUs (log scale)", "ETTR (%)", 760, 380, true, "chart-ettr"};
  add_chart(d, es.id, es,
            svg_line_chart(es, x, {series("ETTR (expected)", pts, [](const CapacityPoint& p) { return nan_unless(p.goodput_ok, 100 * p.goodput.ettr); })}),
            ttt.file, "Useful iteration time / elapsed time: more GPUs fail more often, so more of the time goes to recovery.");

  // 5. Goodput distribution at the focus point.
  ReportTable hist{"goodput_histogram.csv", "Distribution of the time to train", {"bin_lo_days", "bin_hi_days", "trials"}, {}};
  ReportTable causes{"interruptions_by_cause.csv", "Interruptions and time lost by cause",
                     {"cause", "category", "expected_interruptions", "downtime_per_interruption_min",
                      "time_lost_h", "monte_carlo_mean_interruptions"}, {}};
  if (r.has_focus && !r.points[r.focus].goodput.mc_elapsed_s.empty()) {
    const auto& p = r.points[r.focus];
    const auto& e = p.goodput.mc_elapsed_s;
    const double lo = (e.front() + p.startup_s) / kDay, hi = (e.back() + p.startup_s) / kDay;
    const double w = hi > lo ? (hi - lo) / kHistogramBins : 1e-3;
    std::vector<double> edges, counts(kHistogramBins, 0.0);
    for (int i = 0; i <= kHistogramBins; ++i) edges.push_back(lo + w * i);
    for (double v : e) {
      const auto b = static_cast<std::size_t>(std::clamp((((v + p.startup_s) / kDay) - lo) / w, 0.0, kHistogramBins - 1.0));
      counts[b] += 1;
    }
    for (int i = 0; i < kHistogramBins; ++i) {
      hist.rows.push_back({num(edges[static_cast<std::size_t>(i)], 6), num(edges[static_cast<std::size_t>(i) + 1], 6),
                           num(counts[static_cast<std::size_t>(i)], 6)});
    }
    ChartSpec hs{"Time to train at " + gpus_label(p.num_gpus) + ": " + std::to_string(e.size()) + " Monte Carlo runs",
                 "wall-clock time (days)", "runs", 760, 380, false, "chart-goodput"};
    add_chart(d, hs.id, hs,
              svg_histogram(hs, edges, counts,
                            {{"p10", (p.goodput.p10_elapsed_s + p.startup_s) / kDay},
                             {"p50", (p.goodput.p50_elapsed_s + p.startup_s) / kDay},
                             {"p90", (p.goodput.p90_elapsed_s + p.startup_s) / kDay}}),
              hist.file, "Seeded Monte Carlo over failure arrivals, causes and manual interventions (seed " + std::to_string(r.seed) + ").");
    auto by = p.goodput.by_cause;
    std::stable_sort(by.begin(), by.end(), [](const CauseStats& a, const CauseStats& b) {
      return a.expected_time_lost_s > b.expected_time_lost_s;
    });
    for (const auto& c : by) {
      causes.rows.push_back({c.name, c.category, num(c.expected_interruptions, 4), num(c.downtime_s / 60, 4),
                             num(c.expected_time_lost_s / 3600, 4), num(c.mc_mean_interruptions, 4)});
    }
    causes.rows.push_back({"checkpoint stalls (stage 1)", "Checkpointing", "", "",
                           num(p.goodput.checkpoint_overhead_s / 3600, 4), ""});
    if (p.goodput.straggler_overhead_s > 0) {
      causes.rows.push_back({"stragglers", "Slow hosts", "", "", num(p.goodput.straggler_overhead_s / 3600, 4), ""});
    }
  }

  // 6. The plan per GPU count (skipped points included).
  ReportTable plan{"plan.csv", "Parallel plan per GPU count",
                   {"gpus", "status", "tp", "pp", "vpp", "cp", "dp", "micro_batches_per_pipeline",
                    "micro_batch_size", "zero_stage", "recompute", "memory_fits", "step_time_s",
                    "startup_s", "checkpoint_interval_s", "ettr", "expected_interruptions"}, {}};
  for (const auto& p : r.points) {
    if (!p.ok) {
      plan.rows.push_back({std::to_string(p.num_gpus), "skipped", "", "", "", "", "", "", "", "", "", "", "", "", "", "", ""});
      d.skipped.push_back(gpus_label(p.num_gpus) + ": " + p.skip_reason);
      continue;
    }
    const auto& s = p.step.plan;
    plan.rows.push_back({std::to_string(p.num_gpus), p.step.memory_fits ? "ok" : "does not fit in memory",
                         std::to_string(s.tp), std::to_string(s.pp), std::to_string(s.vpp), std::to_string(s.cp),
                         std::to_string(s.dp), std::to_string(s.micro_batches_per_pipeline),
                         std::to_string(s.micro_batch_size), std::to_string(s.zero_stage), s.recompute,
                         p.step.memory_fits ? "yes" : "no", num(p.step.step_time_s, 6), num(p.startup_s, 6),
                         num(nan_unless(p.goodput_ok, p.goodput.checkpoint_interval_s), 6),
                         num(nan_unless(p.goodput_ok, p.goodput.ettr), 6),
                         num(nan_unless(p.goodput_ok, p.goodput.expected_interruptions), 6)});
    if (!p.goodput_ok) d.skipped.push_back(gpus_label(p.num_gpus) + ": no goodput estimate: " + p.goodput_note);
  }
  d.tables = {scaling, brk, mem, ttt, hist, causes, plan};

  // Summary at the focus point.
  if (r.has_focus) {
    const auto& p = r.points[r.focus];
    const auto& g = p.goodput;
    d.summary = {{"GPUs (focus point)", std::to_string(p.num_gpus)},
                 {"Step time", num(p.step.step_time_s, 4) + " s"},
                 {"MFU", num(100 * p.step.mfu, 3) + " %"},
                 {"Throughput", human_number(p.step.tokens_per_s) + " tokens/s"},
                 {"Start-up (communicator init)", num(p.startup_s, 3) + " s"},
                 {"Time to train, no failures", num(p.ideal_days, 4) + " days"},
                 {"Time to train, expected", num(p.expected_days, 4) + " days"},
                 {"Time to train, p10 / p50 / p90",
                  g.mc_elapsed_s.empty() ? std::string("n/a")
                                         : num((g.p10_elapsed_s + p.startup_s) / kDay, 4) + " / " +
                                               num((g.p50_elapsed_s + p.startup_s) / kDay, 4) + " / " +
                                               num((g.p90_elapsed_s + p.startup_s) / kDay, 4) + " days"},
                 {"Effective training time ratio", num(100 * g.ettr, 3) + " %"},
                 {"Expected interruptions", num(g.expected_interruptions, 4)},
                 {"Mean time between unplanned interruptions", num(g.mtbf_s / 3600, 3) + " h"},
                 {"Optimal checkpoint interval", num(g.checkpoint_interval_s / 60, 3) + " min"},
                 {"Expected cost", human_number(p.expected_cost) + " (at " + num(r.gpu_hour_price, 4) + " per GPU-hour)"}};
  }
  return d;
}

}  // namespace megasim::capreport
