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

}  // namespace
}  // namespace megasim
