// ECMP collision statistics against balls-into-bins and ideal spray (ecmp_stats.hpp).
#include "megasim/net/ecmp_stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

namespace megasim {
namespace {

// CDF of Binomial(n, p) at 0..n, from log-space pmf terms.
std::vector<double> binomial_cdf_table(std::int64_t n, double p) {
  std::vector<double> cdf(static_cast<std::size_t>(n) + 1, 1.0);
  if (p <= 0.0) return cdf;
  if (p >= 1.0) {
    std::fill(cdf.begin(), cdf.end() - 1, 0.0);
    return cdf;
  }
  const double nd = static_cast<double>(n);
  const double log_p = std::log(p);
  const double log_q = std::log1p(-p);
  double sum = 0;
  for (std::int64_t x = 0; x <= n; ++x) {
    const double xd = static_cast<double>(x);
    sum += std::exp(std::lgamma(nd + 1) - std::lgamma(xd + 1) - std::lgamma(nd - xd + 1) +
                    xd * log_p + (nd - xd) * log_q);
    cdf[static_cast<std::size_t>(x)] = std::min(1.0, sum);
  }
  cdf.back() = 1.0;
  return cdf;
}

struct Bins {
  std::int64_t balls = 0;  // n_s
  std::int64_t bins = 0;   // k_s
};

// Balls-into-bins expectations over independent groups (one per switch).
void balls_into_bins(const std::vector<Bins>& groups, UplinkTierStats& s) {
  // Identical (n, k) groups share one CDF table; `weight` counts their bins in total.
  std::map<std::pair<std::int64_t, std::int64_t>, double> weight;
  double idle = 0, all_bins = 0;
  std::int64_t max_balls = 0;
  for (const Bins& g : groups) {
    const double k = static_cast<double>(g.bins);
    weight[{g.balls, g.bins}] += k;
    idle += k * std::pow(1.0 - 1.0 / k, static_cast<double>(g.balls));
    all_bins += k;
    max_balls = std::max(max_balls, g.balls);
  }
  s.expected_idle_fraction = all_bins > 0 ? idle / all_bins : 0;
  std::vector<std::pair<std::vector<double>, double>> tables;
  for (const auto& [nk, w] : weight) {
    tables.emplace_back(binomial_cdf_table(nk.first, 1.0 / static_cast<double>(nk.second)), w);
  }
  double expected_max = 0;
  for (std::int64_t t = 1; t <= max_balls; ++t) {
    double log_all_below = 0;  // log P(every bin < t)
    for (const auto& [cdf, w] : tables) {
      const auto below = static_cast<std::size_t>(t - 1);
      const double f = below < cdf.size() ? cdf[below] : 1.0;
      log_all_below += f > 0 ? w * std::log(f) : -INFINITY;
    }
    expected_max += 1.0 - std::exp(log_all_below);
  }
  s.expected_max_load = expected_max;
}

}  // namespace

double binomial_cdf(std::int64_t n, double p, std::int64_t x) {
  if (x < 0) return 0.0;
  if (x >= n) return 1.0;
  return binomial_cdf_table(n, p)[static_cast<std::size_t>(x)];
}

EcmpStats ecmp_collision_stats(const Router& router, const std::vector<FlowKey>& flows) {
  const Fabric& fabric = router.fabric();
  const std::size_t num_links = fabric.num_links();
  EcmpStats out;
  out.link_load = ZeroedArray<double>(num_links);
  out.spray_link_load = ZeroedArray<double>(num_links);
  const Router spray(router, Routing::IdealSpray);
  std::array<LinkId, 4> direct{};
  int length = 0;
  // Ideal spray splits a transfer over the switches by its two ToRs alone (the GPUs only add
  // their own NIC hops, which no statistic below reads), so it is computed once per ToR pair.
  const bool by_tor_pair = fabric.topology() != Topology::RailOnly;
  std::map<std::pair<int, int>, std::pair<FlowKey, double>> spray_pairs;
  for (const FlowKey& f : flows) {
    // A switch-free route loads no uplink, which is all the statistics below look at.
    if (router.direct_path(f.src_gpu, f.dst_gpu, direct, length)) continue;
    for (const WeightedPath& p : router.paths(f.src_gpu, f.dst_gpu, f.queue_pair)) {
      for (LinkId l : p.links) out.link_load[l] += p.weight;
    }
    if (by_tor_pair) {
      auto [it, fresh] = spray_pairs.try_emplace({fabric.tor_of_gpu(f.src_gpu), fabric.tor_of_gpu(f.dst_gpu)}, f, 0.0);
      it->second.second += 1.0;
      continue;
    }
    for (const LinkShare& s : spray.link_shares(f.src_gpu, f.dst_gpu, f.queue_pair)) {
      out.spray_link_load[s.link] += s.fraction;
    }
  }
  for (const auto& [tors, rep] : spray_pairs) {
    const FlowKey& f = rep.first;
    for (const LinkShare& s : spray.link_shares(f.src_gpu, f.dst_gpu, f.queue_pair)) {
      if (is_switch_link(fabric.link_kind(s.link))) out.spray_link_load[s.link] += s.fraction * rep.second;
    }
  }

  // One pass over the links gathers every tier's uplinks (in link order, as three passes did).
  constexpr std::array<LinkKind, 3> kTiers{LinkKind::TorAgg, LinkKind::AggSpine, LinkKind::TorSpine};
  struct Tier {
    std::vector<double> loads;
    std::map<VertexId, Bins> per_switch;  // ordered: deterministic group order
    Bins* last = nullptr;                 // the entry of the previous uplink's switch: a
    VertexId last_switch = 0;             // switch's uplinks are built one after another
    double spray_total = 0;
    double spray_max = 0;
  };
  std::array<Tier, kTiers.size()> tiers;
  for (LinkId l = 0; l < num_links; ++l) {
    const LinkKind kind = fabric.link_kind(l);
    const auto it = std::find(kTiers.begin(), kTiers.end(), kind);
    if (it == kTiers.end() || !fabric.link_is_up(l)) continue;
    Tier& t = tiers[static_cast<std::size_t>(it - kTiers.begin())];
    t.loads.push_back(out.link_load[l]);
    t.spray_total += out.spray_link_load[l];
    t.spray_max = std::max(t.spray_max, out.spray_link_load[l]);
    const VertexId sw = fabric.link_src(l);
    if (t.last == nullptr || t.last_switch != sw) {
      t.last = &t.per_switch[sw];
      t.last_switch = sw;
    }
    Bins& b = *t.last;
    b.bins += 1;
    b.balls += static_cast<std::int64_t>(std::llround(out.link_load[l]));
  }
  for (std::size_t i = 0; i < kTiers.size(); ++i) {
    Tier& t = tiers[i];
    std::vector<double>& loads = t.loads;
    if (loads.empty()) continue;
    UplinkTierStats s;
    s.kind = kTiers[i];
    s.spray_max_load = t.spray_max;
    s.num_links = loads.size();
    const double m = static_cast<double>(loads.size());
    for (double x : loads) {
      s.total_load += x;
      if (x == 0.0) s.idle_fraction += 1.0 / m;
    }
    s.mean_load = s.total_load / m;
    s.spray_mean_load = t.spray_total / m;
    // The maximum and the 99th percentile (the value at rank ceil(0.99 m) of the sorted loads)
    // without sorting a tier of 100,000 uplinks.
    s.max_load = *std::max_element(loads.begin(), loads.end());
    const auto rank = std::max<std::size_t>(static_cast<std::size_t>(std::ceil(0.99 * m)), 1) - 1;
    std::nth_element(loads.begin(), loads.begin() + static_cast<std::ptrdiff_t>(rank), loads.end());
    s.p99_load = loads[rank];
    std::vector<Bins> groups;
    for (const auto& [sw, b] : t.per_switch) groups.push_back(b);
    balls_into_bins(groups, s);
    out.tiers.push_back(s);
  }
  return out;
}

}  // namespace megasim
