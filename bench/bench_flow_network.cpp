// FlowNetwork end to end on the synthetic 12,288-GPU Clos (synthetic_clos.hpp).
//   RingLongFlows:     one ring step: 192 ranks x 8 rails x 4 channels = 6,144 long flows
//                      (5.5 GB / 192 / 4 each) running to completion.
//   RingReduceScatter: a full ring reduce-scatter of a 5.5 GB buffer over the same rings:
//                      191 steps, each rank forwards chunk/4 per channel once it has both
//                      received the previous step's chunk and finished its own send —
//                      1.17 M flows. This is the lead's "< 2 s" target.
#include <benchmark/benchmark.h>

#include <vector>

#include "megasim/net/flow_network.hpp"
#include "megasim/sim/engine.hpp"
#include "synthetic_clos.hpp"

namespace {

using megasim::Engine;
using megasim::FlowNetwork;
using megasim::FlowRequest;
using megasim::bench::SyntheticClos;

constexpr std::uint32_t kRanks = 192;
constexpr std::uint32_t kChannels = 4;
constexpr double kBufferBytes = 5.5e9;
constexpr double kLatency_s = 5e-6;  // benchmark input only, not a model constant

megasim::LinkPath ring_path(std::uint32_t rank, std::uint32_t rail, std::uint32_t channel) {
  return SyntheticClos::path(rank, (rank + 1) % kRanks, rail,
                             megasim::stable_hash({rank, rail, channel}));
}

void BM_RingLongFlows(benchmark::State& state) {
  const double bytes = kBufferBytes / kRanks / kChannels;
  for (auto _ : state) {
    Engine engine;
    FlowNetwork net(engine, SyntheticClos::capacities());
    for (std::uint32_t rail = 0; rail < SyntheticClos::kRails; ++rail) {
      for (std::uint32_t c = 0; c < kChannels; ++c) {
        for (std::uint32_t r = 0; r < kRanks; ++r) {
          FlowRequest req;
          req.path = ring_path(r, rail, c);
          req.bytes = bytes;
          req.latency_s = kLatency_s;
          net.start_flow(std::move(req));
        }
      }
    }
    engine.run();
    state.counters["sim_time_s"] = engine.now().seconds();
    state.counters["events"] = static_cast<double>(engine.events_processed());
  }
}
BENCHMARK(BM_RingLongFlows)->Unit(benchmark::kMillisecond);

// One ring (rail, channel): rank r may send step s once it received step s-1 from r-1 and
// its own step s-1 send completed.
struct RingState {
  FlowNetwork* net = nullptr;
  std::uint32_t rail = 0;
  std::uint32_t channel = 0;
  double bytes = 0.0;
  std::vector<megasim::LinkPath> paths;
  std::vector<int> received;  // steps received by rank r
  std::vector<int> sent;      // steps whose send completed, per rank
  std::vector<int> started;   // next step rank r will start
  int steps = kRanks - 1;

  void try_start(std::uint32_t r) {
    const int s = started[r];
    if (s >= steps || sent[r] < s || received[r] < s) return;
    ++started[r];
    FlowRequest req;
    req.path = paths[r];
    req.bytes = bytes;
    req.latency_s = kLatency_s;
    req.on_complete = [this, r] {
      const std::uint32_t next = (r + 1) % kRanks;
      ++sent[r];
      ++received[next];
      try_start(r);
      try_start(next);
    };
    net->start_flow(std::move(req));
  }
};

void BM_RingReduceScatter(benchmark::State& state) {
  for (auto _ : state) {
    Engine engine;
    FlowNetwork net(engine, SyntheticClos::capacities());
    std::vector<RingState> rings(SyntheticClos::kRails * kChannels);
    std::size_t i = 0;
    for (std::uint32_t rail = 0; rail < SyntheticClos::kRails; ++rail) {
      for (std::uint32_t c = 0; c < kChannels; ++c, ++i) {
        RingState& ring = rings[i];
        ring.net = &net;
        ring.rail = rail;
        ring.channel = c;
        ring.bytes = kBufferBytes / kRanks / kChannels;
        for (std::uint32_t r = 0; r < kRanks; ++r) ring.paths.push_back(ring_path(r, rail, c));
        ring.received.assign(kRanks, 0);
        ring.sent.assign(kRanks, 0);
        ring.started.assign(kRanks, 0);
      }
    }
    for (RingState& ring : rings) {
      for (std::uint32_t r = 0; r < kRanks; ++r) ring.try_start(r);
    }
    engine.run();
    engine.require_all_finished();
    state.counters["sim_time_s"] = engine.now().seconds();
    state.counters["events"] = static_cast<double>(engine.events_processed());
    state.counters["flows"] = static_cast<double>(net.flows_completed());
    state.counters["solves"] = static_cast<double>(net.solver().solves());
    state.counters["flows_resolved"] = static_cast<double>(net.solver().flows_resolved());
  }
}
BENCHMARK(BM_RingReduceScatter)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
