// Where the step's time goes, read off the critical rank's compute-stream timeline.
//
// Every instant of [0, step end] on the critical stage's compute stream is either a task
// (its compute, exposed TP/CP, launch/straggler "other", data loading, optimizer, DP
// contention slow-down) or a gap before a task. A gap is blamed on the dependency that
// arrived last: a pipeline transfer makes the part of the gap during which the transfer was
// on the wire exposed PP time and the rest (waiting for the producing stage) pipeline bubble;
// a DP collective likewise makes the part of the gap after its inputs were ready exposed DP
// time and the rest (it could not start before another stage drained) bubble; another
// stage's compute (fill/drain, or the gradient-norm barrier before the optimizer) makes it
// bubble. The parts add up to the step.
#include <algorithm>
#include <cmath>
#include <map>

#include "des_ecmp.hpp"
#include "des_report.hpp"

namespace megasim {

namespace {

struct Critical {
  int replica = 0;
  int stage = 0;
  double end_s = 0;
};

Critical find_critical(const DesExecutor& ex) {
  const StepGraph& g = ex.graph();
  Critical best;
  double best_busy = -1;
  for (int r = 0; r < ex.replicas(); ++r) {
    for (int s = 0; s < g.stages; ++s) {
      const auto& ord = g.compute_order[static_cast<std::size_t>(s)];
      const double end = ex.timing(r, ord.back()).end_s;
      double busy = 0;
      for (TaskIndex t : ord) busy += ex.timing(r, t).end_s - ex.timing(r, t).start_s;
      // Latest end wins; among equal ends (the optimizer barrier) the busiest stage.
      if (end > best.end_s + 1e-15 || (end >= best.end_s - 1e-15 && busy > best_busy + 1e-15)) {
        best = {r, s, end};
        best_busy = busy;
      }
    }
  }
  return best;
}

// Splits a gap that a communication task ending at end_s closed: the part after from_s (when the
// communication could run) is exposed communication, the rest is pipeline bubble.
void split_gap(double gap_s, double from_s, double end_s, double prev_end_s, double& exposed_s,
               StepBreakdown& b) {
  const double comm_s = std::min(gap_s, std::max(0.0, end_s - std::max(from_s, prev_end_s)));
  exposed_s += comm_s;
  b.pipeline_bubble_s += gap_s - comm_s;
}

void attribute_gap(const DesExecutor& ex, int r, TaskIndex t, double gap_s, double prev_end_s,
                   StepBreakdown& b) {
  const StepGraph& g = ex.graph();
  TaskIndex binding = t;
  double latest = -1;
  for (TaskIndex d : g.tasks[t].deps) {
    if (ex.timing(r, d).end_s > latest) {
      latest = ex.timing(r, d).end_s;
      binding = d;
    }
  }
  if (binding == t) {  // nothing but the stream: cannot happen with a gap; count as other
    b.other_s += gap_s;
    return;
  }
  const StepTask& dep = g.tasks[binding];
  const TaskTiming& x = ex.timing(r, binding);
  if (dep.kind == TaskKind::PpTransfer) {
    split_gap(gap_s, x.start_s, x.end_s, prev_end_s, b.exposed_pp_comm_s, b);  // on the wire
  } else if (is_dp_collective(dep.kind)) {
    // Only the part of the gap after the collective's own inputs were ready counts as DP: from
    // then on the rank waits for DP traffic (this collective, an earlier one ahead of it on the
    // DP stream, or a late-posting member: GC skew). Before that it waited for what the
    // collective itself waited for (another stage's drain): pipeline bubble.
    double ready_s = x.start_s - dep.launch_delay_s;
    if (!dep.deps.empty()) {
      ready_s = 0;
      for (TaskIndex d : dep.deps) ready_s = std::max(ready_s, ex.timing(r, d).end_s);
    }
    split_gap(gap_s, ready_s, x.end_s, prev_end_s, b.exposed_dp_comm_s, b);
  } else {
    b.pipeline_bubble_s += gap_s;
  }
}

// The k links that carried the most bytes: the simulated flows' plus the traffic priced apart.
// Every link of the external traffic competes with its simulated bytes added; any other link
// has only simulated bytes, so the network's own top k covers it. Ties list by link id.
std::vector<std::pair<LinkId, double>> busiest_links(const FlowNetwork& net,
                                                     const std::vector<std::pair<LinkId, double>>& external,
                                                     std::size_t k) {
  if (external.empty()) return net.busiest_links(k);
  std::map<LinkId, double> load;
  for (const auto& [link, bytes] : net.busiest_links(k)) load[link] = bytes;
  for (const auto& [link, bytes] : external) load[link] = net.link_bytes(link) + bytes;
  std::vector<std::pair<LinkId, double>> all(load.begin(), load.end());
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return std::round(a.second) > std::round(b.second);
  });
  if (all.size() > k) all.resize(k);
  return all;
}

}  // namespace

StepReport summarize_des_run(const DesExecutor& ex, const DesOptions& options) {
  const StepGraph& g = ex.graph();
  const Critical crit = find_critical(ex);
  StepReport rep;
  rep.engine = "des";
  StepBreakdown& b = rep.breakdown;
  double prev_end = 0;
  for (TaskIndex t : g.compute_order[static_cast<std::size_t>(crit.stage)]) {
    const TaskTiming& tm = ex.timing(crit.replica, t);
    const double gap = tm.start_s - prev_end;
    if (gap > 0) attribute_gap(ex, crit.replica, t, gap, prev_end, b);
    const StepTask& task = g.tasks[t];
    b.compute_s += task.compute_s;
    b.exposed_tp_comm_s += task.tp_exposed_s;
    b.exposed_cp_comm_s += task.cp_exposed_s;
    b.exposed_ep_comm_s += task.ep_exposed_s;
    b.exposed_pp_comm_s += task.pp_wait_s;
    b.other_s += task.other_s;
    b.straggler_s += task.straggler_s;
    b.exposed_dp_comm_s += tm.slowdown_s;
    if (task.kind == TaskKind::DataLoad) b.data_loading_s += task.fixed_s;
    if (task.kind == TaskKind::Optimizer) b.optimizer_s += task.fixed_s;
    prev_end = tm.end_s;
  }
  rep.step_time_s = crit.end_s;
  // Integer-picosecond rounding of many task ends: put the residue (< 1 ns) in "other".
  b.other_s += rep.step_time_s - b.total_s();
  b.straggler_s = std::max(0.0, std::min(b.straggler_s, b.other_s));  // still a part of "other"

  const FlowNetwork& net = ex.network();
  const auto& caps = ex.fabric().link_capacity_Bps();
  for (const auto& [link, bytes] : busiest_links(net, options.external_link_bytes, options.busiest_links)) {
    LinkLoad ll;
    ll.link = ex.fabric().link_name(link);
    ll.bytes = bytes;
    ll.utilization = rep.step_time_s > 0 ? bytes / (caps[link] * rep.step_time_s) : 0.0;
    rep.busiest_links.push_back(ll);
  }
  const DesEcmpSummary ecmp = des_ecmp_summary(ex.router(), ex.dp_flow_keys());
  if (ecmp.valid) {
    StepEcmpSummary e;
    e.max_flows_per_uplink = ecmp.max_flows_per_uplink;
    e.mean_flows_per_uplink = ecmp.mean_flows_per_uplink;
    e.max_uplink_load_vs_ideal = ecmp.max_uplink_load_vs_ideal;
    rep.ecmp = e;
  }
  return rep;
}

}  // namespace megasim
