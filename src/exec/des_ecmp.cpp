#include "des_ecmp.hpp"

#include <algorithm>

namespace megasim {

// The time of a bandwidth-bound collective scales with its most loaded link, so the ratio of
// the busiest uplink's flow count under ECMP to the same under ideal spray is the static
// estimate of how much longer hashing makes the DP collectives.
DesEcmpSummary des_ecmp_summary(const Router& router, const std::vector<FlowKey>& flows) {
  DesEcmpSummary out;
  if (flows.empty()) return out;
  const EcmpStats st = ecmp_collision_stats(router, flows);
  for (const auto& tier : st.tiers) {
    if (tier.total_load <= 0) continue;
    if (!out.valid || tier.max_load > out.max_flows_per_uplink) {
      out.valid = true;
      out.max_flows_per_uplink = tier.max_load;
      out.mean_flows_per_uplink = tier.mean_load;
      out.max_uplink_load_vs_ideal =
          tier.spray_max_load > 0 ? std::max(1.0, tier.max_load / tier.spray_max_load) : 1.0;
    }
  }
  return out;
}

}  // namespace megasim
