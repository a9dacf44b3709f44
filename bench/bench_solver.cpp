// Max-min solver on the synthetic 12,288-GPU rail-optimised Clos (synthetic_clos.hpp).
//   FullSolve:        add N random same-rail flows (random ECMP spine) and solve from scratch.
//   IncrementalRandom: with N random flows solved, remove one and add one, then solve. Random
//                     all-to-all traffic joins nearly every flow through the spines into one
//                     component, so this is the worst case for incrementality.
//   IncrementalRing:  the ring pattern of a collective (192 ranks x 8 rails x 4 channels):
//                     components are small, so one change re-solves only a handful of flows.
#include <benchmark/benchmark.h>

#include <vector>

#include "megasim/net/maxmin_solver.hpp"
#include "synthetic_clos.hpp"

namespace {

using megasim::FlowHandle;
using megasim::MaxMinSolver;
using megasim::Rng;
using megasim::bench::SyntheticClos;

void BM_SolverFullSolve(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Rng rng(7);
  std::vector<megasim::LinkPath> paths;
  for (std::size_t i = 0; i < n; ++i) paths.push_back(SyntheticClos::random_path(rng));
  const std::vector<double> caps = SyntheticClos::capacities();
  for (auto _ : state) {
    MaxMinSolver solver(caps);
    for (const auto& p : paths) solver.add_flow(p);
    solver.solve();
    benchmark::DoNotOptimize(solver.changed_flows().size());
    state.counters["component_flows"] = static_cast<double>(solver.last_component_flows());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(BM_SolverFullSolve)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_SolverIncrementalRandom(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Rng rng(11);
  MaxMinSolver solver(SyntheticClos::capacities());
  std::vector<FlowHandle> flows;
  for (std::size_t i = 0; i < n; ++i) flows.push_back(solver.add_flow(SyntheticClos::random_path(rng)));
  solver.solve();
  for (auto _ : state) {
    const std::size_t victim = rng.below(flows.size());
    solver.remove_flow(flows[victim]);
    flows[victim] = solver.add_flow(SyntheticClos::random_path(rng));
    solver.solve();
    state.counters["component_flows"] = static_cast<double>(solver.last_component_flows());
  }
}
BENCHMARK(BM_SolverIncrementalRandom)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_SolverIncrementalRing(benchmark::State& state) {
  constexpr std::uint32_t kRanks = 192;
  constexpr std::uint32_t kChannels = 4;
  MaxMinSolver solver(SyntheticClos::capacities());
  std::vector<FlowHandle> flows;
  std::vector<megasim::LinkPath> paths;
  for (std::uint32_t rail = 0; rail < SyntheticClos::kRails; ++rail) {
    for (std::uint32_t c = 0; c < kChannels; ++c) {
      for (std::uint32_t r = 0; r < kRanks; ++r) {
        paths.push_back(SyntheticClos::path(r, (r + 1) % kRanks, rail,
                                            megasim::stable_hash({r, rail, c})));
        flows.push_back(solver.add_flow(paths.back()));
      }
    }
  }
  solver.solve();
  Rng rng(3);
  for (auto _ : state) {
    const std::size_t victim = rng.below(flows.size());
    solver.remove_flow(flows[victim]);
    flows[victim] = solver.add_flow(paths[victim]);
    solver.solve();
    state.counters["component_flows"] = static_cast<double>(solver.last_component_flows());
  }
}
BENCHMARK(BM_SolverIncrementalRing)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
