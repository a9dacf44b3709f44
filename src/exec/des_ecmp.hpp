#pragma once
// Private: ECMP collision summary of the DP collectives' flows (net/ecmp_stats.hpp reduced
// to the busiest switch tier, for the step report).
#include <vector>

#include "megasim/net/ecmp_stats.hpp"
#include "megasim/net/router.hpp"

namespace megasim {

struct DesEcmpSummary {
  bool valid = false;                 // false when no flow crosses a switch-to-switch link
  double max_flows_per_uplink = 0;    // busiest switch tier
  double mean_flows_per_uplink = 0;
  double max_uplink_load_vs_ideal = 1; // max load under the policy / max load with ideal spray
};

DesEcmpSummary des_ecmp_summary(const Router& router, const std::vector<FlowKey>& flows);

}  // namespace megasim
