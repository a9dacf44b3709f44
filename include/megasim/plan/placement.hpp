#pragma once
// Rank placement: which GPU (and so which node and ToR set) runs each (tp, cp, dp, pp)
// coordinate, and the process groups that follow.
//
// Ranks are laid out on GPUs in order (rank r runs on GPU r, GPU g sits on node
// g / gpus_per_node), so the order of the parallel dimensions decides what shares a node:
//
//  * DpFirst: innermost to outermost tp, cp, dp, pp:
//        rank = tp + T * (cp + C * (dp + D * pp))
//    This is Megatron-LM's default rank order ("tp-cp-ep-dp-pp") and what MegaScale §3.2
//    describes ("prioritize building the data parallelism groups over pipeline
//    parallelism"): the DP replicas of one stage sit on consecutive nodes, so DP collectives
//    stay under as few ToR sets as possible and PP traffic crosses the higher tiers.
//  * PpFirst: innermost to outermost tp, cp, pp, dp:
//        rank = tp + T * (cp + C * (pp + P * dp))
//    Megatron's --use-tp-pp-dp-mapping order ("tp-cp-ep-pp-dp"): one pipeline replica sits
//    on consecutive nodes, so stage-to-stage traffic stays local and DP groups are spread.
//
// TP is always innermost, so a TP group that divides the NVLink domain shares one domain (NVLink).
#include <cstdint>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"

namespace megasim {

struct RankCoord {
  int tp = 0;
  int cp = 0;
  std::int64_t dp = 0;
  int pp = 0;
  friend bool operator==(const RankCoord&, const RankCoord&) = default;
};

class Placement {
 public:
  // Throws InputError when the degrees do not tile the cluster (TP*CP*PP*DP != num_gpus) or
  // when a TP group would straddle NVLink domains (TP must divide the domain or be a multiple of it).
  Placement(const ParallelSpec& parallel, const ClusterSpec& cluster);

  int tp() const { return tp_; }
  int cp() const { return cp_; }
  int pp() const { return pp_; }
  std::int64_t dp() const { return dp_; }
  std::int64_t world_size() const { return world_; }
  int gpus_per_node() const { return gpus_per_node_; }
  PlacementOrder order() const { return order_; }

  RankCoord coord_of(std::int64_t rank) const;
  std::int64_t rank_of(const RankCoord& c) const;
  // Global GPU id running `rank` (identity: ranks fill GPUs in order).
  int gpu_of(const RankCoord& c) const { return static_cast<int>(rank_of(c)); }
  int node_of_gpu(int gpu) const { return gpu / gpus_per_node_; }
  // ToR set under which the node's NICs sit (rail-optimised Clos: node / servers_per_tor);
  // -1 when the cluster does not say how many servers share a ToR set.
  int tor_set_of_gpu(int gpu) const;

  // Group members (global ranks) in the order of the group's own rank numbering.
  std::vector<std::int64_t> tp_group(std::int64_t rank) const;
  std::vector<std::int64_t> cp_group(std::int64_t rank) const;
  std::vector<std::int64_t> dp_group(std::int64_t rank) const;
  std::vector<std::int64_t> pp_group(std::int64_t rank) const;

 private:
  int tp_ = 1, cp_ = 1, pp_ = 1;
  std::int64_t dp_ = 1;
  std::int64_t world_ = 1;
  int gpus_per_node_ = 1;
  int servers_per_tor_ = 0;
  PlacementOrder order_ = PlacementOrder::DpFirst;
};

// The rank -> coordinates -> GPU -> node -> ToR set table (what `megasim explain` prints).
// Shows the first `max_rows` ranks and the last few when the world is larger, with an
// ellipsis line between them.
std::string render_placement_table(const Placement& placement, std::int64_t max_rows = 64);

}  // namespace megasim
