#pragma once
// The discrete-event step simulation ("--engine des"): the step's task graph
// (workload/task_graph.hpp) run on the event engine with per-GPU compute and DP streams,
// pipeline transfers as flows over the routed fabric and DP collectives lowered by the coll
// module onto the same flow network, so link sharing and ECMP collisions emerge.
//
// Folding by symmetry (default). TP ranks of a stage do identical work, and so do the DP
// replicas of a pipeline: ONE pipeline replica's compute is simulated, one representative GPU
// per stage. The network is folded less: every pipeline transfer launches the flows of an
// evenly spaced sample of DP replicas (DesOptions::mirrored_replicas, all of them when DP is
// small; every TP/CP rank of the stage) on their own routed paths, and a representative
// transfer completes when the slowest of its mirrored flows completes. This is
// what the real step sees anyway: the replicas re-synchronise at every DP collective and at
// the gradient-norm barrier, so the step waits for the slowest replica. DP collectives run on
// the real DP groups (every TP/CP rank's group of the stage). `full` simulates every DP
// replica's compute and only its own flows; tests show both agree within 0.5%.
//
// Compute running while a DP collective of its stage is in flight is slowed by
// StepCosts::dp_overlap_compute_slowdown (SM/HBM contention; from the hardware profile) for
// exactly the time the two overlap: a pass's finish moves when a collective starts or ends.
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/specs.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/exec/step_costs.hpp"
#include "megasim/net/fabric.hpp"
#include "megasim/net/link.hpp"
#include "megasim/report/step_report.hpp"
#include "megasim/workload/schedule.hpp"

namespace megasim {

class Catalog;

struct DesOptions {
  bool full = false;                 // simulate every DP replica (no folding)
  int mirrored_replicas = 16;        // folded: DP replicas whose pipeline flows are launched
  // Folded: DP-ring edges no other traffic touches are evaluated, not simulated
  // (CollectiveRunner::enable_isolated_edges); exact, so off only to check that it is.
  bool isolated_edges = true;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;  // interleaved when vpp > 1
  std::string trace_path;            // Chrome Trace Event JSON written here when non-empty
  std::size_t busiest_links = 10;    // how many links StepReport::busiest_links lists
  std::size_t trace_counter_links = 8;  // hottest links drawn as counters in the trace
  // Wire bytes per link the step moves outside its simulated flows (an MoE job's dispatch and
  // combine, run on the fabric apart: src/exec/ep_fabric.hpp), added to the link loads of
  // busiest_links.
  std::vector<std::pair<LinkId, double>> external_link_bytes;
  // Called with a progress line when a run takes longer than a couple of seconds.
  std::function<void(const std::string&)> progress;
};

// The dispatcher's entry point: builds the fabric, router and NCCL model from the job and the
// catalog, prices the step's costs on them (an MoE job's dispatch and combine as flows on that
// fabric, src/exec/ep_fabric.hpp) into `costs`, and runs the step. Fills step_time_s,
// breakdown, busiest_links and ecmp, engine = "des".
StepReport simulate_step_des(const JobSpec& job, const Catalog& catalog, const SimulateOptions& options,
                             StepCosts& costs);

// Same on an already built fabric and NCCL model (tests, benchmarks, the planner).
// Throws DeadlockError (sim/task_tracker.hpp) naming unfinished tasks if the graph stalls.
StepReport simulate_step_des(const JobSpec& job, const StepCosts& costs, const Fabric& fabric,
                             const NcclModel& nccl, const DesOptions& options);

}  // namespace megasim
