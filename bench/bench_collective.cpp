// Collectives (coll/) on the bundled 12,288-GPU MegaScale Clos (configs/megascale-175b-12288.json):
//   AnalyticTime:        one collective_time_s() call (the planner calls it millions of times).
//   DpReduceScatter/G:   G concurrent ZeRO gradient reduce-scatters of 5.5 GB per GPU
//                        (175B / (TP 8 x PP 8) = 2.7 B bf16 gradients) over DP groups of 192
//                        ranks, one GPU per node on one rail, lowered into NCCL rings and run on
//                        the flow network. G = 8: the 8 rails of one pipeline stage's 192 nodes;
//                        G = 64: every DP group of the step at once.
// Counters: simulated time (s) and bus bandwidth (GB/s) of the slowest group.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "megasim/catalogs/nccl_model_reader.hpp"
#include "megasim/coll/cost_model.hpp"
#include "megasim/coll/runner.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/net/topology_builders.hpp"

namespace {

using namespace megasim;  // NOLINT: benchmark file, not a header

constexpr double kRsBytes = 5.5e9;

const ClusterSpec& cluster() {
  static const ClusterSpec c = [] {
    const Catalog cat = Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs");
    return load_job(std::string(MEGASIM_SOURCE_DIR) + "/configs/megascale-175b-12288.json", {}, cat).cluster;
  }();
  return c;
}

const NcclModel& model() {
  static const NcclModel m = load_default_nccl_model(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  return m;
}

void BM_AnalyticTime(benchmark::State& state) {
  const CollGroupShape g{192, 1, 192, true};
  double size = 1e6;
  for (auto _ : state) {
    benchmark::DoNotOptimize(collective_time_s(CollOp::ReduceScatter, size, g, cluster(), model()));
    size = size < 1e10 ? size * 1.01 : 1e6;
  }
}
BENCHMARK(BM_AnalyticTime);

void BM_DpReduceScatter(benchmark::State& state) {
  const int groups = static_cast<int>(state.range(0));
  const ClusterSpec& c = cluster();
  const int gpn = c.gpus_per_node;
  const Fabric fabric = build_fabric(c);
  const Router router(fabric, c.network.routing, c.network.ecmp_seed);
  // Group g: stage g / gpn (192 consecutive nodes), rail g % gpn.
  std::vector<CollectivePlan> plans;
  for (int g = 0; g < groups; ++g) {
    CollectiveRequest req;
    req.op = CollOp::ReduceScatter;
    req.size_bytes = kRsBytes;
    const int first_node = (g / gpn) * 192;
    for (int r = 0; r < 192; ++r) req.gpus.push_back((first_node + r) * gpn + g % gpn);
    plans.push_back(lower_collective(req, c, model()));
  }
  double slowest = 0;
  for (auto _ : state) {
    Engine engine;
    FlowNetwork net(engine, fabric.link_capacity_Bps());
    CollectiveRunner runner(engine, net, router, fabric, model());
    std::vector<double> done(plans.size(), 0);
    for (std::size_t i = 0; i < plans.size(); ++i)
      runner.start(plans[i], "dp-rs " + std::to_string(i), [&, i] { done[i] = engine.now().seconds(); });
    engine.run();
    slowest = *std::max_element(done.begin(), done.end());
  }
  state.counters["sim_time_s"] = slowest;
  state.counters["busbw_GBps"] = kRsBytes / slowest * busbw_factor(CollOp::ReduceScatter, 192) / 1e9;
}
BENCHMARK(BM_DpReduceScatter)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);

}  // namespace
BENCHMARK_MAIN();
