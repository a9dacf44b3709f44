#include "megasim/goodput/comm_init.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "megasim/config/specs.hpp"
#include "megasim/core/error.hpp"
#include "megasim/catalogs/reliability_reader.hpp"

namespace megasim {
namespace {

CommInitConstants catalog_constants() {
  return load_reliability_catalog(std::filesystem::path(MEGASIM_SOURCE_DIR) / "configs/reliability")
      .comm_init;
}

double init_s(std::int64_t n, CommInitStore store, bool ordered) {
  CommInitInput in{n, megatron_comm_groups(n, 8, 8, 1), store, ordered};
  return model_comm_init(in, catalog_constants()).total_s;
}

// Textbook: 2,048 GPUs, TP8 PP8 -> DP 32. Groups: dp 64 + dp-gloo 64 + tp 256 + pp 256 + mp 32
// + embedding 256 + position-embedding 256 = 1,184 groups in 7 kinds.
TEST(CommInit, MegatronGroupCountsAt2048Textbook) {
  const auto g = megatron_comm_groups(2048, 8, 8, 1);
  std::int64_t total = 0;
  for (const auto& k : g) total += k.count;
  EXPECT_EQ(total, 1184);
  EXPECT_EQ(g.size(), 7u);
}

// Textbook, by hand: unordered TCPStore = 1184 x 0.254 s + 1184 barriers x 2 x 2048 ops x 154 us
// = 300.7 + 746.8 = 1047.6 s (fitted, MegaScale §3.5: 1047 s).
TEST(CommInit, TcpStoreUnorderedReproduces1047sTextbook) {
  EXPECT_NEAR(init_s(2048, CommInitStore::TcpStore, false), 1047.0, 0.1 * 1047.0);
}

// Redis: 300.7 + 1184 x 4096 / 80,000 ops/s = 300.7 + 60.6 = 361.3 s (MegaScale: 361 s).
TEST(CommInit, RedisUnorderedReproduces361s) {
  EXPECT_NEAR(init_s(2048, CommInitStore::Redis, false), 361.0, 0.1 * 361.0);
}

// Prediction: ordered + Redis at 2,048 = 7 x 0.254 + 7 x 4096 / 80,000 = 1.78 + 0.36 = 2.14 s.
TEST(CommInit, OrderedRedisUnder5sAt2048) {
  const double t = init_s(2048, CommInitStore::Redis, true);
  EXPECT_NEAR(t, 2.14, 0.05);
  EXPECT_LT(t, 5.0);
}

// Prediction: 12,288 GPUs = 7 x 0.254 + 7 x 24,576 / 80,000 = 1.78 + 2.15 = 3.93 s (< 30 s).
TEST(CommInit, OrderedRedisUnder30sAt12288) {
  const double t = init_s(12288, CommInitStore::Redis, true);
  EXPECT_NEAR(t, 3.93, 0.05);
  EXPECT_LT(t, 30.0);
}

TEST(CommInit, UnorderedIsQuadraticOrderedLinearInStoreOps) {
  const auto k = catalog_constants();
  auto ops = [&](std::int64_t n, bool ordered) {
    return model_comm_init({n, megatron_comm_groups(n, 8, 8, 1), CommInitStore::Redis, ordered}, k).store_ops;
  };
  // O(n^2) up to the DP groups, whose count TP*PP does not grow: 2 x 2240/1184 = 3.78.
  EXPECT_NEAR(ops(4096, false) / ops(2048, false), 3.78, 0.01);
  EXPECT_DOUBLE_EQ(ops(4096, true) / ops(2048, true), 2.0);    // O(n)
}

TEST(CommInit, MonotoneInGpuCount) {
  for (CommInitStore s : {CommInitStore::TcpStore, CommInitStore::Redis}) {
    for (bool ordered : {false, true}) {
      double prev = 0;
      for (std::int64_t n = 64; n <= 65536; n *= 2) {
        const double t = init_s(n, s, ordered);
        EXPECT_GT(t, prev) << n;
        prev = t;
      }
    }
  }
}

TEST(CommInit, EachOptimisationHelps) {
  EXPECT_LT(init_s(2048, CommInitStore::Redis, false), init_s(2048, CommInitStore::TcpStore, false));
  EXPECT_LT(init_s(2048, CommInitStore::TcpStore, true), init_s(2048, CommInitStore::TcpStore, false));
  EXPECT_LT(init_s(2048, CommInitStore::Redis, true), init_s(2048, CommInitStore::TcpStore, true));
}

TEST(CommInit, ContextParallelAddsGroups) {
  EXPECT_EQ(megatron_comm_groups(2048, 8, 8, 2).size(), 9u);
}

TEST(CommInit, FromJobSpecFollowsSystemSwitches) {
  JobSpec job;
  job.cluster.num_gpus = 2048;
  job.parallel.tensor_model_parallel_size = 8;
  job.parallel.pipeline_model_parallel_size = 8;
  job.system.comm_init_store = CommInitStore::TcpStore;
  job.system.comm_init_ordered = false;
  EXPECT_NEAR(model_comm_init(job, catalog_constants()).total_s, 1047.0, 0.1 * 1047.0);
  job.system.comm_init_store = CommInitStore::Redis;
  job.system.comm_init_ordered = true;
  EXPECT_LT(model_comm_init(job, catalog_constants()).total_s, 5.0);
}

TEST(CommInit, BadInputs) {
  EXPECT_THROW(megatron_comm_groups(100, 8, 8, 1), InputError);
  EXPECT_THROW(megatron_comm_groups(0, 8, 8, 1), InputError);
  EXPECT_THROW(parse_comm_init_store("etcd", "system.comm_init_store"), InputError);
  EXPECT_EQ(parse_comm_init_store("redis", "x"), CommInitStore::Redis);
}

// Today's PyTorch, by hand: 16 GPUs, TP 2 PP 2 -> DP 4. NCCL groups with more than one rank:
// dp 4x4, tp 8x2, pp 8x2, mp 4x4, embedding 8x2, plus the world communicator; gloo dp 4x4.
// Store ops: world 16 + 5 kinds x 16 (one set and size - 1 gets per group) + gloo 4 x 4^2 = 160;
// each rank builds 6 communicators of its own in turn.
TEST(CommInit, LazyPyTorchTextbook) {
  CommInitConstants k;
  k.store_connect_s = 1e-3;
  k.tcpstore_op_s = 1e-4;
  k.group_fixed_s = 0.25;
  CommInitInput in{16, megatron_comm_groups(16, 2, 2, 1), CommInitStore::TcpStore, false};
  in.lazy = true;
  const CommInitResult r = model_comm_init(in, k);
  EXPECT_DOUBLE_EQ(r.store_ops, 160.0);
  EXPECT_NEAR(r.rendezvous_s, 0.016, 1e-12);
  EXPECT_NEAR(r.store_s, 0.016, 1e-12);
  EXPECT_NEAR(r.group_fixed_s, 1.5, 1e-12);
  EXPECT_NEAR(r.total_s, 1.532, 1e-12);
  EXPECT_EQ(r.barriers, 0);
  // Ordering changes nothing when no call waits on a barrier.
  in.ordered = true;
  EXPECT_DOUBLE_EQ(model_comm_init(in, k).total_s, r.total_s);
}

// A Megatron-Core job at 98,304 GPUs (TP 4, PP 4) starts in minutes without gloo groups; with
// them their full-mesh connects (16 groups of 6,144) dominate; the 2023 behaviour MegaScale
// measured (a global barrier per group) would take weeks.
TEST(CommInit, TodaysPyTorchAt98304Gpus) {
  JobSpec job;
  job.cluster.num_gpus = 98304;
  job.parallel.tensor_model_parallel_size = 4;
  job.parallel.pipeline_model_parallel_size = 4;
  job.system.comm_init_lazy = true;
  job.system.gloo_process_groups = false;
  const double lazy = model_comm_init(job, catalog_constants()).total_s;
  EXPECT_GT(lazy, 100.0);  // the rendezvous alone: ~100 s at 96K ranks (PyTorch's libuv tutorial)
  EXPECT_LT(lazy, 600.0);
  job.system.gloo_process_groups = true;
  EXPECT_GT(model_comm_init(job, catalog_constants()).total_s, 100.0 * lazy);
  job.system.comm_init_lazy = false;
  EXPECT_GT(model_comm_init(job, catalog_constants()).total_s, 1e6);
}

}  // namespace
}  // namespace megasim
