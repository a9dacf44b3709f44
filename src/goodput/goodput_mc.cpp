#include "goodput/goodput_mc.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "megasim/core/rng.hpp"

namespace megasim {

namespace {

// Safety net: a trial that needs this many interruptions is a modelling error, not a result.
constexpr std::int64_t kMaxEventsPerTrial = 50'000'000;

double exponential(Rng& rng, double rate) { return -std::log1p(-rng.uniform()) / rate; }

}  // namespace

McSummary run_goodput_monte_carlo(const McSetup& s, int trials, std::uint64_t seed) {
  McSummary out;
  out.mean_by_cause.assign(s.causes.size(), 0.0);
  double total_rate = 0;
  for (const auto& c : s.causes) total_rate += c.rate_per_s;
  const double cycle_s = s.tau_s + s.stall_s;

  for (int t = 0; t < trials; ++t) {
    Rng rng(stable_hash({seed, static_cast<std::uint64_t>(t), 0x600d9u}));
    double elapsed = 0;
    double progress = 0;  // useful work saved in the checkpoint the current segment started from
    std::int64_t events = 0;
    while (true) {
      // Running segment from a checkpoint: cycles of tau work + stall, no stall after the end.
      const double remaining = s.useful_s - progress;
      const double stalls = std::max(0.0, std::ceil(remaining / s.tau_s) - 1.0);
      const double finish_s = remaining + stalls * s.stall_s;
      const double x = total_rate > 0 ? exponential(rng, total_rate) : finish_s + 1;
      if (x >= finish_s) {
        elapsed += finish_s;
        break;
      }
      if (++events > kMaxEventsPerTrial) throw std::runtime_error("goodput Monte Carlo runaway");
      elapsed += x;
      // Which cause: pick by rate.
      double pick = rng.uniform() * total_rate;
      std::size_t ci = 0;
      while (ci + 1 < s.causes.size() && pick >= s.causes[ci].rate_per_s) {
        pick -= s.causes[ci].rate_per_s;
        ++ci;
      }
      const CauseModel& c = s.causes[ci];
      out.mean_by_cause[ci] += 1;
      const double k = std::floor(x / cycle_s);
      const double done = k * s.tau_s + std::min(x - k * cycle_s, s.tau_s);
      if (c.planned) {
        progress += done;  // announced: a final checkpoint keeps all of it
      } else {
        // Checkpoint j is usable once its stall ended (j * cycle) and its write finished.
        const double persisted = x < s.persist_s ? 0.0 : std::min(k, std::floor((x - s.persist_s) / cycle_s));
        progress += persisted * s.tau_s;
      }
      elapsed += c.fixed_downtime_s;
      if (c.manual_fraction > 0 && rng.uniform() < c.manual_fraction) elapsed += c.manual_s;
    }
    out.elapsed_s.push_back(elapsed);
    out.mean_elapsed_s += elapsed;
  }
  if (trials > 0) {
    const double n = static_cast<double>(trials);
    out.mean_elapsed_s /= n;
    for (double& m : out.mean_by_cause) {
      out.mean_interruptions += m / n;
      m /= n;
    }
  }
  std::sort(out.elapsed_s.begin(), out.elapsed_s.end());
  return out;
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double w = pos - static_cast<double>(lo);
  return sorted[lo] * (1.0 - w) + sorted[hi] * w;
}

}  // namespace megasim
