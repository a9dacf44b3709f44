#pragma once
// How one micro-batch's routed token copies spread over the experts and the expert-parallel
// ranks (DESIGN.md A4 training.moe_*; reference/moe.md section 5). Deterministic per job seed.
#include <cstdint>
#include <vector>

#include "megasim/config/specs.hpp"

namespace megasim {

struct ExpertLoad {
  // Token copies one expert receives per micro-batch on average (over the EP group's tokens:
  // EP x tokens per rank x top-k / experts).
  double mean_tokens_per_expert = 0;
  // The local experts of the most-loaded EP rank, busiest first, as multiples of the mean: the
  // rows its grouped GEMMs run (all 1 under perfect balance).
  std::vector<double> hottest_rank_expert_load;
  double max_to_mean_rank_load = 1;    // the most-loaded rank's received copies / the mean rank's
  // Every EP rank's received copies as multiples of the mean rank's, busiest first (averaged
  // order statistics over the draws; its first entry is max_to_mean_rank_load): the receive
  // side of an all-to-all-v whose per-destination bytes follow the routing.
  std::vector<double> rank_load_profile;
  double max_to_mean_expert_load = 1;  // the busiest expert's copies / the mean expert's
  double dropped_token_fraction = 0;   // copies beyond the capacity factor, dropped
  double routing_cv = 0;               // the coefficient of variation the router was modelled with
};

// The trained router's spread when training.moe_routing_skew is not given (see moe_routing.cpp
// for its source).
double default_routing_skew_cv();

// Token copies this rank routes per micro-batch: its tokens (the SP shard under TP) x top-k.
double routed_copies_per_rank(const JobSpec& job);

// Seeded: per-expert shares drawn log-normal with the routing CV (1 under forced balance),
// per-expert counts with multinomial sampling noise around them, the capacity factor applied
// (and padding to capacity under moe_expert_capacity_factor), averaged over 16 draws.
ExpertLoad expert_load(const JobSpec& job);

// P(a token routes at least one of its top-k copies to `here` of `experts` experts), uniform
// routing: 1 - C(experts - here, k) / C(experts, k).
double reach_probability(double experts, double here, std::int64_t k);

// Expected distinct targets (EP ranks, or nodes) a token's top-k routed copies reach, under
// uniform routing and the model's group-limited routing (moe_routing.cpp says how).
double distinct_targets_per_token(const MoeSpec& moe, int targets);

}  // namespace megasim
