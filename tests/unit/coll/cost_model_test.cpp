// Analytic NCCL cost model: textbook numbers derived by hand, and large-message bus
// bandwidths against published nccl-tests figures (within 10%).
#include <gtest/gtest.h>
#include <utility>
#include <vector>
#include <fstream>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "coll/test_clusters.hpp"
#include "megasim/catalogs/nccl_model_reader.hpp"
#include "megasim/coll/cost_model.hpp"
#include "megasim/core/error.hpp"

namespace megasim {
namespace {

using testing::bundled_nccl_model;
using testing::dgx_a100;
using testing::dgx_h100;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

double busbw_GBps(CollOp op, double size, const CollGroupShape& g, const ClusterSpec& c,
                  const NcclModel& m) {
  const double t = collective_time_s(op, size, g, c, m);
  return size / t * busbw_factor(op, g.ranks) / 1e9;
}

TEST(BusbwFactor, MatchesNcclTestsPerformanceMd) {
  EXPECT_DOUBLE_EQ(busbw_factor(CollOp::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollOp::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollOp::ReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor(CollOp::AllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(CollOp::SendRecv, 2), 1.0);
}

TEST(NcclModel, LoadsBundledCatalog) {
  const NcclModel m = bundled_nccl_model();
  EXPECT_EQ(m.name, "nccl-2.21");
  EXPECT_DOUBLE_EQ(m.base_lat_s[1][2], 8.4e-6);  // ring Simple
  EXPECT_DOUBLE_EQ(m.hw_lat_net_s[1][2], 14.0e-6);
  EXPECT_NEAR(m.nvlink_fraction(80), 230.0 / 300.0, 1e-12);
  EXPECT_NEAR(m.nvlink_fraction(90), 370.0 / 450.0, 1e-12);
  EXPECT_NEAR(m.network_fraction(25e9), 24.0 / 25.0, 1e-12);
  EXPECT_NEAR(m.network_fraction(50e9), 47.0 / 50.0, 1e-12);
  // Tree correction: 1 MiB = 64 B * 2^14 -> index 14 (Simple 0.5).
  EXPECT_DOUBLE_EQ(m.tree_correction_factor(NcclProto::Simple, kMiB), 0.5);
  EXPECT_DOUBLE_EQ(m.tree_correction_factor(NcclProto::Simple, 4 * kGiB), 1.0);
}

TEST(NcclModel, MissingFieldNamesItsPath) {
  nlohmann::json j = nlohmann::json::parse(R"({"name":"x","source":"y"})");
  try {
    (void)nccl_model_from_json(j, "nccl");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "nccl.latency_us");
  }
}

// A key the reader does not understand is an error with its path, not a silently unused figure.
TEST(NcclModel, UnknownKeysAreErrors) {
  std::ifstream f(std::string(MEGASIM_SOURCE_DIR) + "/configs/nccl/nccl-2.21.json");
  const auto base = nlohmann::json::parse(f);
  for (const auto& [ptr, path] : std::vector<std::pair<std::string, std::string>>{
           {"/channels/per_nics", "nccl.channels.per_nics"},
           {"/protocol_efficiency/ring_ll129", "nccl.protocol_efficiency.ring_ll129"},
           {"/transport_efficiency/nvlink/0/line_GBs", "nccl.transport_efficiency.nvlink[0].line_GBs"},
           {"/latency_us/nvlink/trees", "nccl.latency_us.nvlink.trees"}}) {
    auto j = base;
    j[nlohmann::json::json_pointer(ptr)] = 1;
    try {
      (void)nccl_model_from_json(j, "nccl");
      ADD_FAILURE() << "accepted " << path;
    } catch (const InputError& e) {
      EXPECT_EQ(e.path(), path);
      EXPECT_NE(e.rule().find("unknown key"), std::string::npos) << e.what();
    }
  }
}

// Textbook: 8 A100 in one node, all-reduce of 1 GB forced to Ring/Simple.
//   nsteps = 2(n-1) = 14, single node -> no inter steps.
//   latency = baseLat(ring,Simple) + 14 * hwLat(NVLink,ring,Simple) = 8.4 + 14*3.4 = 56 us
//   busbw   = 300 GB/s * 230/300 = 230 GB/s; algbw = busbw * n/nsteps = 230 * 8/14 GB/s
//   time    = 56e-6 + 1e9 * 14 / (8 * 230e9) = 56e-6 + 7.608696e-3 = 7.664696e-3 s
TEST(CostModel, TextbookRingAllReduceSingleNode) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(1);
  const CollGroupShape g{8, 8, 1, true};
  const CollEstimate e =
      estimate_collective_with(CollOp::AllReduce, 1e9, g, c, m, CollAlgo::Ring, NcclProto::Simple);
  EXPECT_EQ(e.algo, CollAlgo::Ring);
  EXPECT_NEAR(e.latency_s, 56e-6, 1e-12);
  EXPECT_NEAR(e.time_s, 56e-6 + 1e9 * 14.0 / (8.0 * 230e9), 1e-12);
}

// Textbook multi-node: 2 DGX A100 (16 ranks), Ring/Simple all-reduce of 1 GB.
//   nsteps = 30, nInterSteps = 2*nNodes = 4; intraLat = max(3.4, 1*3) = 3.4 us;
//   topology latency = 2 hops * 0.5 us = 1 us, counted twice for Simple:
//   interLat = 14 + 2*1 = 16 us; latency = (8.4 + 26*3.4 + 4*16) * 1.4 (plateau) = 225.12 us
//   busbw = min(NVLink 230, 8 NICs * 24) = 192 GB/s; algbw = 192 * 16/30 GB/s
TEST(CostModel, TextbookRingAllReduceTwoNodes) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(2);
  const CollGroupShape g{16, 8, 2, true};
  const CollEstimate e =
      estimate_collective_with(CollOp::AllReduce, 1e9, g, c, m, CollAlgo::Ring, NcclProto::Simple);
  EXPECT_NEAR(e.latency_s, (8.4 + 26 * 3.4 + 4 * 16) * 1.4 * 1e-6, 1e-12);
  EXPECT_NEAR(e.algbw_Bps, 192e9 * 16.0 / 30.0, 1.0);
  EXPECT_NEAR(e.time_s, e.latency_s + 1e9 * 30.0 / (16.0 * 192e9), 1e-12);
}

// Protocol choice as NCCL's tuner (8 A100, all-reduce, hand-computed times):
//   8 B:    LL 15.0 us (6.6 + 14*0.6) beats LL128 40.6 us and Simple 56 us.
//   16 MiB: LL 350 us, LL128 40.6 + 16.78e6/(211.6e9*8/14) = 179 us, Simple 56 + 127.7 = 184 us.
//   1 GiB:  Simple (bus 230) beats LL128 (bus 0.92*230 = 211.6).
TEST(CostModel, ProtocolChosenBySize) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(1);
  const CollGroupShape g{8, 8, 1, true};
  const auto tiny = estimate_collective(CollOp::AllReduce, 8, g, c, m, CollAlgo::Ring);
  EXPECT_EQ(tiny.proto, NcclProto::LL);
  EXPECT_NEAR(tiny.time_s, 15.0e-6, 1e-8);
  EXPECT_EQ(estimate_collective(CollOp::AllReduce, 16 * kMiB, g, c, m, CollAlgo::Ring).proto,
            NcclProto::LL128);
  EXPECT_EQ(estimate_collective(CollOp::AllReduce, kGiB, g, c, m, CollAlgo::Ring).proto,
            NcclProto::Simple);
}

// A100 has no LL128 across nodes (NCCL enables it only on NVLink-ordered paths before Hopper).
TEST(CostModel, NoLl128AcrossNodesOnAmpere) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(4);
  const CollGroupShape g{32, 8, 4, true};
  for (double s : {1e3, 1e5, 1e7, 1e9})
    EXPECT_NE(estimate_collective(CollOp::AllGather, s, g, c, m).proto, NcclProto::LL128);
}

// At 1536 ranks a 1 MiB all-reduce is latency-bound: the ring pays ~3070 steps, the double
// binary tree ~2*log2(192) network hops, so NCCL (and we) pick the tree.
TEST(CostModel, TreeWinsForSmallMessagesAtScale) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(192);
  const CollGroupShape g{1536, 8, 192, true};
  const auto e = estimate_collective(CollOp::AllReduce, kMiB, g, c, m);
  EXPECT_EQ(e.algo, CollAlgo::Tree);
  EXPECT_LT(e.time_s, estimate_collective(CollOp::AllReduce, kMiB, g, c, m, CollAlgo::Ring).time_s);
}

// Published large-message bus bandwidths (shared/reference/hardware-and-nccl.md 6.2), +-10%.
TEST(CostModel, PublishedBusbwDgxA100IntraNodeAllReduce) {
  const NcclModel m = bundled_nccl_model();
  EXPECT_NEAR(busbw_GBps(CollOp::AllReduce, 8 * kGiB, {8, 8, 1, true}, dgx_a100(1), m), 230, 23);
}

TEST(CostModel, PublishedBusbwDgxA100MultiNodeAllReduce) {
  const NcclModel m = bundled_nccl_model();
  EXPECT_NEAR(busbw_GBps(CollOp::AllReduce, 8 * kGiB, {128, 8, 16, true}, dgx_a100(16), m), 192, 19.2);
}

TEST(CostModel, PublishedBusbwDgxH100IntraNodeAllGather) {
  const NcclModel m = bundled_nccl_model();
  EXPECT_NEAR(busbw_GBps(CollOp::AllGather, 8 * kGiB, {8, 8, 1, true}, dgx_h100(1), m), 370, 37);
}

TEST(CostModel, PublishedBusbwPerNdrNic) {
  const NcclModel m = bundled_nccl_model();
  // One GPU per node on one rail: the ring drives exactly one NDR NIC per node.
  const double bw = busbw_GBps(CollOp::AllReduce, 8 * kGiB, {16, 1, 16, true}, dgx_h100(16), m);
  EXPECT_GE(bw, 46 * 0.9);
  EXPECT_LE(bw, 48 * 1.1);
}

TEST(CostModel, SendRecvAndAllToAll) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(2);
  // One pair across nodes: one HDR NIC at 24 GB/s; 1 GB takes ~1/24 s.
  EXPECT_NEAR(collective_time_s(CollOp::SendRecv, 1e9, {2, 1, 2, false}, c, m), 1.0 / 24, 1e-3);
  // Scatter-gather over 8 NICs: 8x faster bandwidth term.
  EXPECT_NEAR(collective_time_s(CollOp::SendRecv, 1e9, {16, 8, 2, true}, c, m), 1.0 / 192, 1e-4);
  // All-to-all in one node: busbw = NVLink effective (230).
  EXPECT_NEAR(busbw_GBps(CollOp::AllToAll, 8 * kGiB, {8, 8, 1, true}, dgx_a100(1), m), 230, 5);
  // Across 2 nodes: each rank sends (16-8)/16 = S/2 off-node; 8 ranks share 8 NICs (192 GB/s
  // for a ring, times NCCL's all-to-all factor 0.88: 169 GB/s) -> time = 8 * S/2 / 169e9 =
  // S / 42.2e9; busbw = S/t * 15/16 = 42.2 * 15/16 = 39.6 GB/s.
  EXPECT_DOUBLE_EQ(m.all_to_all_network_factor, 0.88);
  EXPECT_NEAR(busbw_GBps(CollOp::AllToAll, 8 * kGiB, {16, 8, 2, true}, c, m), 39.6, 1);
  // The factor is NCCL's all-to-all's alone: without it the NICs run at the ring's 24 GB/s.
  EXPECT_NEAR(busbw_GBps(CollOp::AllToAll, 8 * kGiB, {16, 8, 2, true}, c, without_all_to_all_derating(m)), 45, 1);
  EXPECT_NEAR(collective_time_s(CollOp::SendRecv, 1e9, {2, 1, 2, false}, c, without_all_to_all_derating(m)),
              collective_time_s(CollOp::SendRecv, 1e9, {2, 1, 2, false}, c, m), 1e-12);
}

TEST(CostModel, DegenerateAndInvalid) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_a100(1);
  EXPECT_EQ(collective_time_s(CollOp::AllReduce, 1e9, {1, 1, 1, true}, c, m), 0.0);
  EXPECT_EQ(collective_time_s(CollOp::AllReduce, 0, {8, 8, 1, true}, c, m), 0.0);
  EXPECT_THROW((void)collective_time_s(CollOp::AllReduce, 1e6, {8, 4, 1, true}, c, m),
               std::invalid_argument);
  EXPECT_THROW((void)collective_time_s(CollOp::AllReduce, -1, {8, 8, 1, true}, c, m),
               std::invalid_argument);
}

TEST(CostModel, TimeGrowsWithSize) {
  const NcclModel m = bundled_nccl_model();
  const ClusterSpec c = dgx_h100(8);
  const CollGroupShape g{64, 8, 8, true};
  double prev = 0;
  for (double s = 8; s <= 8 * kGiB; s *= 2) {
    const double t = collective_time_s(CollOp::ReduceScatter, s, g, c, m);
    EXPECT_GT(t, prev) << s;
    prev = t;
  }
}

}  // namespace
}  // namespace megasim
