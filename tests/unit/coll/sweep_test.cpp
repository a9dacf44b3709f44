// nccl-tests-style sweep and ECMP report behind `megasim collective`.
#include <gtest/gtest.h>

#include "coll/test_clusters.hpp"
#include "megasim/coll/runner.hpp"
#include "megasim/coll/sweep.hpp"
#include "megasim/net/topology_builders.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"

namespace megasim {
namespace {

using testing::bundled_nccl_model;
using testing::dgx_a100;

TEST(CollectiveSweep, ParsesSizeRanges) {
  EXPECT_EQ(parse_size_range("1KiB:8GiB", "--sizes"), std::make_pair(1024.0, 8.0 * (1 << 30)));
  EXPECT_EQ(parse_size_range("1MB", "--sizes"), std::make_pair(1e6, 1e6));
  EXPECT_THROW((void)parse_size_range("8GiB:1KiB", "--sizes"), InputError);
  EXPECT_THROW((void)parse_size_range("12", "--sizes"), InputError);  // unit required
}

// Sizes double from A to B; busbw = algbw * 2(n-1)/n; DES and analytic agree within 10%
// on one NVSwitch node.
TEST(CollectiveSweep, RowsDoubleAndEnginesAgree) {
  const NcclModel m = bundled_nccl_model();
  CollectiveSweepOptions opt;
  opt.op = CollOp::AllReduce;
  opt.gpus = 8;
  opt.min_bytes = 1 << 20;
  opt.max_bytes = 16 << 20;
  opt.engine = CollEngine::Analytic;
  const auto ana = run_collective_sweep(dgx_a100(2), m, opt);
  opt.engine = CollEngine::Des;
  const auto des = run_collective_sweep(dgx_a100(2), m, opt);
  ASSERT_EQ(ana.size(), 5u);
  ASSERT_EQ(des.size(), 5u);
  for (std::size_t i = 0; i < ana.size(); ++i) {
    EXPECT_EQ(ana[i].size_bytes, static_cast<double>(1 << 20) * (1 << i));
    EXPECT_NEAR(ana[i].busbw_GBps, ana[i].algbw_GBps * 2 * 7 / 8, 1e-9);
    EXPECT_NEAR(des[i].time_s / ana[i].time_s, 1.0, 0.1) << i;
  }
}

TEST(CollectiveSweep, GpusOutsideClusterIsInputError) {
  const NcclModel m = bundled_nccl_model();
  CollectiveSweepOptions opt;
  opt.gpus = 17;
  try {
    (void)run_collective_sweep(dgx_a100(2), m, opt);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "--gpus");
  }
  opt.gpus = 1;
  opt.op = CollOp::SendRecv;
  EXPECT_THROW((void)run_collective_sweep(dgx_a100(2), m, opt), InputError);
}

// 8 nodes, 2 per ToR set, unsplit 25 GB/s ports: a rail-0 ring leaves every ToR, so ECMP
// can only be as good as spraying or worse (inflation >= 1), never better.
TEST(CollectiveSweep, EcmpReportInflationAtLeastOne) {
  ClusterSpec c = dgx_a100(8);
  c.network.split_port = false;
  c.network.switch_port_bandwidth_Bps = 25e9;
  c.network.servers_per_tor = 2;
  CollectiveSweepOptions opt;
  opt.op = CollOp::AllGather;
  opt.gpus = 64;
  const EcmpReport rep = collective_ecmp_report(c, bundled_nccl_model(), opt, 256e6, 5);
  ASSERT_EQ(rep.inflation.size(), 5u);
  for (double x : rep.inflation) EXPECT_GE(x, 1.0 - 1e-6);
  EXPECT_LE(rep.p50_inflation, rep.p99_inflation);
  EXPECT_GT(rep.network_flows, 0u);
  EXPECT_FALSE(rep.uplinks.tiers.empty());
}

// The bundled MegaScale cluster (configs/clusters via the job config): a DP ring of one GPU per
// node on one rail drives one HDR NIC, ~24 GB/s busbw (nccl#412, nccl#812), in both engines.
TEST(CollectiveSweep, CatalogMegascaleDpRingRunsAtOneHdrNic) {
  const std::string root = std::string(MEGASIM_SOURCE_DIR) + "/configs";
  const Catalog cat = Catalog::open(root);
  const ClusterSpec c = load_job(root + "/megascale-175b-12288.json", {}, cat).cluster;
  const NcclModel m = bundled_nccl_model();
  const double t = collective_time_s(CollOp::ReduceScatter, 5.5e9, {192, 1, 192, true}, c, m);
  EXPECT_NEAR(5.5e9 / t * busbw_factor(CollOp::ReduceScatter, 192) / 1e9, 24, 2.4);

  CollectiveSweepOptions opt;
  opt.op = CollOp::AllReduce;
  opt.gpus = 8;
  opt.min_bytes = opt.max_bytes = 1e9;
  CollectiveRequest req = sweep_request(opt, 1e9);
  req.gpus.clear();
  for (int node = 0; node < 16; ++node) req.gpus.push_back(node * c.gpus_per_node);
  const Fabric fabric = build_fabric(c);
  const Router router(fabric, c.network.routing, c.network.ecmp_seed);
  Engine engine;
  FlowNetwork net(engine, fabric.link_capacity_Bps());
  CollectiveRunner runner(engine, net, router, fabric, m);
  double done = 0;
  runner.start(req, [&] { done = engine.now().seconds(); });
  engine.run();
  EXPECT_NEAR(1e9 / done * busbw_factor(CollOp::AllReduce, 16) / 1e9, 24, 2.4);
}

}  // namespace
}  // namespace megasim
