#pragma once
// Private: runs a StepGraph on the engine (see exec/des_step.hpp for the model).
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "megasim/coll/lowering.hpp"
#include "des_ecmp.hpp"
#include "megasim/coll/runner.hpp"
#include "megasim/exec/des_step.hpp"
#include "megasim/net/flow_network.hpp"
#include "megasim/net/router.hpp"
#include "megasim/plan/placement.hpp"
#include "megasim/sim/engine.hpp"
#include "megasim/workload/task_graph.hpp"

namespace megasim {

// Timeline of one task instance (one replica's copy of a graph task).
struct TaskTiming {
  double start_s = -1;
  double end_s = -1;
  double slowdown_s = 0;  // extra compute time from DP contention
};

// A link's load over time, sampled for the trace's counter tracks.
struct LinkSample {
  double time_s = 0;
  std::vector<std::pair<LinkId, double>> load_Bps;  // links with load > 0
};

class DesExecutor {
 public:
  DesExecutor(const JobSpec& job, const StepCosts& costs, const StepGraph& graph,
              const Fabric& fabric, const NcclModel& nccl, const DesOptions& options);
  ~DesExecutor();
  DesExecutor(const DesExecutor&) = delete;
  DesExecutor& operator=(const DesExecutor&) = delete;

  // Runs the step to completion; throws DeadlockError when tasks remain.
  void run();

  int replicas() const { return replicas_; }
  const std::vector<std::int64_t>& mirrored_replicas() const { return mirrored_; }
  const TaskTiming& timing(int replica, TaskIndex t) const {
    return timing_[static_cast<std::size_t>(replica) * graph_.tasks.size() + t];
  }
  const StepGraph& graph() const { return graph_; }
  const FlowNetwork& network() const { return *network_; }
  const Fabric& fabric() const { return fabric_; }
  const Router& router() const { return router_; }
  const Placement& placement() const { return placement_; }
  const std::vector<LinkSample>& link_samples() const { return samples_; }
  // Flow keys of one stage-0 DP collective, every TP / CP rank's group (the ECMP statistics).
  const std::vector<FlowKey>& dp_flow_keys() const { return dp_keys_; }

 private:
  void choose_mirrored_replicas();  // constructor steps
  void build_dependents();
  struct FlowTemplate {
    LinkPath path;
    double bytes = 0;
    double latency_s = 0;
  };
  struct Instance {
    std::uint32_t waiting = 0;  // unfinished dependencies (incl. stream predecessor)
    std::uint32_t pending = 0;  // outstanding flows / collectives while running
    TaskId task = 0;
  };

  // The compute pass running on one (replica, stage). While a DP collective of that stage is
  // in flight the pass's kernels share SMs and HBM with it and advance more slowly; its finish
  // event moves whenever that changes.
  struct RunningCompute {
    bool busy = false;
    TaskIndex task = 0;
    EventId finish = kNoEvent;
    double remaining_s = 0;  // uncontended time still to run
    double since_s = 0;      // when remaining_s was last brought up to date
    double stretch = 1;      // wall seconds per uncontended second now
    double contended = 1;    // stretch while a DP collective runs beside it
    bool stretched = false;  // ran beside a collective at some point
  };

  std::size_t idx(int r, TaskIndex t) const {
    return static_cast<std::size_t>(r) * graph_.tasks.size() + t;
  }
  // Index of one (replica, stage) in dp_active_ and running_.
  std::size_t slot(int r, int stage) const { return static_cast<std::size_t>(r * graph_.stages + stage); }
  void start(int r, TaskIndex t);
  void finish(int r, TaskIndex t);
  void start_compute(int r, TaskIndex t);
  void finish_compute(int r, TaskIndex t);
  void dp_activity(int r, int stage, int delta);  // a DP collective of the stage starts (+1) / ends (-1)
  void schedule_compute_finish(int r, int stage);
  void start_transfer(int r, TaskIndex t);
  void collective_ready(int r, TaskIndex t);
  void start_collective(TaskIndex t);  // every member has posted it: run it on the network
  const std::vector<FlowTemplate>& transfer_flows(int src_stage, int dst_stage, std::int64_t dp);
  // A prepared DP plan and the factor its bytes run at (CollectiveRunner::start's scale).
  struct ScaledPlan {
    std::shared_ptr<const CollectiveRunner::Prepared> prepared;
    double scale = 1;
  };
  // Per stage and DP group, the first plan prepared: the request, its plan without flows
  // (what size_scale compares) and the prepared plan later buckets scale.
  struct GroupBase {
    CollectiveRequest request;
    CollectivePlan header;
    std::shared_ptr<const CollectiveRunner::Prepared> prepared;
  };
  const std::vector<ScaledPlan>& collective_plans(TaskIndex t);
  CollectivePlan lower_dp(const CollectiveRequest& req, bool expert_dp);
  // The GPUs of each group a DP collective of `stage` runs on: one DP group per TP / CP rank,
  // or one expert-DP group per ETP / EP rank.
  std::vector<std::vector<int>> dp_groups(int stage, bool expert_dp) const;
  void sample_links();
  void report_progress();

  const JobSpec& job_;
  const StepCosts& costs_;
  const StepGraph& graph_;
  const Fabric& fabric_;
  const NcclModel& nccl_;
  const DesOptions& opts_;
  Placement placement_;
  Router router_;
  Engine engine_;
  std::unique_ptr<FlowNetwork> network_;
  std::unique_ptr<CollectiveRunner> runner_;
  int replicas_ = 1;
  std::vector<std::int64_t> mirrored_;  // DP replicas whose transfers a folded run launches

  std::vector<std::vector<TaskIndex>> dependents_;  // graph-level, incl. stream successors
  std::vector<std::uint32_t> dep_count_;
  std::vector<Instance> inst_;
  std::vector<TaskTiming> timing_;
  std::vector<int> collective_ready_count_;          // per graph task (full mode barrier)
  std::vector<int> dp_active_;                        // [replica * stages + stage]
  std::vector<RunningCompute> running_;               // [replica * stages + stage]
  std::map<std::tuple<int, int, std::int64_t>, std::vector<FlowTemplate>> transfer_cache_;
  // (stage, kind, bytes, expert-DP)
  std::map<std::tuple<int, int, double, bool>, std::vector<ScaledPlan>> plan_cache_;
  std::map<std::pair<int, bool>, std::vector<GroupBase>> group_bases_;  // per (stage, expert-DP)
  // The first DP (and expert-DP) collective lowered: the others are shifts of it, resized (lower_dp).
  std::optional<std::pair<CollectiveRequest, CollectivePlan>> first_dp_[2];
  std::vector<char> pipeline_gpu_;  // folded runs: GPUs whose ports carry pipeline transfers
  std::vector<FlowKey> dp_keys_;
  std::optional<std::tuple<int, double>> dp_keys_source_;  // the (kind, bytes) dp_keys_ come from
  std::vector<LinkSample> samples_;
  double sample_period_s_ = 0;
  std::size_t finished_ = 0;
  std::size_t total_ = 0;
  std::chrono::steady_clock::time_point wall_start_;
  std::chrono::steady_clock::time_point last_progress_;
};

}  // namespace megasim
