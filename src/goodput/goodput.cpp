#include "megasim/goodput/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "megasim/core/error.hpp"
#include "goodput/goodput_mc.hpp"

namespace megasim {

double young_daly_interval_s(double stall_s, double mtbf_s) {
  return std::sqrt(2.0 * stall_s * mtbf_s);
}

double straggler_multiplier(const StragglerParams& s, std::int64_t nodes) {
  const double p_any = 1.0 - std::pow(1.0 - s.slow_host_fraction, static_cast<double>(nodes));
  return 1.0 + s.slowdown * p_any;
}

namespace {

void validate(const GoodputInputs& in) {
  if (in.num_gpus <= 0) throw InputError("cluster.num_gpus", "must be > 0");
  if (in.gpus_per_node <= 0) throw InputError("cluster.gpus_per_node", "must be > 0");
  if (!(in.useful_time_s > 0) || !std::isfinite(in.useful_time_s)) {
    throw InputError("training.train_tokens", "useful training time must be finite and > 0");
  }
  if (in.model_parameters < 0) throw InputError("model", "parameter count must be >= 0");
  if (in.data_parallel_size <= 0 || in.num_gpus % in.data_parallel_size != 0) {
    throw InputError("parallel", "data-parallel size must divide num_gpus");
  }
  if (in.mc_trials < 0) throw InputError("goodput.trials", "must be >= 0");
}

double units_of(FailureScope s, const GoodputInputs& in) {
  switch (s) {
    case FailureScope::Gpu: return static_cast<double>(in.num_gpus);
    case FailureScope::Node:
      return std::ceil(static_cast<double>(in.num_gpus) / in.gpus_per_node);
    case FailureScope::Link:
      return static_cast<double>(in.num_links > 0 ? in.num_links : in.num_gpus);
    case FailureScope::Job: return 1.0;
  }
  return 0.0;
}

}  // namespace

GoodputResult model_goodput(const GoodputInputs& in, const ReliabilityCatalog& cat) {
  validate(in);
  GoodputResult r;
  const auto& rec = cat.recovery;
  const auto& ck = cat.checkpoint;
  const double nodes = units_of(FailureScope::Node, in);

  // Arrival rates (per second of running time): rate per unit-hour x units / 3600.
  std::vector<CauseModel> causes;
  for (const auto& fc : cat.failure_classes) {
    CauseModel c;
    c.name = fc.name;
    c.category = fc.category;
    c.rate_per_s = fc.rate_per_unit_hour * units_of(fc.scope, in) / 3600.0;
    c.planned = fc.detection == DetectionKind::Planned;
    c.manual_fraction = fc.manual_fraction;
    (c.planned ? r.planned_rate_per_s : r.unplanned_rate_per_s) += c.rate_per_s;
    causes.push_back(c);
  }
  r.mtbf_s = r.unplanned_rate_per_s > 0 ? 1.0 / r.unplanned_rate_per_s : 0.0;

  // Two-stage checkpoint (MegaScale §4.4). With the distributed optimizer every GPU holds
  // 1/num_gpus of the state, so stage 1 copies that share over PCIe; stage 2 drains the whole
  // checkpoint to remote storage in the background.
  r.checkpoint_bytes = in.model_parameters * ck.bytes_per_parameter;
  r.checkpoint_stall_s =
      ck.snapshot_fixed_s + r.checkpoint_bytes / static_cast<double>(in.num_gpus) / ck.gpu_to_host_Bps;
  r.checkpoint_persist_s = r.checkpoint_bytes / ck.storage_write_Bps;

  // Restart: one reader per model-parallel shard (i.e. per DP group) reads its shard, bounded
  // by its own NIC and by the storage aggregate, then broadcasts it inside its DP group.
  const double readers = static_cast<double>(in.num_gpus / in.data_parallel_size);
  const double shard_bytes = r.checkpoint_bytes / readers;
  const double read_s = std::max(shard_bytes / ck.reader_Bps, r.checkpoint_bytes / ck.storage_read_Bps);
  const double bcast_s = in.data_parallel_size > 1 ? shard_bytes / ck.broadcast_Bps : 0.0;
  r.checkpoint_load_s = read_s + bcast_s;
  r.restart_s = in.startup_s + r.checkpoint_load_s + rec.warmup_s;

  r.straggler_multiplier = straggler_multiplier(cat.stragglers, static_cast<std::int64_t>(nodes));
  const double useful_eff_s = in.useful_time_s * r.straggler_multiplier;
  r.straggler_overhead_s = useful_eff_s - in.useful_time_s;

  // Interval: the user's, or Young/Daly; never shorter than the background write (one
  // checkpoint in flight at a time) nor longer than the whole job.
  double tau = ck.interval_s;
  if (tau <= 0) {
    tau = r.unplanned_rate_per_s > 0 ? young_daly_interval_s(r.checkpoint_stall_s, r.mtbf_s) : useful_eff_s;
  }
  tau = std::min(std::max(tau, r.checkpoint_persist_s), std::max(useful_eff_s, r.checkpoint_persist_s));
  r.checkpoint_interval_s = tau;
  const double cycle_s = tau + r.checkpoint_stall_s;

  // Work lost by an unplanned interruption: on average half a checkpoint cycle, plus the time
  // the newest checkpoint is still being written (it is not yet usable).
  r.expected_lost_work_s = cycle_s / 2.0 + r.checkpoint_persist_s;
  const double crash_detect_s = rec.heartbeat_timeout_s + rec.heartbeat_interval_s / 2.0;
  for (auto& c : causes) {
    const auto& fc = *std::find_if(cat.failure_classes.begin(), cat.failure_classes.end(),
                                   [&](const FailureClass& f) { return f.name == c.name; });
    if (c.planned) {
      c.fixed_downtime_s = r.checkpoint_stall_s + rec.planned_restart_s + r.restart_s;
    } else {
      const double detect_s = fc.detection == DetectionKind::Hang ? rec.collective_timeout_s : crash_detect_s;
      c.fixed_downtime_s = detect_s + rec.diagnostics_s + rec.node_replacement_s + r.restart_s;
    }
    c.manual_s = rec.manual_response_s;
  }

  // Expectations. Running time R: failure-free running time R0 = U_eff * cycle / tau, plus
  // lost work redone; unplanned interruptions arrive at rate lambda_u during running time:
  //   R = R0 + lambda_u * R * L  =>  R = R0 / (1 - lambda_u * L).
  const double r0 = useful_eff_s * cycle_s / tau;
  const double load = r.unplanned_rate_per_s * r.expected_lost_work_s;
  if (load >= 1.0) {
    throw InputError("reliability", "interruptions arrive faster than work can be checkpointed: "
                                    "the job would never finish");
  }
  const double running_s = r0 / (1.0 - load);
  r.checkpoint_overhead_s = r0 - useful_eff_s;
  r.expected_elapsed_s = running_s;
  for (auto& c : causes) {
    CauseStats s;
    s.name = c.name;
    s.category = c.category;
    s.expected_interruptions = c.rate_per_s * running_s;
    s.downtime_s = c.fixed_downtime_s + c.manual_fraction * c.manual_s;
    s.expected_time_lost_s =
        s.expected_interruptions * (s.downtime_s + (c.planned ? 0.0 : r.expected_lost_work_s));
    r.expected_interruptions += s.expected_interruptions;
    r.expected_elapsed_s += s.expected_interruptions * s.downtime_s;
    r.by_cause.push_back(s);
  }
  r.ettr = useful_eff_s / r.expected_elapsed_s;

  if (in.mc_trials > 0) {
    McSetup setup{useful_eff_s, tau, r.checkpoint_stall_s, r.checkpoint_persist_s, causes};
    const McSummary mc = run_goodput_monte_carlo(setup, in.mc_trials, in.seed);
    r.mc_elapsed_s = mc.elapsed_s;
    r.mc_mean_elapsed_s = mc.mean_elapsed_s;
    r.mc_mean_interruptions = mc.mean_interruptions;
    r.p10_elapsed_s = percentile(r.mc_elapsed_s, 0.10);
    r.p50_elapsed_s = percentile(r.mc_elapsed_s, 0.50);
    r.p90_elapsed_s = percentile(r.mc_elapsed_s, 0.90);
    for (std::size_t i = 0; i < r.by_cause.size(); ++i) {
      r.by_cause[i].mc_mean_interruptions = mc.mean_by_cause[i];
    }
  }
  return r;
}

}  // namespace megasim
