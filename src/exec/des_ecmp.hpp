#pragma once
// Private: ECMP collision summary of the DP collectives' flows. Kept in its own translation
// unit so the per-tier statistics types of net/ecmp_stats.hpp stay out of the executor.
#include <cstdint>
#include <vector>

#include "megasim/net/router.hpp"

namespace megasim {

struct DesFlowKey {
  int src_gpu = 0;
  int dst_gpu = 0;
  std::uint64_t queue_pair = 0;
};

struct DesEcmpSummary {
  bool valid = false;                 // false when no flow crosses a switch-to-switch link
  double max_flows_per_uplink = 0;    // busiest switch tier
  double mean_flows_per_uplink = 0;
  double max_uplink_load_vs_ideal = 1; // max load under the policy / max load with ideal spray
};

DesEcmpSummary des_ecmp_summary(const Router& router, const std::vector<DesFlowKey>& flows);

}  // namespace megasim
