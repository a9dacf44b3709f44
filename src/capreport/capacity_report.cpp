#include "megasim/capreport/capacity_report.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>
#include <string>

#include "megasim/core/error.hpp"
#include "megasim/core/rng.hpp"

namespace megasim {

namespace {

constexpr double kDay = 86400.0;

std::int64_t model_parallel_size(const JobSpec& job) {
  return static_cast<std::int64_t>(job.parallel.tensor_model_parallel_size) *
         job.parallel.pipeline_model_parallel_size * job.parallel.context_parallel_size;
}

// Up to `n` values of a sorted list spread geometrically, always keeping both ends.
std::vector<std::int64_t> thin(const std::vector<std::int64_t>& v, int n) {
  if (static_cast<int>(v.size()) <= n || n < 2) return v;
  std::set<std::int64_t> keep;
  const double a = std::log(static_cast<double>(v.front()));
  const double b = std::log(static_cast<double>(v.back()));
  for (int i = 0; i < n; ++i) {
    const double target = std::exp(a + (b - a) * i / (n - 1));
    auto best = std::min_element(v.begin(), v.end(), [&](std::int64_t x, std::int64_t y) {
      return std::fabs(std::log(static_cast<double>(x)) - std::log(target)) <
             std::fabs(std::log(static_cast<double>(y)) - std::log(target));
    });
    keep.insert(*best);
  }
  return {keep.begin(), keep.end()};
}

}  // namespace

std::vector<std::int64_t> capacity_gpu_counts(const JobSpec& job, std::int64_t lo, std::int64_t hi,
                                              int max_points) {
  const std::int64_t m = model_parallel_size(job);
  if (m <= 0) throw InputError("parallel", "parallel sizes must be > 0");
  if (lo <= 0 || hi < lo) throw InputError("--gpus-range", "must be A:B with 0 < A <= B");
  const std::int64_t dlo = std::max<std::int64_t>(1, (lo + m - 1) / m);
  const std::int64_t dhi = hi / m;
  if (dhi < dlo) {
    throw InputError("--gpus-range", "contains no multiple of TP*PP*CP = " + std::to_string(m));
  }
  const std::int64_t mbs = std::max<std::int64_t>(job.training.micro_batch_size, 1);
  const std::int64_t seqs = job.training.global_batch_size / mbs;
  std::vector<std::int64_t> preferred, all;
  for (std::int64_t d = dlo; d <= dhi && all.size() < 200000; ++d) {
    all.push_back(d);
    if (seqs > 0 && seqs % d == 0) preferred.push_back(d);
  }
  const auto& pick = preferred.empty() ? all : preferred;
  std::vector<std::int64_t> gpus;
  for (std::int64_t d : thin(pick, max_points)) gpus.push_back(d * m);
  return gpus;
}

CapacityReport build_capacity_report(const JobSpec& job, const SimulateFn& simulate,
                                     const ReliabilityCatalog& reliability,
                                     const CapacityOptions& options) {
  CapacityReport rep;
  rep.job_name = job.name;
  rep.base = job;
  rep.train_tokens = options.train_tokens.value_or(job.training.train_tokens.value_or(300e9));
  if (!(rep.train_tokens > 0)) throw InputError("--tokens", "must be > 0");
  if (!(options.gpu_hour_price >= 0)) throw InputError("--gpu-hour-price", "must be >= 0");
  rep.gpu_hour_price = options.gpu_hour_price;
  rep.seed = options.seed;
  rep.mc_trials = options.mc_trials;
  const std::int64_t lo = options.gpus_min > 0 ? options.gpus_min : std::max<std::int64_t>(1, job.cluster.num_gpus / 4);
  const std::int64_t hi = options.gpus_max > 0 ? options.gpus_max : job.cluster.num_gpus * 4;

  for (std::int64_t g : capacity_gpu_counts(job, lo, hi, options.max_points)) {
    CapacityPoint p;
    p.num_gpus = g;
    JobSpec j = job;
    j.cluster.num_gpus = g;
    j.parallel.data_parallel_size = g / model_parallel_size(job);
    try {
      p.step = simulate(j);
      p.ok = p.step.tokens_per_s > 0 && p.step.step_time_s > 0;
      if (!p.ok) p.skip_reason = "simulation returned no throughput";
    } catch (const InputError& e) {
      p.skip_reason = e.what();
    }
    if (p.ok) {
      p.comm_init = model_comm_init(j, reliability.comm_init);
      // The engine's own start-up figure wins when it reports one.
      p.startup_s = p.step.startup_s > 0 ? p.step.startup_s : p.comm_init.total_s;
      const double useful_s = rep.train_tokens / p.step.tokens_per_s;
      p.ideal_days = (useful_s + p.startup_s) / kDay;
      p.ideal_cost = p.ideal_days * 24.0 * static_cast<double>(g) * rep.gpu_hour_price;
      GoodputInputs in;
      in.num_gpus = g;
      in.gpus_per_node = job.cluster.gpus_per_node;
      in.useful_time_s = useful_s;
      in.model_parameters = p.step.model_parameters;
      in.data_parallel_size = j.parallel.data_parallel_size;
      in.startup_s = p.startup_s;
      in.mc_trials = options.mc_trials;
      in.seed = stable_hash({options.seed, static_cast<std::uint64_t>(g)});
      try {
        p.goodput = model_goodput(in, reliability);
        p.goodput_ok = true;
        p.expected_days = (p.goodput.expected_elapsed_s + p.startup_s) / kDay;
        p.expected_cost = p.expected_days * 24.0 * static_cast<double>(g) * rep.gpu_hour_price;
      } catch (const InputError& e) {
        p.goodput_note = e.what();
      }
    }
    rep.points.push_back(p);
  }
  // Focus: the job's own GPU count when it was swept and feasible, else the largest feasible.
  std::optional<std::size_t> own, largest;
  for (std::size_t i = 0; i < rep.points.size(); ++i) {
    if (!rep.points[i].goodput_ok) continue;
    largest = i;
    if (rep.points[i].num_gpus == job.cluster.num_gpus) own = i;
  }
  rep.has_focus = own.has_value() || largest.has_value();
  rep.focus = own.value_or(largest.value_or(0));

  rep.assumptions = {
      "GPU counts are scaled by keeping TP, PP, VPP and CP fixed and adjusting the data-parallel size.",
      "Step results come from megasim's step simulation; stragglers are modelled there "
      "(system.straggler_*), not again in the goodput model.",
      job.system.comm_init_lazy
          ? std::string("Start-up = communicator initialisation as today's PyTorch runs it (no barrier per group, "
                        "NCCL communicators built at first use; rendezvous, unique ids") +
                (job.system.gloo_process_groups ? " and gloo full meshes" : "") + " through one " +
                to_string(job.system.comm_init_store) + " store)."
          : std::string("Start-up = communicator initialisation (MegaScale §3.5 mechanism: store-based barriers on ") +
                to_string(job.system.comm_init_store) + (job.system.comm_init_ordered ? ", ordered init" : ", unordered init") + ").",
      "Failures arrive as independent Poisson processes per GPU, node, link or job, during running "
      "time only; rates are scaled from the catalog's observation window.",
      "Lost work = time since the last checkpoint that finished its background write.",
      "Checkpoint state = parameters x bytes_per_parameter, sharded over all GPUs for the stage-1 "
      "copy; on restart one reader per DP group reads its shard and broadcasts it.",
      "Costs = GPUs x wall-clock hours x price per GPU-hour (idle time during recovery is paid).",
  };
  // Catalog sources, one line per distinct source (many figures share one).
  std::vector<std::pair<std::string, std::vector<std::string>>> by_source;
  const auto add_source = [&](const std::string& path, const std::string& source) {
    auto it = std::find_if(by_source.begin(), by_source.end(), [&](const auto& e) { return e.first == source; });
    if (it == by_source.end()) {
      by_source.push_back({source, {path}});
    } else {
      it->second.push_back(path);
    }
  };
  for (const auto& fc : reliability.failure_classes) add_source("failure rate " + fc.name, fc.source);
  for (const auto& line : reliability.sources) {
    const auto colon = line.find(": ");
    add_source(line.substr(0, colon), colon == std::string::npos ? "" : line.substr(colon + 2));
  }
  for (const auto& [source, paths] : by_source) {
    std::string who = paths.front();
    if (paths.size() > 1) who += " (and " + std::to_string(paths.size() - 1) + " more)";
    rep.assumptions.push_back(who + ": " + source);
  }
  return rep;
}

}  // namespace megasim
