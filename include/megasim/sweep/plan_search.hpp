#pragma once
// `megasim plan`: search every parallel plan of a job (plan_space.hpp), rank the runnable ones
// with the analytic model, then re-simulate the best K with the event engine (contention-aware)
// and rank those by its result.
//
// Usage:
//   PlanSearchOptions o;  o.top_k = 10;  o.jobs = 2;
//   PlanSearchResult r = search_plans(base_job, catalog, o);
//   print_plan_table(r, std::cout);   // or plan_search_to_json(r).dump(2)
// Ordering is deterministic for any thread count: by objective, ties by canonical plan order.
#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/report/step_report.hpp"
#include "megasim/sweep/plan_space.hpp"

namespace megasim {

class Catalog;

enum class PlanObjective { StepTime, TokensPerGpu, Mfu };
PlanObjective parse_plan_objective(const std::string& name);  // InputError("--objective") else
const char* to_string(PlanObjective o);

struct PlanSearchOptions {
  PlanSpaceOptions space;
  PlanObjective objective = PlanObjective::StepTime;
  int top_k = 10;                          // plans re-simulated and reported
  EngineKind rerank_engine = EngineKind::Des;
  int jobs = 0;                            // worker threads; 0 = hardware_concurrency
  // Receives a short progress text now and then (e.g. "analytic 1200/4800"); may be empty.
  std::function<void(const std::string&)> progress;
};

struct RankedPlan {
  PlanCandidate plan;
  std::string key;                   // plan_key(plan)
  std::string pipeline_layout;       // pipeline_layout_string(plan, ...): set for layout_with_mtp plans
  std::int64_t dp = 1;
  std::int64_t micro_batches_per_pipeline = 1;
  std::string engine;                // engine of the figures below ("des" | "analytic")
  double step_time_s = 0;
  double mfu = 0;
  double tokens_per_s_per_gpu = 0;
  double peak_memory_bytes = 0;      // max over pipeline stages
  StepBreakdown breakdown;
  std::string dominant_cost;         // largest non-compute breakdown entry, A3 name
  double dominant_cost_s = 0;
  std::size_t analytic_rank = 0;     // 1-based position in the analytic ranking
  double analytic_step_time_s = 0;
  // Keys of other plans with the same figures (e.g. ZeRO-1 and ZeRO-2 at one micro-batch per
  // step): shown once, under the first in canonical order.
  std::vector<std::string> alternatives;
};

struct PlanSearchResult {
  std::string objective;
  std::int64_t num_gpus = 0;            // GPUs the job was given (the config's or --gpus)
  // GPUs the ranked plans use: num_gpus, or when no plan runs on exactly num_gpus the largest
  // smaller count (whole nodes) that admits one.
  std::int64_t num_gpus_used = 0;
  // When num_gpus admits no plan: the nearest counts that do, below and above (whole nodes).
  std::vector<std::int64_t> nearest_gpu_counts;
  std::size_t candidates_total = 0;
  std::size_t valid = 0;
  std::map<std::string, std::size_t> rejected;   // plan_rule_key -> count, every rule listed
  std::optional<double> smallest_memory_overshoot_bytes;
  std::string first_cost_model_error;            // plan key and message of the first one
  std::vector<RankedPlan> ranked;                // the top K, best first
};

// `base` supplies everything but the plan (its num_gpus is the cluster size searched; when no
// plan runs on exactly that many GPUs, the largest smaller whole-node count that admits one is
// searched instead, and the result says so).
PlanSearchResult search_plans(const JobSpec& base, const Catalog& catalog, const PlanSearchOptions& opts);

// The largest non-compute entry of a breakdown as (A3 name, seconds); ties keep A3 order.
std::pair<std::string, double> dominant_exposed_cost(const StepBreakdown& b);

// {"candidates_total", "valid", "rejected": {...}, "ranked": [...], "best": {...}|null, ...}
nlohmann::json plan_search_to_json(const PlanSearchResult& r);
void print_plan_table(const PlanSearchResult& r, std::ostream& out);

}  // namespace megasim
