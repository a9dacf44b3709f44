#include "megasim/workload/schedule.hpp"

#include <gtest/gtest.h>

#include <set>

#include "megasim/core/error.hpp"

namespace megasim {
namespace {

// 1F1B, p = 4, m = 6: stage 0 warms up with p - 0 - 1 = 3 forwards, the last stage with none.
TEST(Schedule, OneFOneBWarmupTextbook) {
  const auto s0 = stage_schedule(PipelineSchedule::OneFOneB, 4, 1, 6, 0);
  ASSERT_EQ(s0.size(), 12U);
  EXPECT_TRUE(s0[0].forward && s0[1].forward && s0[2].forward && s0[3].forward);
  EXPECT_FALSE(s0[4].forward);
  EXPECT_EQ(s0[4].micro_batch, 0);
  const auto s3 = stage_schedule(PipelineSchedule::OneFOneB, 4, 1, 6, 3);
  EXPECT_TRUE(s3[0].forward);
  EXPECT_FALSE(s3[1].forward);
  EXPECT_EQ(warmup_passes(4, 1, 6, 1), 2);
  EXPECT_EQ(warmup_passes(4, 1, 2, 0), 2);  // capped by m
}

// Megatron-Core's merged 1F1B (overlap_moe_expert_parallel_comm) adds one warm-up forward
// (schedules.py get_pp_rank_microbatches), so that each merged forward and backward are
// independent; PP 1 too (combined_1f1b.py: the first forward runs alone).
TEST(Schedule, MergedOneFOneBRunsOneMoreWarmUpForward) {
  EXPECT_EQ(warmup_passes(2, 2, 4, 0, 1), 5);
  EXPECT_EQ(warmup_passes(2, 2, 4, 1, 1), 3);
  EXPECT_EQ(warmup_passes(1, 1, 4, 0, 1), 1);
  EXPECT_EQ(warmup_passes(2, 2, 2, 0, 1), 4);  // capped at m * v
  const auto s1 = stage_schedule(PipelineSchedule::OneFOneB, 1, 1, 3, 0, 1);
  ASSERT_EQ(s1.size(), 6U);
  EXPECT_EQ(s1[0], (ChunkPass{true, 0, 0}));
  EXPECT_EQ(s1[1], (ChunkPass{true, 0, 1}));   // merged with ...
  EXPECT_EQ(s1[2], (ChunkPass{false, 0, 0}));  // ... the first backward
  EXPECT_EQ(s1[5], (ChunkPass{false, 0, 2}));  // the last backward runs alone
}

// Interleaved, p = 2, v = 2, m = 4: Megatron's warm-up is (p-s-1)*2 + (v-1)*p = 4 on stage 0
// and 2 on stage 1. Virtual pass k maps to chunk (k/p)%v and micro-batch (k/(p v))*p + k%p:
// forward order on every stage is (c0,m0) (c0,m1) (c1,m0) (c1,m1) (c0,m2) (c0,m3) ...
TEST(Schedule, InterleavedOrderTextbook) {
  EXPECT_EQ(warmup_passes(2, 2, 4, 0), 4);
  EXPECT_EQ(warmup_passes(2, 2, 4, 1), 2);
  EXPECT_EQ(warmup_passes(2, 2, 2, 1), 4);  // m == p: all warm-up
  const auto s0 = stage_schedule(PipelineSchedule::OneFOneB, 2, 2, 4, 0);
  ASSERT_EQ(s0.size(), 16U);
  EXPECT_EQ(s0[0], (ChunkPass{true, 0, 0}));
  EXPECT_EQ(s0[1], (ChunkPass{true, 0, 1}));
  EXPECT_EQ(s0[2], (ChunkPass{true, 1, 0}));
  EXPECT_EQ(s0[3], (ChunkPass{true, 1, 1}));
  EXPECT_EQ(s0[4], (ChunkPass{true, 0, 2}));
  EXPECT_EQ(s0[5], (ChunkPass{false, 1, 0}));  // first backward: the last chunk
  // Every (direction, chunk, micro-batch) appears exactly once.
  std::set<std::tuple<bool, int, std::int64_t>> seen;
  for (const auto& p : s0) seen.insert({p.forward, p.chunk, p.micro_batch});
  EXPECT_EQ(seen.size(), 16U);
}

TEST(Schedule, GPipeIsAllForwardsFirst) {
  const auto s = stage_schedule(PipelineSchedule::GPipe, 4, 1, 3, 2);
  ASSERT_EQ(s.size(), 6U);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s[static_cast<std::size_t>(i)].forward);
  for (int i = 3; i < 6; ++i) EXPECT_FALSE(s[static_cast<std::size_t>(i)].forward);
}

TEST(Schedule, InterleavedNeedsMultipleOfP) {
  EXPECT_THROW(stage_schedule(PipelineSchedule::OneFOneB, 4, 2, 6, 0), InputError);
  EXPECT_THROW(stage_schedule(PipelineSchedule::OneFOneB, 0, 1, 6, 0), std::invalid_argument);
}

}  // namespace
}  // namespace megasim
