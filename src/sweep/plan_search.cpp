#include "megasim/sweep/plan_search.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>

#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/exec/analytic_step.hpp"
#include "megasim/exec/step_costs.hpp"
#include "megasim/model/flops.hpp"
#include "megasim/sweep/parallel_for.hpp"

namespace megasim {

PlanObjective parse_plan_objective(const std::string& name) {
  if (name == "step_time") return PlanObjective::StepTime;
  if (name == "tokens_per_gpu") return PlanObjective::TokensPerGpu;
  if (name == "mfu") return PlanObjective::Mfu;
  throw InputError("--objective", "unknown objective \"" + name + "\"; valid: step_time, tokens_per_gpu, mfu");
}

const char* to_string(PlanObjective o) {
  switch (o) {
    case PlanObjective::StepTime: return "step_time";
    case PlanObjective::TokensPerGpu: return "tokens_per_gpu";
    case PlanObjective::Mfu: return "mfu";
  }
  return "step_time";
}

std::pair<std::string, double> dominant_exposed_cost(const StepBreakdown& b) {
  const std::pair<const char*, double> entries[] = {
      {"exposed_tp_comm", b.exposed_tp_comm_s}, {"exposed_pp_comm", b.exposed_pp_comm_s},
      {"exposed_dp_comm", b.exposed_dp_comm_s}, {"exposed_cp_comm", b.exposed_cp_comm_s},
      {"pipeline_bubble", b.pipeline_bubble_s}, {"optimizer", b.optimizer_s},
      {"data_loading", b.data_loading_s},       {"other", b.other_s}};
  std::pair<std::string, double> best{entries[0].first, entries[0].second};
  for (const auto& [name, s] : entries) {
    if (s > best.second) best = {name, s};
  }
  return best;
}

namespace {

double dense_peak_flops(const JobSpec& job) {
  const auto& gpu = job.cluster.gpu;
  if (job.training.precision == Precision::Fp8 && gpu.peak_fp8_flops > 0) return gpu.peak_fp8_flops;
  return gpu.peak_bf16_flops;
}

// Smaller is better for every objective.
double score(PlanObjective o, const RankedPlan& p) {
  switch (o) {
    case PlanObjective::StepTime: return p.step_time_s;
    case PlanObjective::TokensPerGpu: return -p.tokens_per_s_per_gpu;
    case PlanObjective::Mfu: return -p.mfu;
  }
  return p.step_time_s;
}

void fill_figures(const JobSpec& job, const StepBreakdown& b, double step_time_s, const std::string& engine,
                  RankedPlan& p) {
  const double gpus = static_cast<double>(job.cluster.num_gpus);
  const double tokens = static_cast<double>(job.training.global_batch_size) *
                        static_cast<double>(job.training.seq_length);
  p.engine = engine;
  p.step_time_s = step_time_s;
  p.breakdown = b;
  p.mfu = model_flops_per_step(job) / (step_time_s * gpus * dense_peak_flops(job));
  p.tokens_per_s_per_gpu = tokens / step_time_s / gpus;
  const auto [name, s] = dominant_exposed_cost(b);
  p.dominant_cost = name;
  p.dominant_cost_s = s;
}

// Candidate outcome, one slot per candidate (written by exactly one worker).
struct Outcome {
  std::optional<PlanRule> rejected;
  double peak_bytes = 0;
  std::string error;
  RankedPlan ranked;
};

void sort_ranked(std::vector<RankedPlan>& v, PlanObjective o) {
  std::sort(v.begin(), v.end(), [o](const RankedPlan& a, const RankedPlan& b) {
    const double sa = score(o, a);
    const double sb = score(o, b);
    if (sa != sb) return sa < sb;
    return canonical_less(a.plan, b.plan);
  });
}

// Figures a plan row shows; plans equal in all of them are one row with alternatives.
bool same_row(const RankedPlan& a, const RankedPlan& b) {
  return a.step_time_s == b.step_time_s && a.peak_memory_bytes == b.peak_memory_bytes &&
         a.dominant_cost == b.dominant_cost && a.dominant_cost_s == b.dominant_cost_s;
}

// Keeps the first plan (canonical order among equals) of each run of identical rows and names
// the others as its alternatives. `v` is sorted, so identical rows share one score run.
std::vector<RankedPlan> merge_identical_rows(std::vector<RankedPlan> v, PlanObjective o) {
  std::vector<RankedPlan> out;
  std::size_t run_start = 0;  // first kept plan with the current score
  for (auto& p : v) {
    if (out.empty() || score(o, out[run_start]) != score(o, p)) run_start = out.size();
    bool merged = false;
    for (std::size_t i = run_start; i < out.size() && !merged; ++i) {
      if (same_row(out[i], p)) {
        out[i].alternatives.push_back(p.key);
        merged = true;
      }
    }
    if (!merged) out.push_back(std::move(p));
  }
  return out;
}

// True when at least one candidate runs on `gpus` GPUs: passes every divisibility rule and fits.
bool admits_a_plan(JobSpec job, std::int64_t gpus, const std::vector<PlanCandidate>& candidates,
                   bool sequence_parallel, const BufferSizes& buffers) {
  job.cluster.num_gpus = gpus;
  for (const auto& c : candidates) {
    const JobSpec j = apply_plan(job, c, sequence_parallel);
    if (!first_broken_rule(j) && peak_memory_bytes(j, buffers) <= j.cluster.gpu.memory_bytes) return true;
  }
  return false;
}

// GPU counts a job may use: whole nodes, or any count inside one node.
std::int64_t next_gpu_count(std::int64_t n, int gpus_per_node, int direction) {
  if (n < gpus_per_node || (n == gpus_per_node && direction < 0)) return n + direction;
  return n + static_cast<std::int64_t>(direction) * gpus_per_node;
}

// The nearest count below or at `from` (direction -1) or above it (+1) that admits a plan,
// looking at most kGpuCountSearchSteps counts away; nullopt when none does.
constexpr int kGpuCountSearchSteps = 64;
std::optional<std::int64_t> nearest_admitting(const JobSpec& base, std::int64_t from, int direction,
                                              const std::vector<PlanCandidate>& candidates, bool sp,
                                              const BufferSizes& buffers) {
  std::int64_t n = from;
  for (int step = 0; step < kGpuCountSearchSteps && n >= 1; ++step) {
    if (admits_a_plan(base, n, candidates, sp, buffers)) return n;
    n = next_gpu_count(n, base.cluster.gpus_per_node, direction);
  }
  return std::nullopt;
}

}  // namespace

PlanSearchResult search_plans(const JobSpec& requested, const Catalog& catalog, const PlanSearchOptions& opts) {
  const std::vector<PlanCandidate> candidates = enumerate_plans(requested, opts.space);
  const int jobs = resolve_jobs(opts.jobs);
  const double capacity = requested.cluster.gpu.memory_bytes;
  std::vector<Outcome> outcomes(candidates.size());
  // Loaded once and shared read-only by every worker (all candidates run on the same GPU).
  const std::shared_ptr<const StepCostData> cost_data = load_step_cost_data(requested, catalog);

  // A count no plan tiles (e.g. 5,128 GPUs = 8 x 641 with a batch of 2,520) is planned on the
  // largest smaller count that admits a plan; the nearest counts either side are reported.
  JobSpec base = requested;
  std::vector<std::int64_t> nearest;
  const BufferSizes buffers = buffer_sizes(*cost_data);
  const bool sp = opts.space.sequence_parallel;
  if (!admits_a_plan(base, base.cluster.num_gpus, candidates, sp, buffers)) {
    const int gpn = nvlink_domain_gpus(base.cluster);  // counts step by whole NVLink domains
    const std::int64_t n = base.cluster.num_gpus;
    const auto below = nearest_admitting(base, next_gpu_count(n, gpn, -1), -1, candidates, sp, buffers);
    const auto above = nearest_admitting(base, next_gpu_count(n, gpn, +1), +1, candidates, sp, buffers);
    if (below) nearest.push_back(*below);
    if (above) nearest.push_back(*above);
    if (below) base.cluster.num_gpus = *below;
  }

  auto report = [&](const char* phase) {
    return [&opts, phase](std::size_t done, std::size_t n) {
      if (!opts.progress) return;
      // About 20 updates per phase keep stderr readable.
      const std::size_t every = std::max<std::size_t>(1, n / 20);
      if (done % every == 0 || done == n) {
        opts.progress(std::string(phase) + " " + std::to_string(done) + "/" + std::to_string(n));
      }
    };
  };

  parallel_for(
      candidates.size(), jobs,
      [&](std::size_t i) {
        Outcome& o = outcomes[i];
        const JobSpec job = apply_plan(base, candidates[i], opts.space.sequence_parallel);
        o.rejected = first_broken_rule(job);
        if (o.rejected) return;
        o.peak_bytes = peak_memory_bytes(job, buffer_sizes(*cost_data));
        if (o.peak_bytes > capacity) {
          o.rejected = PlanRule::Memory;
          return;
        }
        StepReport r;
        try {
          r = estimate_step_analytic(job, compute_step_costs(job, *cost_data));
        } catch (const std::exception& e) {
          // A plan the validator accepts but the cost model cannot represent is reported,
          // not fatal: one odd corner of the space must not stop the search.
          o.rejected = PlanRule::CostModelError;
          o.error = plan_key(candidates[i]) + ": " + e.what();
          return;
        }
        RankedPlan& p = o.ranked;
        p.plan = candidates[i];
        p.key = plan_key(p.plan);
        p.pipeline_layout =
            pipeline_layout_string(p.plan, job.model.num_hidden_layers, job.model.num_nextn_predict_layers);
        p.dp = job.parallel.data_parallel_size;
        p.micro_batches_per_pipeline = micro_batches_per_pipeline(job);
        p.peak_memory_bytes = o.peak_bytes;
        fill_figures(job, r.breakdown, r.step_time_s, "analytic", p);
        p.analytic_step_time_s = r.step_time_s;
      },
      report("analytic"));

  PlanSearchResult res;
  res.objective = to_string(opts.objective);
  res.num_gpus = requested.cluster.num_gpus;
  res.num_gpus_used = base.cluster.num_gpus;
  res.nearest_gpu_counts = nearest;
  res.candidates_total = candidates.size();
  for (const PlanRule rule : kAllPlanRules) res.rejected[plan_rule_key(rule)] = 0;
  std::vector<RankedPlan> valid;
  for (const auto& o : outcomes) {
    if (!o.rejected) {
      valid.push_back(o.ranked);
      continue;
    }
    ++res.rejected[plan_rule_key(*o.rejected)];
    if (!o.error.empty() && res.first_cost_model_error.empty()) res.first_cost_model_error = o.error;
    if (*o.rejected == PlanRule::Memory) {
      const double over = o.peak_bytes - capacity;
      if (!res.smallest_memory_overshoot_bytes || over < *res.smallest_memory_overshoot_bytes) {
        res.smallest_memory_overshoot_bytes = over;
      }
    }
  }
  res.valid = valid.size();
  sort_ranked(valid, opts.objective);
  valid = merge_identical_rows(std::move(valid), opts.objective);
  for (std::size_t i = 0; i < valid.size(); ++i) valid[i].analytic_rank = i + 1;

  const std::size_t k = std::min(valid.size(), static_cast<std::size_t>(std::max(0, opts.top_k)));
  std::vector<RankedPlan> top(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(k));
  if (opts.rerank_engine == EngineKind::Des) {
    // ZeRO-1 and ZeRO-2 shard the same collectives and optimizer work (they differ only in
    // the gradient memory they keep, and only at one micro-batch per step) unless ZeRO-2
    // reduces every micro-batch, so their step graphs are identical: simulate each such
    // pair once. In the top 10 the pairs are common and this halves the event-engine phase.
    std::vector<std::size_t> runs;                 // indices of `top` that are simulated
    std::vector<std::size_t> source(top.size());   // index in `runs` whose timing a plan takes
    std::map<std::string, std::size_t> by_timing;
    for (std::size_t i = 0; i < top.size(); ++i) {
      PlanCandidate timing = top[i].plan;
      if (timing.zero_stage == 2 && !base.system.dp_reduce_every_micro_batch) timing.zero_stage = 1;
      const auto [it, fresh] = by_timing.emplace(plan_key(timing), runs.size());
      if (fresh) runs.push_back(i);
      source[i] = it->second;
    }
    std::vector<StepReport> reports(runs.size());
    parallel_for(
        runs.size(), jobs,
        [&](std::size_t r) {
          const JobSpec job = apply_plan(base, top[runs[r]].plan, opts.space.sequence_parallel);
          SimulateOptions so;
          so.engine = EngineKind::Des;
          reports[r] = simulate_step(job, catalog, so);
        },
        report("des"));
    for (std::size_t i = 0; i < top.size(); ++i) {
      const JobSpec job = apply_plan(base, top[i].plan, opts.space.sequence_parallel);
      const StepReport& r = reports[source[i]];
      fill_figures(job, r.breakdown, r.step_time_s, r.engine, top[i]);
    }
    sort_ranked(top, opts.objective);
  }
  res.ranked = std::move(top);
  return res;
}

}  // namespace megasim
