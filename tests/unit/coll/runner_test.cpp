// Simulated collectives on the flow network: published bus bandwidths (within 10%), a
// hand-derived ring time, an ECMP collision built on purpose, and bookkeeping.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "coll/test_clusters.hpp"
#include "megasim/coll/runner.hpp"
#include "megasim/core/error.hpp"
#include "megasim/net/topology_builders.hpp"

namespace megasim {
namespace {

using testing::bundled_nccl_model;
using testing::dgx_a100;
using testing::dgx_h100;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<int> iota_gpus(int n, int first = 0, int stride = 1) {
  std::vector<int> g;
  for (int i = 0; i < n; ++i) g.push_back(first + i * stride);
  return g;
}

// Runs the requests concurrently from t = 0; returns each one's completion time.
std::vector<double> simulate(const ClusterSpec& c, const NcclModel& m, const std::vector<CollectiveRequest>& reqs,
                             Routing routing = Routing::Ecmp, std::uint64_t seed = 1) {
  const Fabric fabric = build_fabric(c);
  const Router router(fabric, routing, seed);
  Engine engine;
  FlowNetwork net(engine, fabric.link_capacity_Bps());
  CollectiveRunner runner(engine, net, router, fabric, m);
  std::vector<double> done(reqs.size(), -1.0);
  for (std::size_t i = 0; i < reqs.size(); ++i)
    runner.start(reqs[i], [&, i] { done[i] = engine.now().seconds(); });
  engine.run();
  engine.require_all_finished();
  return done;
}

double sim_busbw_GBps(const ClusterSpec& c, const CollectiveRequest& req) {
  const double t = simulate(c, bundled_nccl_model(), {req}).front();
  return req.size_bytes / t * busbw_factor(req.op, static_cast<int>(req.gpus.size())) / 1e9;
}

// Textbook: 8 A100, ring all-reduce of 1 GB (Simple chosen at this size). Every GPU's NVLink
// port carries 16 channel flows of 2*7/8 * 1e9 / 16 payload bytes, inflated by 300/230 on the
// wire: port time = 1.75e9 / 230e9 = 7.6087 ms; plus the NCCL latency 56 us (8.4 + 14*3.4).
TEST(CollectiveRunner, TextbookRingAllReduceSingleNode) {
  const NcclModel m = bundled_nccl_model();
  CollectiveRequest req{CollOp::AllReduce, CollAlgo::Ring, 1e9, iota_gpus(8), 0, "ar", 1};
  const auto plan = lower_collective(req, dgx_a100(1), m);
  ASSERT_EQ(plan.estimate.proto, NcclProto::Simple);
  ASSERT_EQ(plan.phases.size(), 1u);
  EXPECT_EQ(plan.phases[0].flows.size(), 8u);          // 8 ring edges, channels merged
  EXPECT_EQ(plan.phases[0].flows[0].multiplicity, 16);
  const double t = simulate(dgx_a100(1), m, {req}).front();
  EXPECT_NEAR(t, 56e-6 + 1.75e9 / 230e9, 1e-9);
}

TEST(CollectiveRunner, PublishedBusbwDgxA100IntraNodeAllReduce) {
  CollectiveRequest req{CollOp::AllReduce, CollAlgo::Auto, 8 * kGiB, iota_gpus(8), 0, "ar", 1};
  EXPECT_NEAR(sim_busbw_GBps(dgx_a100(1), req), 230, 23);
}

TEST(CollectiveRunner, PublishedBusbwDgxA100MultiNodeAllReduce) {
  CollectiveRequest req{CollOp::AllReduce, CollAlgo::Auto, 8 * kGiB, iota_gpus(128), 0, "ar", 1};
  EXPECT_NEAR(sim_busbw_GBps(dgx_a100(16), req), 192, 19.2);
}

TEST(CollectiveRunner, PublishedBusbwDgxH100IntraNodeAllGather) {
  CollectiveRequest req{CollOp::AllGather, CollAlgo::Auto, 8 * kGiB, iota_gpus(8), 0, "ag", 1};
  EXPECT_NEAR(sim_busbw_GBps(dgx_h100(1), req), 370, 37);
}

TEST(CollectiveRunner, PublishedBusbwPerNdrNic) {
  // One GPU per node on rail 0 of 16 nodes: one NDR NIC per rank.
  CollectiveRequest req{CollOp::AllReduce, CollAlgo::Auto, 8 * kGiB, iota_gpus(16, 0, 8), 0, "dp", 1};
  const double bw = sim_busbw_GBps(dgx_h100(16), req);
  EXPECT_GE(bw, 46 * 0.9);
  EXPECT_LE(bw, 48 * 1.1);
}

// Rack-scale NVLink: an all-reduce over the 72 GPUs of one NVL72 rack (18 hosts) runs on the
// NVLink switch fabric at NVLink 5's achieved bus bandwidth (695 GB/s measured on 8 x B300,
// nccl-2.21.json), an order of magnitude above one 400G NIC's 50 GB/s; the flow simulation
// and the analytic model agree; and no flow of it touches a NIC.
TEST(CollectiveRunner, Nvl72AllReduceRunsOnNvlink) {
  const ClusterSpec c = testing::nvl72(2);
  const NcclModel m = bundled_nccl_model();
  CollectiveRequest req{CollOp::AllReduce, CollAlgo::Auto, 4 * kGiB, iota_gpus(72), 0, "ar", 1};
  const double bw = sim_busbw_GBps(c, req);
  EXPECT_GT(bw, 600);
  EXPECT_LT(bw, 700);
  const CollectivePlan plan = lower_collective(req, c, m);
  EXPECT_EQ(plan.shape.nodes, 1);
  EXPECT_EQ(plan.shape.ranks_per_node, 72);
  const Fabric f = build_fabric(c);
  const Router r(f, Routing::Ecmp, 1);
  for (const CollPhase& ph : plan.phases)
    for (const FlowStep& fl : ph.flows)
      for (const WeightedPath& p : r.paths(fl.src_gpu, fl.dst_gpu, fl.queue_pair))
        for (LinkId l : p.links) EXPECT_EQ(f.link_kind(l), LinkKind::NvLink);
  // Across two racks the ring leaves each rack on many NICs at once: still NVLink-bound,
  // and channels stop at NCCL's MAXCHANNELS instead of 2 per NIC of 72 NICs.
  CollectiveRequest two{CollOp::AllReduce, CollAlgo::Ring, 4 * kGiB, iota_gpus(144), 0, "ar2", 1};
  const CollectivePlan plan2 = lower_collective(two, c, m);
  EXPECT_EQ(plan2.shape.nodes, 2);
  EXPECT_EQ(plan2.channels, m.channels_max);
  EXPECT_GT(sim_busbw_GBps(c, two), 400);
}

// The simulation and the analytic model agree on symmetric, contention-free groups.
TEST(CollectiveRunner, AgreesWithAnalyticModel) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(4);
  for (CollOp op : {CollOp::AllReduce, CollOp::AllGather, CollOp::ReduceScatter, CollOp::AllToAll}) {
    CollectiveRequest req{op, CollAlgo::Ring, 256e6, iota_gpus(32), 0, "x", 1};
    const double t_sim = simulate(c, m, {req}).front();
    const double t_ana = lower_collective(req, c, m).estimate.time_s;
    EXPECT_NEAR(t_sim / t_ana, 1.0, 0.1) << to_string(op);
  }
}

// NCCL's all-to-all takes the PXN route across nodes (NCCL_P2P_PXN_LEVEL=2, its default): a
// send to another node's GPU of another local index crosses NVLink to the source node's GPU on
// the destination's rail first, so every network flow stays on one rail (no spine hop on a
// rail-optimised Clos), and the NVLink hops carry the same payload.
TEST(CollectiveRunner, AllToAllAcrossNodesStaysOnRails) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(4);
  CollectiveRequest req{CollOp::AllToAll, CollAlgo::Auto, 256e6, iota_gpus(32), 0, "a2a", 1};
  const CollectivePlan plan = lower_collective(req, c, m);
  int network = 0;
  for (const FlowStep& f : plan.phases.front().flows) {
    if (f.src_gpu / 8 == f.dst_gpu / 8) continue;
    ++network;
    EXPECT_EQ(f.src_gpu % 8, f.dst_gpu % 8) << f.src_gpu << " -> " << f.dst_gpu;
  }
  EXPECT_GT(network, 0);
  // An all-to-all-v lowers the same way.
  const CollectivePlan v = lower_all_to_all_v({{0, 9, 1e6}, {0, 8, 1e6}, {0, 1, 1e6}}, c, m, 0.0);
  std::set<std::pair<int, int>> pairs;
  for (const FlowStep& f : v.phases.front().flows) pairs.insert({f.src_gpu, f.dst_gpu});
  EXPECT_EQ(pairs, (std::set<std::pair<int, int>>{{0, 1}, {1, 9}, {0, 8}}));
  // NCCL relays only through a member of the communicator: a group holding part of each node
  // sends directly where its node has no member on the destination's rail.
  const std::vector<int> part{0, 1, 8, 11};
  CollectiveRequest some{CollOp::AllToAll, CollAlgo::Auto, 256e6, part, 0, "a2a", 1};
  std::set<std::pair<int, int>> used;
  const CollectivePlan some_plan = lower_collective(some, c, m);
  for (const FlowStep& f : some_plan.phases.front().flows) {
    EXPECT_TRUE(std::count(part.begin(), part.end(), f.src_gpu) && std::count(part.begin(), part.end(), f.dst_gpu))
        << f.src_gpu << " -> " << f.dst_gpu;
    used.insert({f.src_gpu, f.dst_gpu});
  }
  EXPECT_TRUE(used.count({0, 11}));  // no member on rail 3 at node 0: direct
  EXPECT_TRUE(used.count({1, 0}) && used.count({0, 8}));  // 1 -> 8 relayed by 0, on rail 0
  EXPECT_FALSE(used.count({1, 8}));
}

// Two large flows that ECMP hashes onto one switch uplink take twice the ideal-spray time.
// Fabric: 4 DGX A100 nodes, 2 per ToR set, unsplit 25 GB/s ports, so a ToR uplink has exactly a
// NIC's bandwidth. Flows: node0.gpu0 -> node2.gpu0 and node1.gpu0 -> node3.gpu0 (rail 0, from
// ToR set 0 to ToR set 1). Search the ECMP seed until both hash onto the same uplink.
// Ideal spray splits each over all uplinks: each flow is NIC-bound, t = S / 24 GB/s.
// ECMP collision: the shared uplink gives each 12.5 GB/s of wire (12 GB/s payload): t = 2 S / 24.
TEST(CollectiveRunner, EcmpCollisionDoublesTime) {
  ClusterSpec c = dgx_a100(4);
  c.network.split_port = false;
  c.network.switch_port_bandwidth_Bps = 25e9;
  c.network.servers_per_tor = 2;
  const NcclModel m = bundled_nccl_model();
  const Fabric fabric = build_fabric(c);
  const std::vector<std::pair<int, int>> pairs{{0, 16}, {8, 24}};
  std::optional<std::uint64_t> seed;
  for (std::uint64_t s = 1; s < 500 && !seed; ++s) {
    const Router r(fabric, Routing::Ecmp, s);
    const auto a = r.paths(pairs[0].first, pairs[0].second, 0).front().links;
    const auto b = r.paths(pairs[1].first, pairs[1].second, 0).front().links;
    for (LinkId l : a)
      if (is_switch_link(fabric.link_kind(l)) && fabric.link_is_up(l) && std::count(b.begin(), b.end(), l))
        seed = s;
  }
  ASSERT_TRUE(seed.has_value());
  std::vector<CollectiveRequest> reqs;
  for (auto [s, d] : pairs) reqs.push_back({CollOp::SendRecv, CollAlgo::Auto, 4e9, {s, d}, 0, "p2p", 1});
  const auto ecmp = simulate(c, m, reqs, Routing::Ecmp, *seed);
  const auto spray = simulate(c, m, reqs, Routing::IdealSpray, 1);
  const double lat = lower_collective(reqs[0], c, m).estimate.latency_s;
  EXPECT_NEAR(spray[0] - lat, 4e9 / 24e9, 1e-6);
  EXPECT_NEAR(ecmp[0] - lat, 2 * 4e9 / 24e9, 1e-6);
  EXPECT_NEAR(ecmp[1] - lat, 2 * 4e9 / 24e9, 1e-6);
}

// The tree lowering follows NCCL's own double binary tree (src/graph/trees.cc): over 8 nodes
// tree 0 joins 0-1, 2-1, 1-3, 4-5, 6-5, 5-3, 3-7 (leaves are the even ranks, half the edges
// join neighbours) and tree 1 is its mirror (r -> 7 - r): 7-6, 5-6, 6-4, 3-2, 1-2, 2-4, 4-0.
TEST(CollectiveRunner, TreeIsNcclsDoubleBinaryTree) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(8);
  const CollectiveRequest req{CollOp::AllReduce, CollAlgo::Tree, 64e6, iota_gpus(8, 0, 8), 2, "tree", 1};
  const CollectivePlan plan = lower_collective(req, c, m);
  ASSERT_EQ(plan.lowered_as, CollAlgo::Tree);
  std::set<std::pair<int, int>> tree0, tree1;
  for (const FlowStep& f : plan.phases.at(0).flows) {
    const int a = std::min(f.src_gpu, f.dst_gpu) / 8, b = std::max(f.src_gpu, f.dst_gpu) / 8;
    (f.queue_pair == 0 ? tree0 : tree1).insert({a, b});
  }
  EXPECT_EQ(tree0, (std::set<std::pair<int, int>>{{0, 1}, {1, 2}, {1, 3}, {4, 5}, {5, 6}, {3, 5}, {3, 7}}));
  EXPECT_EQ(tree1, (std::set<std::pair<int, int>>{{6, 7}, {5, 6}, {4, 6}, {2, 3}, {1, 2}, {2, 4}, {0, 4}}));
}

TEST(CollectiveRunner, TreeHierarchicalAndScatterGatherComplete) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(4);
  std::vector<CollectiveRequest> reqs{
      {CollOp::AllReduce, CollAlgo::Tree, 64e6, iota_gpus(32), 0, "tree", 1},
      {CollOp::AllReduce, CollAlgo::Hierarchical, 64e6, iota_gpus(32), 0, "hier", 1},
      {CollOp::SendRecv, CollAlgo::Auto, 64e6, {0, 8}, 0, "p2p", 1},
      {CollOp::SendRecv, CollAlgo::Auto, 64e6, {0, 8}, 0, "p2p-sg", 8},
  };
  const auto plan_tree = lower_collective(reqs[0], c, m);
  EXPECT_EQ(plan_tree.lowered_as, CollAlgo::Tree);
  EXPECT_EQ(lower_collective(reqs[1], c, m).phases.size(), 3u);
  EXPECT_EQ(lower_collective(reqs[3], c, m).phases.size(), 2u);
  for (const auto& r : reqs) {
    const double t = simulate(c, m, {r}).front();
    EXPECT_GT(t, 0) << r.tag;
  }
  // Scatter-gather over 8 rails beats a single-NIC transfer of the same message.
  EXPECT_LT(simulate(c, m, {reqs[3]}).front(), simulate(c, m, {reqs[2]}).front());
}

// DP groups on different rails do not interact: 8 concurrent groups take as long as one.
TEST(CollectiveRunner, ConcurrentRailGroupsIndependentAndPathsCached) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(8);
  std::vector<CollectiveRequest> reqs;
  for (int rail = 0; rail < 8; ++rail)
    reqs.push_back({CollOp::ReduceScatter, CollAlgo::Auto, 1e9, iota_gpus(8, rail, 8), 0, "dp", 1});
  const auto all = simulate(c, m, reqs);
  const auto one = simulate(c, m, {reqs[0]});
  for (double t : all) EXPECT_NEAR(t, one[0], 1e-9);

  const Fabric fabric = build_fabric(c);
  const Router router(fabric, Routing::Ecmp, 1);
  Engine engine;
  FlowNetwork net(engine, fabric.link_capacity_Bps());
  CollectiveRunner runner(engine, net, router, fabric, m);
  int finished = 0;
  runner.start(reqs[0], [&] { ++finished; });
  const std::size_t cached = runner.cached_paths();
  runner.start(reqs[0], [&] { ++finished; });
  EXPECT_EQ(runner.cached_paths(), cached);
  engine.run();
  EXPECT_EQ(finished, 2);
}

// A plan prepared at one size and started with size_scale's factor runs exactly as the plan
// lowered and prepared at the other size: the same end (to the picosecond) and the same bytes on
// every link, with isolated edges on (every edge inside a ToR evaluated) and off.
TEST(CollectiveRunner, ScaledPlanRunsAsTheResizedOne) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_h100(16);
  const Fabric fabric = build_fabric(c);
  const Router router(fabric, Routing::Ecmp, 1);
  CollectiveRequest from{CollOp::ReduceScatter, CollAlgo::Auto, 4e9, iota_gpus(32, 1, 4), 0, "dp", 1};
  CollectiveRequest to = from;
  to.op = CollOp::AllGather;
  to.size_bytes = 3e9;
  const CollectivePlan from_plan = lower_collective(from, c, m);
  const auto k = size_scale(from_plan, from, to, c, m);
  ASSERT_TRUE(k.has_value());
  for (const bool isolate : {false, true}) {
    struct Run {
      double end_s = -1;
      std::vector<double> bytes;
      std::uint64_t isolated = 0;
    };
    auto run = [&](const CollectivePlan& plan, double scale) {
      Engine engine;
      FlowNetwork net(engine, fabric.link_capacity_Bps());
      CollectiveRunner runner(engine, net, router, fabric, m);
      if (isolate) runner.enable_isolated_edges([](int) { return false; });
      Run r;
      runner.start(runner.prepare(plan), "dp", [&] { r.end_s = engine.now().seconds(); }, scale);
      engine.run();
      for (LinkId l = 0; l < fabric.num_links(); ++l) r.bytes.push_back(net.link_bytes(l));
      r.isolated = runner.flows_evaluated_in_isolation();
      return r;
    };
    const Run scaled = run(from_plan, *k);
    const Run direct = run(lower_collective(to, c, m), 1.0);
    EXPECT_EQ(scaled.isolated, direct.isolated);
    EXPECT_EQ(isolate, scaled.isolated > 0);
    EXPECT_NEAR(scaled.end_s, direct.end_s, 1e-12) << isolate;
    for (std::size_t l = 0; l < direct.bytes.size(); ++l) EXPECT_NEAR(scaled.bytes[l], direct.bytes[l], 1e-9 * direct.bytes[l]);
  }
}

// Hand-built plans on one DGX H100 node (isolation on): two NVLink edges, 0 -> 1 and 2 -> 3.
CollectivePlan two_nvlink_edges(double bytes_a, double bytes_b) {
  CollectivePlan plan;
  CollPhase ph;
  ph.flows = {{0, 1, bytes_a, 0, 1}, {2, 3, bytes_b, 0, 1}};
  plan.phases.push_back(ph);
  return plan;
}

// The isolated edge that ends last is chosen by its exact time: 100.3 and 100.9 ps both round up
// to 101 ps, but ten times the bytes end at 1003 and 1009 ps, and the scaled start must end at
// 1009 ps as the plan of ten times the bytes does.
TEST(CollectiveRunner, ScaledIsolatedEdgesEndWithTheExactlySlowest) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_h100(1);
  const Fabric fabric = build_fabric(c);
  const Router router(fabric, Routing::Ecmp, 1);
  const double nvlink_Bps = c.gpu.nvlink_bandwidth_Bps;
  auto end_ps = [&](const CollectivePlan& plan, double scale) {
    Engine engine;
    FlowNetwork net(engine, fabric.link_capacity_Bps());
    CollectiveRunner runner(engine, net, router, fabric, m);
    runner.enable_isolated_edges([](int) { return false; });
    std::int64_t end = -1;
    runner.start(runner.prepare(plan), "t", [&] { end = engine.now().ps(); }, scale);
    engine.run();
    EXPECT_EQ(runner.flows_evaluated_in_isolation(), 2u);
    return end;
  };
  const double a = 100.9e-12 * nvlink_Bps;
  const double b = 100.3e-12 * nvlink_Bps;
  EXPECT_EQ(end_ps(two_nvlink_edges(b, a), 10.0), end_ps(two_nvlink_edges(10 * b, 10 * a), 1.0));
  EXPECT_EQ(end_ps(two_nvlink_edges(a, b), 10.0), end_ps(two_nvlink_edges(10 * a, 10 * b), 1.0));
  EXPECT_THROW(end_ps(two_nvlink_edges(a, b), std::numeric_limits<double>::infinity()), std::invalid_argument);
}

// A prepare() that throws halfway (a GPU outside the fabric) leaves no claimed link behind: the
// next plan's edges are isolated as on a fresh runner.
TEST(CollectiveRunner, PrepareAfterAThrowingPrepareStillIsolates) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_h100(1);
  const Fabric fabric = build_fabric(c);
  const Router router(fabric, Routing::Ecmp, 1);
  Engine engine;
  FlowNetwork net(engine, fabric.link_capacity_Bps());
  CollectiveRunner runner(engine, net, router, fabric, m);
  runner.enable_isolated_edges([](int) { return false; });
  CollectivePlan bad = two_nvlink_edges(1e6, 1e6);
  bad.phases[0].flows.push_back({7, 100000, 1e6, 0, 1});
  EXPECT_ANY_THROW(runner.prepare(bad));
  // Edge 1 (0 -> 1) crosses links the bad plan's edge 0 claimed.
  CollectivePlan good;
  CollPhase ph;
  ph.flows = {{4, 5, 1e6, 0, 1}, {0, 1, 1e6, 0, 1}};
  good.phases.push_back(ph);
  runner.start(runner.prepare(good), "t", [] {});
  engine.run();
  EXPECT_EQ(runner.flows_evaluated_in_isolation(), 2u);
}

TEST(CollectiveRunner, BadGpuListsAreInputErrors) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(1);
  auto lower = [&](std::vector<int> gpus) {
    return lower_collective(CollectiveRequest{CollOp::AllReduce, CollAlgo::Auto, 1e6, std::move(gpus), 0, "", 1}, c, m);
  };
  EXPECT_THROW((void)lower({}), InputError);
  EXPECT_THROW((void)lower({0, 0}), InputError);
  EXPECT_THROW((void)lower({0, 9}), InputError);
}

}  // namespace
}  // namespace megasim
