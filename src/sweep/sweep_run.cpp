#include "megasim/sweep/sweep_run.hpp"

#include <cstdio>
#include <optional>

#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/sweep/parallel_for.hpp"

namespace megasim {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string num(std::int64_t v) { return std::to_string(v); }

// Column name and cell of each flattened A3 field, kept side by side so they cannot drift.
struct Field {
  const char* name;
  std::string (*cell)(const StepReport&);
};

constexpr Field kFields[] = {
    {"name", [](const StepReport& r) { return r.name; }},
    {"engine", [](const StepReport& r) { return r.engine; }},
    {"num_gpus", [](const StepReport& r) { return num(r.num_gpus); }},
    {"step_time_s", [](const StepReport& r) { return num(r.step_time_s); }},
    {"tokens_per_s", [](const StepReport& r) { return num(r.tokens_per_s); }},
    {"mfu", [](const StepReport& r) { return num(r.mfu); }},
    {"hfu", [](const StepReport& r) { return num(r.hfu); }},
    {"model_tflops_per_gpu", [](const StepReport& r) { return num(r.model_tflops_per_gpu); }},
    {"model_flops_per_step", [](const StepReport& r) { return num(r.model_flops_per_step); }},
    {"time_to_train_days",
     [](const StepReport& r) { return r.time_to_train_days ? num(*r.time_to_train_days) : std::string(); }},
    {"startup_s", [](const StepReport& r) { return num(r.startup_s); }},
    {"breakdown_s.compute", [](const StepReport& r) { return num(r.breakdown.compute_s); }},
    {"breakdown_s.exposed_tp_comm", [](const StepReport& r) { return num(r.breakdown.exposed_tp_comm_s); }},
    {"breakdown_s.exposed_pp_comm", [](const StepReport& r) { return num(r.breakdown.exposed_pp_comm_s); }},
    {"breakdown_s.exposed_dp_comm", [](const StepReport& r) { return num(r.breakdown.exposed_dp_comm_s); }},
    {"breakdown_s.exposed_cp_comm", [](const StepReport& r) { return num(r.breakdown.exposed_cp_comm_s); }},
    {"breakdown_s.pipeline_bubble", [](const StepReport& r) { return num(r.breakdown.pipeline_bubble_s); }},
    {"breakdown_s.optimizer", [](const StepReport& r) { return num(r.breakdown.optimizer_s); }},
    {"breakdown_s.data_loading", [](const StepReport& r) { return num(r.breakdown.data_loading_s); }},
    {"breakdown_s.other", [](const StepReport& r) { return num(r.breakdown.other_s); }},
    {"straggler_s", [](const StepReport& r) { return num(r.breakdown.straggler_s); }},
    {"memory.peak_bytes_per_gpu", [](const StepReport& r) { return num(r.memory.total_bytes()); }},
    {"memory.peak_pipeline_stage", [](const StepReport& r) { return num(std::int64_t{r.memory_peak_stage}); }},
    {"memory.capacity_bytes", [](const StepReport& r) { return num(r.memory_capacity_bytes); }},
    {"memory.fits", [](const StepReport& r) { return std::string(r.memory_fits ? "true" : "false"); }},
    {"memory.breakdown_bytes.weights", [](const StepReport& r) { return num(r.memory.weights_bytes); }},
    {"memory.breakdown_bytes.gradients", [](const StepReport& r) { return num(r.memory.gradients_bytes); }},
    {"memory.breakdown_bytes.optimizer_states",
     [](const StepReport& r) { return num(r.memory.optimizer_states_bytes); }},
    {"memory.breakdown_bytes.activations", [](const StepReport& r) { return num(r.memory.activations_bytes); }},
    {"memory.breakdown_bytes.buffers", [](const StepReport& r) { return num(r.memory.buffers_bytes); }},
    {"plan.tp", [](const StepReport& r) { return num(std::int64_t{r.plan.tp}); }},
    {"plan.pp", [](const StepReport& r) { return num(std::int64_t{r.plan.pp}); }},
    {"plan.vpp", [](const StepReport& r) { return num(std::int64_t{r.plan.vpp}); }},
    {"plan.cp", [](const StepReport& r) { return num(std::int64_t{r.plan.cp}); }},
    {"plan.dp", [](const StepReport& r) { return num(r.plan.dp); }},
    {"plan.micro_batches_per_pipeline", [](const StepReport& r) { return num(r.plan.micro_batches_per_pipeline); }},
    {"plan.micro_batch_size", [](const StepReport& r) { return num(r.plan.micro_batch_size); }},
    {"plan.zero_stage", [](const StepReport& r) { return num(std::int64_t{r.plan.zero_stage}); }},
    {"plan.recompute", [](const StepReport& r) { return r.plan.recompute; }},
};

}  // namespace

std::vector<std::string> report_columns() {
  std::vector<std::string> c;
  for (const auto& f : kFields) c.emplace_back(f.name);
  return c;
}

std::vector<std::string> report_cells(const StepReport& r) {
  std::vector<std::string> c;
  for (const auto& f : kFields) c.push_back(f.cell(r));
  return c;
}

SweepTable run_sweep(const SweepJobLoader& load, const Catalog& catalog, const SweepOptions& opts) {
  const std::size_t total = grid_size(opts.vary);
  const std::vector<std::size_t> points = shard_points(total, opts.shard);

  SweepTable t;
  t.points_total = total;
  t.columns = {"point", "points_total"};
  for (const auto& v : opts.vary) t.columns.push_back("set." + v.path);
  for (const auto& c : report_columns()) t.columns.push_back(c);
  t.columns.emplace_back("error");
  const std::size_t report_width = report_columns().size();

  t.rows.resize(points.size());
  parallel_for(
      points.size(), resolve_jobs(opts.jobs),
      [&](std::size_t i) {
        const std::size_t p = points[i];
        const auto sets = grid_assignments(opts.vary, p);
        SweepRow& row = t.rows[i];
        row.point = p;
        row.cells = {std::to_string(p), std::to_string(total)};
        for (std::size_t k = 0; k < sets.size(); ++k) row.cells.push_back(sets[k].substr(opts.vary[k].path.size() + 1));
        std::optional<StepReport> report;
        std::string error;
        try {
          SimulateOptions so;
          so.engine = opts.engine;
          report = simulate_step(load(sets), catalog, so);
        } catch (const InputError& e) {
          error = e.what();
        }
        if (report) {
          for (auto& c : report_cells(*report)) row.cells.push_back(std::move(c));
        } else {
          row.cells.resize(row.cells.size() + report_width);
        }
        row.cells.push_back(error);
      },
      [&](std::size_t done, std::size_t n) {
        if (opts.progress) opts.progress("sweep " + std::to_string(done) + "/" + std::to_string(n) + " points");
      });
  return t;
}

}  // namespace megasim
