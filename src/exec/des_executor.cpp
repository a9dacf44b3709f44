// Runs a step's task graph on the engine (see exec/des_step.hpp for the model).
#include "des_executor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "megasim/plan/expert_grid.hpp"

namespace megasim {

DesExecutor::DesExecutor(const JobSpec& job, const StepCosts& costs, const StepGraph& graph,
                         const Fabric& fabric, const NcclModel& nccl, const DesOptions& options)
    : job_(job),
      costs_(costs),
      graph_(graph),
      fabric_(fabric),
      nccl_(nccl),
      opts_(options),
      placement_(job.parallel, job.cluster),
      router_(fabric, job.cluster.network.routing, job.cluster.network.ecmp_seed) {
  network_ = std::make_unique<FlowNetwork>(engine_, fabric.link_capacity_Bps());
  runner_ = std::make_unique<CollectiveRunner>(engine_, *network_, router_, fabric_, nccl_);
  replicas_ = options.full ? static_cast<int>(placement_.dp()) : 1;
  choose_mirrored_replicas();
  build_dependents();
  total_ = graph_.tasks.size() * static_cast<std::size_t>(replicas_);
  inst_.assign(total_, {});
  timing_.assign(total_, {});
  collective_ready_count_.assign(graph_.tasks.size(), 0);
  dp_active_.assign(static_cast<std::size_t>(replicas_) * static_cast<std::size_t>(graph_.stages), 0);
  running_.assign(dp_active_.size(), {});
  // Sampling period of the trace's link counters: ~200 samples over a rough step estimate.
  if (!opts_.trace_path.empty()) {
    double est = costs_.data_loading_s + costs_.optimizer_s;
    for (const auto& ch : costs_.chunks.front())
      est += static_cast<double>(costs_.micro_batches + costs_.pp) * (ch.fwd_s() + ch.bwd_s());
    sample_period_s_ = std::max(est / 200.0, 1e-6);
  }
}

void DesExecutor::choose_mirrored_replicas() {
  // Folded runs mirror the pipeline transfers of a deterministic, evenly spaced sample of DP
  // replicas (all of them when DP is small): enough to load every ToR set's uplinks the way
  // the whole job does, without launching DP x TP flows per transfer (4.7 M flows at 12,288
  // GPUs, 30+ s). `full` mirrors nothing and simulates every replica instead.
  const std::int64_t dp = placement_.dp();
  const std::int64_t sample = std::min<std::int64_t>(dp, std::max(1, opts_.mirrored_replicas));
  for (std::int64_t i = 0; i < sample; ++i) mirrored_.push_back(i * dp / sample);
  if (opts_.full || !opts_.isolated_edges) return;
  // The DP rings' edges between GPUs that carry no pipeline transfer (every replica but the
  // mirrored ones) are evaluated in isolation by the runner: at 98,304 GPUs that is 95% of
  // a collective's flows. `full` keeps simulating every flow, so the folding tests also
  // check this shortcut.
  pipeline_gpu_.assign(static_cast<std::size_t>(fabric_.num_gpus()), 0);
  for (const std::int64_t d : mirrored_)
    for (int s = 0; s < placement_.pp(); ++s)
      for (int c = 0; c < placement_.cp(); ++c)
        for (int j = 0; j < placement_.tp(); ++j)
          pipeline_gpu_[static_cast<std::size_t>(placement_.gpu_of({j, c, d, s}))] = 1;
  runner_->enable_isolated_edges([this](int gpu) { return pipeline_gpu_[static_cast<std::size_t>(gpu)] != 0; });
}

void DesExecutor::build_dependents() {
  // The graph's dependencies plus the stream orders (one compute and one DP stream per stage).
  const std::size_t n = graph_.tasks.size();
  dependents_.assign(n, {});
  dep_count_.assign(n, 0);
  for (TaskIndex t = 0; t < n; ++t) {
    for (TaskIndex d : graph_.tasks[t].deps) {
      dependents_[d].push_back(t);
      ++dep_count_[t];
    }
  }
  const auto chain = [&](const std::vector<std::vector<TaskIndex>>& orders) {
    for (const auto& ord : orders)
      for (std::size_t i = 1; i < ord.size(); ++i) {
        dependents_[ord[i - 1]].push_back(ord[i]);
        ++dep_count_[ord[i]];
      }
  };
  chain(graph_.compute_order);
  chain(graph_.dp_order);
}

DesExecutor::~DesExecutor() = default;

void DesExecutor::run() {
  wall_start_ = last_progress_ = std::chrono::steady_clock::now();
  for (int r = 0; r < replicas_; ++r) {
    for (TaskIndex t = 0; t < graph_.tasks.size(); ++t) {
      Instance& in = inst_[idx(r, t)];
      in.waiting = dep_count_[t];
      in.task = engine_.begin_task((replicas_ > 1 ? "replica " + std::to_string(r) + " " : std::string()) +
                                   graph_.describe(t));
    }
  }
  // Start every task without dependencies, in index order (deterministic).
  for (int r = 0; r < replicas_; ++r)
    for (TaskIndex t = 0; t < graph_.tasks.size(); ++t)
      if (inst_[idx(r, t)].waiting == 0) start(r, t);
  if (sample_period_s_ > 0) engine_.schedule_at(SimTime::from_ps(0), [this] { sample_links(); });
  engine_.run();
  engine_.require_all_finished();
  const MaxMinSolver& solver = network_->solver();
  spdlog::debug("des: {} flows ({} collective flows evaluated in isolation), {} max-min solves re-solving {} flows ({:.0f} per solve)",
                network_->flows_completed(), runner_->flows_evaluated_in_isolation(), solver.solves(), solver.flows_resolved(),
                solver.solves() > 0 ? static_cast<double>(solver.flows_resolved()) /
                                          static_cast<double>(solver.solves())
                                    : 0.0);
}

void DesExecutor::start(int r, TaskIndex t) {
  timing_[idx(r, t)].start_s = engine_.now().seconds();
  switch (graph_.tasks[t].stream) {
    case TaskStream::Compute: start_compute(r, t); break;
    case TaskStream::Network: start_transfer(r, t); break;
    case TaskStream::DpComm: collective_ready(r, t); break;
  }
}

void DesExecutor::finish(int r, TaskIndex t) {
  timing_[idx(r, t)].end_s = engine_.now().seconds();
  engine_.end_task(inst_[idx(r, t)].task);
  ++finished_;
  if ((finished_ & 1023U) == 0) report_progress();
  for (TaskIndex u : dependents_[t]) {
    if (--inst_[idx(r, u)].waiting == 0) start(r, u);
  }
}

// Communication kernels running beside compute share SMs and HBM bandwidth: while a DP
// collective of the stage is in flight the pass's kernels (compute_s of its duration) run
// dp_overlap_compute_slowdown slower, for exactly the time the two overlap.
void DesExecutor::start_compute(int r, TaskIndex t) {
  const StepTask& task = graph_.tasks[t];
  const double dur = task.duration_s();
  RunningCompute& rc = running_[slot(r, task.stage)];
  rc.busy = true;
  rc.task = t;
  rc.remaining_s = dur;
  rc.since_s = engine_.now().seconds();
  rc.contended = dur > 0 ? 1.0 + costs_.dp_overlap_compute_slowdown * task.compute_s / dur : 1.0;
  rc.stretch = dp_active_[slot(r, task.stage)] > 0 ? rc.contended : 1.0;
  rc.stretched = rc.stretch != 1.0;
  schedule_compute_finish(r, task.stage);
}

void DesExecutor::schedule_compute_finish(int r, int stage) {
  RunningCompute& rc = running_[slot(r, stage)];
  const TaskIndex t = rc.task;
  rc.finish = engine_.schedule_after(SimTime::from_seconds(rc.remaining_s * rc.stretch),
                                     [this, r, t] { finish_compute(r, t); });
}

void DesExecutor::finish_compute(int r, TaskIndex t) {
  RunningCompute& rc = running_[slot(r, graph_.tasks[t].stage)];
  rc.busy = false;
  rc.finish = kNoEvent;
  TaskTiming& tm = timing_[idx(r, t)];
  // Only a pass that ran beside a collective was slowed (the rest is picosecond rounding).
  if (rc.stretched) {
    tm.slowdown_s = std::max(0.0, engine_.now().seconds() - tm.start_s - graph_.tasks[t].duration_s());
  }
  finish(r, t);
}

void DesExecutor::dp_activity(int r, int stage, int delta) {
  int& active = dp_active_[slot(r, stage)];
  const bool was = active > 0;
  active += delta;
  const bool is = active > 0;
  RunningCompute& rc = running_[slot(r, stage)];
  if (was == is || !rc.busy || rc.contended == 1.0) return;
  // Bring the pass's progress up to now at the old pace, then finish it at the new one.
  const double now = engine_.now().seconds();
  rc.remaining_s = std::max(0.0, rc.remaining_s - (now - rc.since_s) / rc.stretch);
  rc.since_s = now;
  rc.stretch = is ? rc.contended : 1.0;
  rc.stretched = rc.stretched || is;
  engine_.cancel(rc.finish);
  schedule_compute_finish(r, stage);
}

// Flows of one representative transfer from src_stage to dst_stage for DP replica `dp`:
// with scatter-gather (p2p_nics = k > 1) the TP group's message is split over the first k
// TP GPUs' rails; otherwise every TP GPU sends its own p2p_bytes on its own NIC. Every CP
// rank does the same. Each connection is split over the configured queue pairs.
const std::vector<DesExecutor::FlowTemplate>& DesExecutor::transfer_flows(int src_stage, int dst_stage,
                                                                           std::int64_t dp) {
  const auto key = std::make_tuple(src_stage, dst_stage, dp);
  auto it = transfer_cache_.find(key);
  if (it != transfer_cache_.end()) return it->second;
  std::vector<FlowTemplate> flows;
  const int tp = placement_.tp();
  const int k = costs_.p2p_nics > 1 ? std::min(costs_.p2p_nics, tp) : tp;
  const double share = costs_.p2p_nics > 1 ? 1.0 / k : 1.0;
  const int qps = std::max(1, job_.cluster.network.queue_pairs_per_connection);
  const double nic_lat = job_.cluster.network.nic_latency_s;
  for (int c = 0; c < placement_.cp(); ++c) {
    for (int j = 0; j < k; ++j) {
      const int src = placement_.gpu_of({j, c, dp, src_stage});
      const int dst = placement_.gpu_of({j, c, dp, dst_stage});
      const bool inter = fabric_.domain_of_gpu(src) != fabric_.domain_of_gpu(dst);
      for (int q = 0; q < qps; ++q) {
        for (const WeightedPath& wp : router_.paths(src, dst, static_cast<std::uint64_t>(q))) {
          flows.push_back({wp.links, share * wp.weight / qps, wp.latency_s + (inter ? nic_lat : 0.0)});
        }
      }
    }
  }
  return transfer_cache_.emplace(key, std::move(flows)).first->second;
}

void DesExecutor::start_transfer(int r, TaskIndex t) {
  const StepTask& task = graph_.tasks[t];
  if (task.bytes <= 0) {
    engine_.schedule_after(SimTime::from_ps(0), [this, r, t] { finish(r, t); });
    return;
  }
  // Folded: one representative launches the flows of every DP replica and completes with
  // the slowest; full: each replica launches only its own.
  std::size_t count = 0;
  const std::vector<std::int64_t> own{r};
  for (const std::int64_t d : replicas_ > 1 ? own : mirrored_) {
    for (const FlowTemplate& f : transfer_flows(task.stage, task.peer_stage, d)) {
      FlowRequest req;
      req.shared_path = &f.path;  // transfer_flows' cache outlives the run
      req.bytes = task.bytes * f.bytes;
      req.latency_s = f.latency_s;
      req.on_complete = [this, r, t] {
        if (--inst_[idx(r, t)].pending == 0) finish(r, t);
      };
      ++count;
      ++inst_[idx(r, t)].pending;
      network_->start_flow(std::move(req));
    }
  }
  if (count == 0) engine_.schedule_after(SimTime::from_ps(0), [this, r, t] { finish(r, t); });
}

std::vector<std::vector<int>> DesExecutor::dp_groups(int stage, bool expert_dp) const {
  if (expert_dp) return expert_data_parallel_groups(placement_, job_, stage);
  std::vector<std::vector<int>> groups;
  for (int c = 0; c < placement_.cp(); ++c) {
    for (int j = 0; j < placement_.tp(); ++j) {
      std::vector<int> gpus;
      for (std::int64_t d = 0; d < placement_.dp(); ++d) gpus.push_back(placement_.gpu_of({j, c, d, stage}));
      groups.push_back(std::move(gpus));
    }
  }
  return groups;
}

// One plan per DP group of the stage (one per TP/CP rank; expert-DP: one per ETP/EP rank),
// routed and split into simulated and isolated edges once per group: the stage's other DP
// collectives (the buckets, reduce-scatter and all-gather) run the group's first prepared plan
// scaled (size_scale) wherever NCCL's model lowers them alike. Lowered once: every other plan
// is a shift (shifted_plan) of the first lowering, resized (resized_plan) to its op and size.
const std::vector<DesExecutor::ScaledPlan>& DesExecutor::collective_plans(TaskIndex t) {
  const StepTask& task = graph_.tasks[t];
  const auto key = std::make_tuple(task.stage, static_cast<int>(task.kind), task.bytes, task.expert_dp);
  auto it = plan_cache_.find(key);
  if (it != plan_cache_.end()) return it->second;
  std::vector<ScaledPlan> plans;
  std::vector<GroupBase>& bases = group_bases_[{task.stage, task.expert_dp}];
  std::size_t group = 0;
  for (std::vector<int>& gpus : dp_groups(task.stage, task.expert_dp)) {
    CollectiveRequest req;
    req.op = task.kind == TaskKind::DpAllReduce   ? CollOp::AllReduce
             : task.kind == TaskKind::DpAllGather ? CollOp::AllGather
                                                  : CollOp::ReduceScatter;
    req.size_bytes = task.bytes;
    req.gpus = std::move(gpus);
    if (group < bases.size()) {
      const GroupBase& b = bases[group];
      if (const auto k = size_scale(b.header, b.request, req, fabric_.cluster(), nccl_)) {
        plans.push_back({b.prepared, *k});
        ++group;
        continue;
      }
    }
    const CollectivePlan plan = lower_dp(req, task.expert_dp);
    // The ECMP statistics read the flows of one DP collective (every TP / CP rank's group of the
    // first stage): the step's other DP collectives repeat the same rings at other times.
    const auto kind_size = std::make_tuple(static_cast<int>(task.kind), task.bytes);
    if (task.stage == 0 && !task.expert_dp && !dp_keys_source_) dp_keys_source_ = kind_size;
    if (task.stage == 0 && !task.expert_dp && dp_keys_source_ == kind_size && dp_keys_.size() < 200000) {
      if (dp_keys_.empty()) {
        std::size_t flows = 0;
        for (const auto& ph : plan.phases) flows += ph.flows.size();
        dp_keys_.reserve(std::min<std::size_t>(200000, flows * static_cast<std::size_t>(placement_.tp() * placement_.cp())));
      }
      for (const auto& ph : plan.phases)
        for (const auto& f : ph.flows) dp_keys_.push_back({f.src_gpu, f.dst_gpu, f.queue_pair});
    }
    ScaledPlan scaled{runner_->prepare(plan), 1.0};
    if (group >= bases.size()) {
      CollectivePlan header = plan;
      header.phases.clear();
      bases.push_back({std::move(req), std::move(header), scaled.prepared});
    }
    plans.push_back(std::move(scaled));
    ++group;
  }
  return plan_cache_.emplace(key, std::move(plans)).first->second;
}

// The step's first DP (or expert-DP) lowering, shifted onto the request's GPUs and resized to
// its op and size; lowered afresh where that does not hold.
CollectivePlan DesExecutor::lower_dp(const CollectiveRequest& req, bool expert_dp) {
  auto& first = first_dp_[expert_dp ? 1 : 0];
  if (first) {
    const auto& [base_req, base_plan] = *first;
    if (auto moved = resized_plan(base_plan, base_req, req, fabric_.cluster(), nccl_)) return std::move(*moved);
  }
  CollectivePlan plan = lower_collective(req, fabric_.cluster(), nccl_);
  if (!first) first.emplace(req, plan);
  return plan;
}

void DesExecutor::collective_ready(int r, TaskIndex t) {
  // A collective starts once every member has posted it (all replicas in full mode), the
  // slowest member `launch_delay_s` after its dependencies were met.
  if (++collective_ready_count_[t] < replicas_) return;
  const double delay = graph_.tasks[t].launch_delay_s;
  if (delay > 0) {
    engine_.schedule_after(SimTime::from_seconds(delay), [this, t] { start_collective(t); });
  } else {
    start_collective(t);
  }
  (void)r;
}

void DesExecutor::start_collective(TaskIndex t) {
  const StepTask& task = graph_.tasks[t];
  // A collective that moves nothing is not lowered: it must not seed the plans later buckets
  // scale (an empty plan scales to nothing).
  static const std::vector<ScaledPlan> kNone;
  const auto& plans = task.bytes > 0 ? collective_plans(t) : kNone;
  for (int q = 0; q < replicas_; ++q) {
    dp_activity(q, task.stage, +1);
    timing_[idx(q, t)].start_s = engine_.now().seconds();
  }
  auto done = [this, t, stage = task.stage] {
    if (--inst_[idx(0, t)].pending > 0) return;
    for (int q = 0; q < replicas_; ++q) {
      dp_activity(q, stage, -1);
      finish(q, t);
    }
  };
  if (task.bytes <= 0 || plans.empty()) {
    inst_[idx(0, t)].pending = 1;
    engine_.schedule_after(SimTime::from_ps(0), done);
    return;
  }
  inst_[idx(0, t)].pending = static_cast<std::uint32_t>(plans.size());
  const std::string tag = graph_.describe(t);
  for (const ScaledPlan& plan : plans) runner_->start(plan.prepared, tag, done, plan.scale);
}

void DesExecutor::sample_links() {
  LinkSample s;
  s.time_s = engine_.now().seconds();
  const auto& solver = network_->solver();
  for (LinkId l = 0; l < solver.num_links(); ++l) {
    if (solver.flows_on_link(l) == 0) continue;
    const double load = solver.link_load_Bps(l);
    if (load > 0) s.load_Bps.emplace_back(l, load);
  }
  samples_.push_back(std::move(s));
  // Stop once nothing else is pending (step done, or stalled: let the deadlock report fire).
  if (finished_ < total_ && engine_.pending_events() > 0) {
    engine_.schedule_after(SimTime::from_seconds(sample_period_s_), [this] { sample_links(); });
  }
}

void DesExecutor::report_progress() {
  if (!opts_.progress) return;
  const auto now = std::chrono::steady_clock::now();
  const double since_start = std::chrono::duration<double>(now - wall_start_).count();
  const double since_last = std::chrono::duration<double>(now - last_progress_).count();
  if (since_start < 2.0 || since_last < 1.0) return;
  last_progress_ = now;
  opts_.progress("des: " + std::to_string(finished_) + "/" + std::to_string(total_) +
                 " tasks, simulated " + std::to_string(engine_.now().seconds()) + " s, " +
                 std::to_string(network_->flows_completed()) + " flows done");
}

}  // namespace megasim
