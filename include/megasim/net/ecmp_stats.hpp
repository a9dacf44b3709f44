#pragma once
// ECMP collision statistics: how many flows land on each switch uplink under a Router's
// policy, compared with (a) the balls-into-bins expectation for an ideal random hash and
// (b) the ideal-spray baseline (fractional loads, every flow split evenly per hop).
//
// Balls-into-bins model: at switch s, the n_s flows that leave it upward are thrown
// independently and uniformly into its k_s uplinks of that tier. Then
//   expected idle fraction = sum_s k_s (1 - 1/k_s)^n_s / sum_s k_s     (~ e^{-n/k})
//   E[max load] = sum_{t>=1} P(max >= t),  P(max < t) ~= prod_s P(Bin(n_s, 1/k_s) < t)^k_s
// (the product treats the bins as independent: the usual Poisson-style approximation).
#include <cstdint>
#include <vector>

#include "megasim/core/zeroed_array.hpp"

#include "megasim/net/fabric.hpp"
#include "megasim/net/router.hpp"

namespace megasim {

struct FlowKey {
  int src_gpu = 0;
  int dst_gpu = 0;
  std::uint64_t queue_pair = 0;
};

// Load statistics of the up-direction links of one switch tier (a LinkKind between switches).
struct UplinkTierStats {
  LinkKind kind = LinkKind::TorAgg;
  std::size_t num_links = 0;        // up-direction links of this kind in the fabric
  double total_load = 0;            // sum over links of the flows crossing them
  double mean_load = 0;             // total_load / num_links
  double max_load = 0;
  double p99_load = 0;              // nearest-rank 99th percentile over links
  double idle_fraction = 0;         // links carrying no flow
  double expected_max_load = 0;     // balls-into-bins (ideal random hash), see above
  double expected_idle_fraction = 0;
  double spray_mean_load = 0;       // ideal-spray baseline on the same flows
  double spray_max_load = 0;
};

struct EcmpStats {
  std::vector<UplinkTierStats> tiers;   // switch-link kinds present in the fabric, enum order
  // Per LinkId, counting only flows whose route crosses a switch-to-switch link (the others
  // load no uplink): the loads on NIC and NVLink ports are not collected.
  // Zero until written, without touching the memory: a 100,000-GPU fabric has a million link
  // directions, of which only the switch links are ever written here.
  ZeroedArray<double> link_load;        // per LinkId, under the router's policy
  ZeroedArray<double> spray_link_load;  // per LinkId, ideal spray
};

// Loads every flow through `router` (weights add up per link) and an ideal-spray router on
// the same fabric.
EcmpStats ecmp_collision_stats(const Router& router, const std::vector<FlowKey>& flows);

// P(X <= x) for X ~ Binomial(n, p), 0 <= p <= 1 (log-space terms: no underflow for large n).
double binomial_cdf(std::int64_t n, double p, std::int64_t x);

}  // namespace megasim
