#pragma once
// Simulated collectives: starts a lowered collective's flows on the engine's flow network,
// phase after phase, and calls on_done when the last flow of the last phase completes.
//
// Paths are built once per (src, dst, queue pair) and reused, so thousands of concurrent
// collectives over 1536-rank groups (every DP group of a 12,288-GPU step) cost one routing
// per distinct connection. The transport efficiencies enter as wire bytes (lowering.hpp),
// so link capacities stay the fabric's physical ones.
//
// Isolated flows (off unless enabled): at 100,000 GPUs a DP ring has tens of thousands of
// edges, and all but the few that leave a ToR or an NVLink domain run NIC -> ToR -> NIC (or
// GPU -> NVSwitch -> GPU) on links nothing else touches. Such an edge's copies get exactly
// the max-min rate they would get alone - the bottleneck capacity over the number of copies -
// so the runner computes their completion instead of simulating them flow by flow, and the
// phase ends with the later of its simulated flows and that time. The caller vouches for the
// "nothing else": a predicate names the GPUs some other traffic of the run may touch, and one
// NIC per GPU is required (see enable_isolated_edges).
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "megasim/coll/lowering.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/net/fabric.hpp"
#include "megasim/net/flow_network.hpp"
#include "megasim/net/router.hpp"
#include "megasim/sim/engine.hpp"

namespace megasim {

class CollectiveRunner {
 public:
  CollectiveRunner(Engine& engine, FlowNetwork& network, const Router& router, const Fabric& fabric,
                   const NcclModel& model);
  ~CollectiveRunner();
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  // Lowers and starts the collective now; on_done runs (as an engine event) when it ends.
  // The collective is an engine task named after req.tag, for the deadlock report.
  void start(const CollectiveRequest& req, std::function<void()> on_done);
  // Same with an already lowered plan (callers that start the same collective many times).
  void start(const CollectivePlan& plan, const std::string& tag, std::function<void()> on_done);

  // A plan routed and split into simulated and isolated edges once, for callers that start
  // the same collective many times (the DP buckets of a step). Valid while the runner lives.
  // `scale` multiplies every flow's bytes: a plan prepared at one size runs another size of the
  // same lowering (size_scale in lowering.hpp gives the factor).
  struct Prepared;
  std::shared_ptr<const Prepared> prepare(const CollectivePlan& plan);
  void start(const std::shared_ptr<const Prepared>& plan, const std::string& tag, std::function<void()> on_done,
             double scale = 1.0);

  // Evaluates isolated edges instead of simulating them (see the top of this file).
  // `touched_elsewhere(gpu)` must be true for every GPU whose NIC or NVLink ports other
  // traffic may use while a collective of this runner is in flight (pipeline transfers,
  // another collective over the same GPU). Only flows on switch-free routes
  // (Router::direct_path) between two untouched GPUs, on a fabric with one NIC per GPU,
  // qualify; a rail-only relay must stay inside the collective's own group (true of groups
  // laid out alike on every node).
  void enable_isolated_edges(std::function<bool(int gpu)> touched_elsewhere);

  std::size_t cached_paths() const { return path_cache_.size(); }
  std::uint64_t collectives_started() const { return started_; }
  std::uint64_t flows_simulated() const { return flows_simulated_; }
  std::uint64_t flows_evaluated_in_isolation() const { return flows_isolated_; }

 private:
  struct Running;
  struct Key {
    int src;
    int dst;
    std::uint64_t qp;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };

  const std::vector<WeightedPath>& paths(int src, int dst, std::uint64_t qp);
  void start_phase(const std::shared_ptr<Running>& run);
  bool may_isolate(int src, int dst) const;
  void flow_done(const std::shared_ptr<Running>& run);

  Engine& engine_;
  FlowNetwork& network_;
  const Router& router_;
  const Fabric& fabric_;
  const NcclModel& model_;
  std::unordered_map<Key, std::vector<WeightedPath>, KeyHash> path_cache_;
  std::function<bool(int)> touched_elsewhere_;  // empty: every flow is simulated
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;            // prepare()'s working arrays
  std::uint64_t started_ = 0;
  std::uint64_t flows_simulated_ = 0;
  std::uint64_t flows_isolated_ = 0;
};

}  // namespace megasim
