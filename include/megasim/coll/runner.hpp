#pragma once
// Simulated collectives: starts a lowered collective's flows on the engine's flow network,
// phase after phase, and calls on_done when the last flow of the last phase completes.
//
// Paths are built once per (src, dst, queue pair) and reused, so thousands of concurrent
// collectives over 1536-rank groups (every DP group of a 12,288-GPU step) cost one routing
// per distinct connection. The transport efficiencies enter as wire bytes (lowering.hpp),
// so link capacities stay the fabric's physical ones.
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
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  // Lowers and starts the collective now; on_done runs (as an engine event) when it ends.
  // The collective is an engine task named after req.tag, for the deadlock report.
  void start(const CollectiveRequest& req, std::function<void()> on_done);
  // Same with an already lowered plan (callers that start the same collective many times).
  void start(const CollectivePlan& plan, const std::string& tag, std::function<void()> on_done);

  std::size_t cached_paths() const { return path_cache_.size(); }
  std::uint64_t collectives_started() const { return started_; }

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
  void flow_done(const std::shared_ptr<Running>& run);

  Engine& engine_;
  FlowNetwork& network_;
  const Router& router_;
  const Fabric& fabric_;
  const NcclModel& model_;
  std::unordered_map<Key, std::vector<WeightedPath>, KeyHash> path_cache_;
  std::uint64_t started_ = 0;
};

}  // namespace megasim
