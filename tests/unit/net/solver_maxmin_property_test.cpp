// Randomised (seeded) checks of the max-min optimality conditions and of incremental
// solving against a from-scratch solve.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "megasim/core/rng.hpp"
#include "megasim/core/units.hpp"
#include "megasim/net/maxmin_solver.hpp"

namespace megasim {
namespace {

struct FlowSpec {
  LinkPath path;
  double cap_Bps;
  int multiplicity;
};

FlowSpec random_flow(Rng& rng, std::size_t num_links, std::uint64_t max_len = 5) {
  FlowSpec spec;
  const std::uint64_t len = 1 + rng.below(max_len);
  while (spec.path.size() < len) {
    const auto link = static_cast<LinkId>(rng.below(num_links));
    if (std::find(spec.path.begin(), spec.path.end(), link) == spec.path.end()) {
      spec.path.push_back(link);
    }
  }
  spec.cap_Bps = rng.uniform() < 0.3 ? 1.0 + 20.0 * rng.uniform() : MaxMinSolver::kUnlimited;
  spec.multiplicity = 1 + static_cast<int>(rng.below(4));
  return spec;
}

// Max-min conditions: feasibility, and every flow is at its cap or crosses a saturated link
// on which no flow gets more than it does.
void check_maxmin(const MaxMinSolver& s, const std::vector<FlowHandle>& flows) {
  constexpr double kTol = 1e-7;
  std::vector<double> max_rate(s.num_links(), 0.0);
  for (const FlowHandle& h : flows) {
    for (LinkId l : s.path(h)) max_rate[l] = std::max(max_rate[l], s.rate_Bps(h));
  }
  for (LinkId l = 0; l < s.num_links(); ++l) {
    ASSERT_LE(s.link_load_Bps(l), s.link_capacity_Bps(l) * (1 + kTol) + kTol) << "link " << l;
  }
  for (const FlowHandle& h : flows) {
    const double rate = s.rate_Bps(h);
    if (nearly_equal(rate, s.cap_Bps(h), kTol)) continue;
    ASSERT_LT(rate, s.cap_Bps(h));
    bool bottlenecked = false;
    for (LinkId l : s.path(h)) {
      const bool saturated = nearly_equal(s.link_load_Bps(l), s.link_capacity_Bps(l), kTol);
      if (saturated && rate >= max_rate[l] * (1 - kTol)) bottlenecked = true;
    }
    ASSERT_TRUE(bottlenecked) << "flow in slot " << h.slot << " rate " << rate;
  }
}

TEST(MaxMinProperty, RandomInstancesSatisfyMaxMinConditions) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    const std::size_t num_links = 5 + rng.below(40);
    std::vector<double> caps(num_links);
    for (double& c : caps) c = 10.0 + 90.0 * rng.uniform();
    MaxMinSolver s(caps);
    std::vector<FlowHandle> flows;
    const std::uint64_t n = 1 + rng.below(200);
    for (std::uint64_t i = 0; i < n; ++i) {
      const FlowSpec f = random_flow(rng, num_links);
      flows.push_back(s.add_flow(f.path, f.cap_Bps, f.multiplicity));
    }
    s.solve();
    SCOPED_TRACE(seed);
    check_maxmin(s, flows);
  }
}

TEST(MaxMinProperty, IncrementalMatchesFromScratch) {
  Rng rng(77);
  const std::size_t num_links = 60;
  std::vector<double> caps(num_links);
  for (double& c : caps) c = 10.0 + 90.0 * rng.uniform();
  MaxMinSolver inc(caps);
  std::vector<FlowHandle> handles;
  std::vector<FlowSpec> specs;
  for (int round = 0; round < 40; ++round) {
    // Random churn, solving after each batch; sparse paths keep several components.
    for (int i = 0; i < 8; ++i) {
      if (!handles.empty() && rng.uniform() < 0.4) {
        const std::size_t victim = rng.below(handles.size());
        inc.remove_flow(handles[victim]);
        handles.erase(handles.begin() + static_cast<std::ptrdiff_t>(victim));
        specs.erase(specs.begin() + static_cast<std::ptrdiff_t>(victim));
      } else {
        const FlowSpec f = random_flow(rng, num_links, 2);
        handles.push_back(inc.add_flow(f.path, f.cap_Bps, f.multiplicity));
        specs.push_back(f);
      }
    }
    inc.solve();
    MaxMinSolver fresh(caps);
    std::vector<FlowHandle> fresh_handles;
    for (const FlowSpec& f : specs) {
      fresh_handles.push_back(fresh.add_flow(f.path, f.cap_Bps, f.multiplicity));
    }
    fresh.solve();
    for (std::size_t i = 0; i < handles.size(); ++i) {
      ASSERT_TRUE(nearly_equal(inc.rate_Bps(handles[i]), fresh.rate_Bps(fresh_handles[i]), 1e-7))
          << "round " << round << " flow " << i << ": " << inc.rate_Bps(handles[i]) << " vs "
          << fresh.rate_Bps(fresh_handles[i]);
    }
    check_maxmin(inc, handles);
  }
}

TEST(MaxMinProperty, DeterministicAcrossRuns) {
  auto run = [] {
    Rng rng(5);
    std::vector<double> caps(30);
    for (double& c : caps) c = 1.0 + rng.uniform();
    MaxMinSolver s(caps);
    std::vector<FlowHandle> flows;
    for (int i = 0; i < 300; ++i) {
      const FlowSpec f = random_flow(rng, caps.size());
      flows.push_back(s.add_flow(f.path, f.cap_Bps, f.multiplicity));
    }
    s.solve();
    std::vector<double> rates;
    for (const FlowHandle& h : flows) rates.push_back(s.rate_Bps(h));
    return rates;
  };
  EXPECT_EQ(run(), run());  // bitwise equal
}

}  // namespace
}  // namespace megasim
