#include "megasim/workload/task_graph.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace megasim {
namespace {

// Every chunk gets `dp_buckets` DP buckets (1: whole-chunk collectives).
StepCosts costs(int p, int v, std::int64_t m, std::int64_t dp, int dp_buckets = 1) {
  StepCosts c;
  c.pp = p;
  c.vpp = v;
  c.micro_batches = m;
  c.dp = dp;
  c.chunks.assign(static_cast<std::size_t>(p), std::vector<ChunkCosts>(static_cast<std::size_t>(v)));
  for (auto& st : c.chunks)
    for (auto& ch : st) {
      ch.fwd_compute_s = 1;
      ch.bwd_compute_s = 2;
      ch.param_bytes = 100;
      ch.dp_buckets = dp_buckets;
    }
  c.p2p_bytes = 10;
  c.dp_grad_reduce_bytes = 1000;
  c.dp_param_gather_bytes = 500;
  return c;
}

std::size_t count(const StepGraph& g, TaskKind k) {
  std::size_t n = 0;
  for (const auto& t : g.tasks) n += t.kind == k;
  return n;
}

// p = 4, v = 2, m = 4: 2*p*v*m = 64 passes; transfers cross every virtual boundary except
// none (p > 1): forward (p v - 1) * m = 28, backward the same.
TEST(TaskGraph, CountsTextbook) {
  const StepGraph g = build_step_graph(costs(4, 2, 4, 2), WorkloadOptions{});
  EXPECT_EQ(count(g, TaskKind::Forward), 32U);
  EXPECT_EQ(count(g, TaskKind::Backward), 32U);
  EXPECT_EQ(count(g, TaskKind::PpTransfer), 56U);
  // ZeRO-1 without overlap: one reduce-scatter and one all-gather per stage.
  EXPECT_EQ(count(g, TaskKind::DpReduceScatter), 4U);
  EXPECT_EQ(count(g, TaskKind::DpAllGather), 4U);
  for (const auto& ord : g.compute_order) EXPECT_EQ(ord.size(), 1U + 16U + 2U);
}

TEST(TaskGraph, DpOverlapSplitsPerChunk) {
  WorkloadOptions o;
  o.zero_stage = 2;
  o.dp_overlap = true;
  const StepGraph g = build_step_graph(costs(2, 3, 4, 4), o);
  EXPECT_EQ(count(g, TaskKind::DpReduceScatter), 6U);
  EXPECT_EQ(count(g, TaskKind::DpAllGather), 6U);
  double rs = 0;
  for (const auto& t : g.tasks)
    if (t.kind == TaskKind::DpReduceScatter && t.stage == 0) rs += t.bytes;
  EXPECT_DOUBLE_EQ(rs, 1000.0);
  // All-gathers are issued first on the DP stream, in chunk order.
  const auto& d0 = g.dp_order[0];
  EXPECT_EQ(g.tasks[d0[0]].kind, TaskKind::DpAllGather);
  EXPECT_EQ(g.tasks[d0[0]].chunk, 0);
  EXPECT_EQ(g.tasks[d0[2]].chunk, 2);
}

// GC skew (MegaScale §6.3) delays only each stage's last gradient reduction: with per-chunk
// overlap that is chunk 0's (its last backward ends the stage's program).
TEST(TaskGraph, GcSkewDelaysOnlyTheLastReductionOfEachStage) {
  StepCosts c = costs(2, 3, 4, 4);
  c.gc_skew_s = 0.05;
  for (const bool overlap : {false, true}) {
    WorkloadOptions o;
    o.zero_stage = 2;
    o.dp_overlap = overlap;
    const StepGraph g = build_step_graph(c, o);
    std::vector<int> delayed(2, 0);
    for (const auto& t : g.tasks) {
      if (t.launch_delay_s == 0) continue;
      EXPECT_EQ(t.kind, TaskKind::DpReduceScatter);
      EXPECT_DOUBLE_EQ(t.launch_delay_s, 0.05);
      if (overlap) {
        EXPECT_EQ(t.chunk, 0);
      }
      ++delayed[static_cast<std::size_t>(t.stage)];
    }
    EXPECT_EQ(delayed, std::vector<int>({1, 1})) << "overlap " << overlap;
  }
}

TEST(TaskGraph, DdpAllReduceAndNoDpForSingleReplica) {
  WorkloadOptions o;
  o.zero_stage = 0;
  EXPECT_EQ(count(build_step_graph(costs(2, 1, 2, 8), o), TaskKind::DpAllReduce), 2U);
  EXPECT_EQ(count(build_step_graph(costs(2, 1, 2, 1), o), TaskKind::DpAllReduce), 0U);
}

TEST(TaskGraph, BlockingSendAddsSenderDependency) {
  WorkloadOptions o;
  o.pp_overlap = false;
  const StepGraph blocking = build_step_graph(costs(2, 1, 2, 1), o);
  o.pp_overlap = true;
  const StepGraph async = build_step_graph(costs(2, 1, 2, 1), o);
  std::size_t deps_b = 0, deps_a = 0;
  for (const auto& t : blocking.tasks) deps_b += t.deps.size();
  for (const auto& t : async.tasks) deps_a += t.deps.size();
  EXPECT_GT(deps_b, deps_a);
}

TaskIndex find_pass(const StepGraph& g, int stage, TaskKind kind, int chunk, std::int64_t mb) {
  for (TaskIndex t = 0; t < g.tasks.size(); ++t) {
    const StepTask& k = g.tasks[t];
    if (k.stage == stage && k.kind == kind && k.chunk == chunk && k.micro_batch == mb) return t;
  }
  ADD_FAILURE() << "no such task";
  return 0;
}

bool depends_on(const StepGraph& g, TaskIndex t, TaskIndex d) {
  const auto& deps = g.tasks[t].deps;
  return std::find(deps.begin(), deps.end(), d) != deps.end();
}

// p = 2, v = 1, m = 2 (1F1B). Stage 0 runs F0 | F1 | B0 | B1, stage 1 runs F0 | B0 | F1 | B1.
// Stage 0's send of F1's output moves only once stage 1 has finished B0 (the group before
// its F1, where Megatron posts that receive), and stage 0's B0 waits for the send.
TEST(TaskGraph, BlockingExchangeWaitsForTheReceiverToPost) {
  WorkloadOptions o;
  o.pp_overlap = false;
  const StepGraph g = build_step_graph(costs(2, 1, 2, 1), o);
  const TaskIndex x = find_pass(g, 0, TaskKind::PpTransfer, 0, 1);
  EXPECT_EQ(g.tasks[x].peer_stage, 1);
  EXPECT_TRUE(depends_on(g, x, find_pass(g, 0, TaskKind::Forward, 0, 1)));
  EXPECT_TRUE(depends_on(g, x, find_pass(g, 1, TaskKind::Backward, 0, 0)));
  EXPECT_TRUE(depends_on(g, find_pass(g, 0, TaskKind::Backward, 0, 0), x));
  EXPECT_TRUE(depends_on(g, find_pass(g, 1, TaskKind::Forward, 0, 1), x));

  o.pp_overlap = true;
  const StepGraph a = build_step_graph(costs(2, 1, 2, 1), o);
  const TaskIndex y = find_pass(a, 0, TaskKind::PpTransfer, 0, 1);
  EXPECT_EQ(a.tasks[y].deps.size(), 1U);
  EXPECT_FALSE(depends_on(a, find_pass(a, 0, TaskKind::Backward, 0, 0), y));
}

// Interleaved steady state: a forward and the backward after it share one exchange, so the
// forward already waits for the gradient its partner backward consumes.
TEST(TaskGraph, InterleavedSteadyPairSharesOneExchange) {
  WorkloadOptions o;
  o.pp_overlap = false;
  const StepGraph g = build_step_graph(costs(2, 2, 4, 1), o);
  int pairs = 0;
  for (const auto& ord : g.compute_order) {
    for (std::size_t i = 1; i < ord.size(); ++i) {
      const StepTask& f = g.tasks[ord[i - 1]];
      const StepTask& b = g.tasks[ord[i]];
      if (f.kind != TaskKind::Forward || b.kind != TaskKind::Backward) continue;
      ++pairs;
      for (TaskIndex d : b.deps) {
        if (g.tasks[d].kind == TaskKind::PpTransfer) {
          EXPECT_TRUE(depends_on(g, ord[i - 1], d)) << g.describe(ord[i]);
        }
      }
    }
  }
  EXPECT_GT(pairs, 0);
}

// The executor runs a task once its deps and its stream predecessor are done, so a step can
// finish only if that combined graph has no cycle (Kahn's algorithm).
bool runs_to_completion(const StepGraph& g) {
  const std::size_t n = g.tasks.size();
  std::vector<std::vector<TaskIndex>> out(n);
  std::vector<std::size_t> indeg(n, 0);
  for (TaskIndex t = 0; t < n; ++t)
    for (TaskIndex d : g.tasks[t].deps) { out[d].push_back(t); ++indeg[t]; }
  for (const auto* orders : {&g.compute_order, &g.dp_order})
    for (const auto& ord : *orders)
      for (std::size_t i = 1; i < ord.size(); ++i) { out[ord[i - 1]].push_back(ord[i]); ++indeg[ord[i]]; }
  std::vector<TaskIndex> ready;
  for (TaskIndex t = 0; t < n; ++t) if (indeg[t] == 0) ready.push_back(t);
  std::size_t done = 0;
  while (!ready.empty()) {
    const TaskIndex t = ready.back();
    ready.pop_back();
    ++done;
    for (TaskIndex u : out[t]) if (--indeg[u] == 0) ready.push_back(u);
  }
  return done == n;
}

// Every schedule shape, blocking or not, including Megatron's all-warm-up case m == p.
TEST(TaskGraph, EveryScheduleShapeIsDeadlockFree) {
  for (const bool overlap : {false, true}) {
    for (const int p : {2, 3, 4, 8}) {
      for (const int v : {1, 2, 3}) {
        for (const std::int64_t m : {std::int64_t{1}, std::int64_t{p}, std::int64_t{2 * p}, std::int64_t{3 * p}}) {
          if (v > 1 && m % p != 0) continue;
          for (const auto sched : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe}) {
            WorkloadOptions o;
            o.pp_overlap = overlap;
            o.schedule = sched;
            const StepGraph g = build_step_graph(costs(p, v, m, 2), o);
            EXPECT_TRUE(runs_to_completion(g)) << "p " << p << " v " << v << " m " << m << " overlap " << overlap;
          }
        }
      }
    }
  }
}

// Bucketed DP overlap (Megatron-Core): each chunk's last backward and first forward split
// into one piece per bucket; bucket k's reduce-scatter waits only for backward piece k,
// forward piece k only for all-gather k, and the pieces keep the pass's total work.
TEST(TaskGraph, DpBucketsSplitTheChunkPassesAroundTheirCollectives) {
  for (const bool pp_overlap : {false, true}) {
    StepCosts c = costs(2, 2, 4, 4, 3);
    WorkloadOptions o;
    o.zero_stage = 2;
    o.dp_overlap = true;
    o.pp_overlap = pp_overlap;
    const StepGraph g = build_step_graph(c, o);
    EXPECT_TRUE(runs_to_completion(g));
    EXPECT_EQ(count(g, TaskKind::DpReduceScatter), 12U);
    EXPECT_EQ(count(g, TaskKind::DpAllGather), 12U);
    EXPECT_EQ(count(g, TaskKind::Backward), 16U + 4U * 2U);
    EXPECT_EQ(count(g, TaskKind::Forward), 16U + 4U * 2U);
    double bwd = 0, rs = 0;
    for (const auto& t : g.tasks) {
      if (t.stage != 0) continue;
      if (t.kind == TaskKind::Backward) bwd += t.compute_s;
      if (t.kind == TaskKind::DpReduceScatter) {
        rs += t.bytes;
        ASSERT_EQ(t.deps.size(), 1U);
        EXPECT_EQ(g.tasks[t.deps[0]].kind, TaskKind::Backward);
        EXPECT_DOUBLE_EQ(g.tasks[t.deps[0]].compute_s, 2.0 / 3.0);
      }
    }
    EXPECT_DOUBLE_EQ(bwd, 2.0 * 2 * 4);
    EXPECT_DOUBLE_EQ(rs, 1000.0);
    // The pieces run back to back on the compute program, each after its predecessor.
    for (const auto& ord : g.compute_order) EXPECT_EQ(ord.size(), 1U + 16U + 8U + 2U);
  }
}

// Traces and deadlock reports tell every task apart: the pieces of a split pass, each bucket's
// collective (named after the piece it pairs with), ZeRO-3's gathers before a forward and before
// a backward, and the activation and gradient transfers over one pipeline boundary.
TEST(TaskGraph, EveryTaskHasADistinctName) {
  for (const int zero : {2, 3}) {
    for (const bool pp_overlap : {false, true}) {
      StepCosts c = costs(2, 2, 4, 4, 3);
      WorkloadOptions o;
      o.zero_stage = zero;
      o.dp_overlap = true;
      o.pp_overlap = pp_overlap;
      const StepGraph g = build_step_graph(c, o);
      std::set<std::string> names;
      for (TaskIndex t = 0; t < static_cast<TaskIndex>(g.tasks.size()); ++t) {
        const StepTask& k = g.tasks[t];
        EXPECT_TRUE(names.insert(g.describe(t)).second)
            << "duplicate name " << g.describe(t) << " (ZeRO-" << zero << ", pp_overlap " << pp_overlap << ")";
        if (k.kind == TaskKind::DpReduceScatter) {
          EXPECT_EQ(k.bucket, g.tasks[k.deps.front()].bucket);
          EXPECT_EQ(k.buckets, 3);
        }
      }
      EXPECT_EQ(names.count("stage 0 B chunk 0 mb 3 bucket 3/3"), 1U) << "pieces are numbered from 1";
      EXPECT_EQ(names.count("stage 1 pp_transfer->0 F chunk 0 mb 0"), 1U) << "interleaved wrap-around";
      EXPECT_EQ(names.count("stage 1 pp_transfer->0 B chunk 0 mb 0"), 1U);
      if (zero == 3) {
        EXPECT_EQ(names.count("stage 0 dp_all_gather B chunk 1 mb 0 bucket 2/3"), 1U);
      }
    }
  }
}

// ZeRO-3 (FSDP) with buckets gathers one bucket of parameters before each piece of every
// pass, two pieces ahead; the gradients still reduce once per chunk, bucket by bucket.
TEST(TaskGraph, Zero3BucketsGatherBeforeEveryPiece) {
  StepCosts c = costs(2, 2, 4, 4, 3);
  WorkloadOptions o;
  o.zero_stage = 3;
  const StepGraph g = build_step_graph(c, o);
  EXPECT_TRUE(runs_to_completion(g));
  EXPECT_EQ(count(g, TaskKind::Forward), 16U * 3U);
  EXPECT_EQ(count(g, TaskKind::Backward), 16U * 3U);
  EXPECT_EQ(count(g, TaskKind::DpAllGather), 2U * 16U * 3U);  // [stage][every piece]
  EXPECT_EQ(count(g, TaskKind::DpReduceScatter), 2U * 2U * 3U);
  double gathered = 0;
  for (const auto& t : g.tasks)
    if (t.kind == TaskKind::DpAllGather && t.stage == 0) gathered += t.bytes;
  EXPECT_NEAR(gathered, 500.0 * 2 * 4, 1e-9);  // the stage's parameters, every pass
}

// Gradients reduced every micro-batch (DeepSpeed ZeRO-2, FSDP without no_sync): one
// reduce-scatter per bucket of every backward pass, each released by the piece producing it,
// m times the once-per-step bytes in all.
TEST(TaskGraph, ReducingEveryMicroBatchFollowsEveryBackward) {
  StepCosts c = costs(2, 2, 4, 4, 3);
  WorkloadOptions o;
  o.zero_stage = 2;
  o.reduce_every_micro_batch = true;
  const StepGraph g = build_step_graph(c, o);
  EXPECT_TRUE(runs_to_completion(g));
  EXPECT_EQ(count(g, TaskKind::Backward), 16U * 3U);  // every backward split into its buckets
  EXPECT_EQ(count(g, TaskKind::Forward), 16U);
  EXPECT_EQ(count(g, TaskKind::DpReduceScatter), 16U * 3U);  // [every backward piece]
  double reduced = 0;
  for (const auto& t : g.tasks) {
    if (t.kind != TaskKind::DpReduceScatter) continue;
    if (t.stage == 0) reduced += t.bytes;
    ASSERT_EQ(t.deps.size(), 1U);
    EXPECT_EQ(g.tasks[t.deps[0]].kind, TaskKind::Backward);
    EXPECT_EQ(g.tasks[t.deps[0]].bucket, t.bucket);
  }
  EXPECT_NEAR(reduced, 1000.0 * 4, 1e-9);
}

// Whatever the ZeRO stage, overlap, bucket count and pipeline shape, the compute programs and
// the DP streams (each issued in key order) never wait on each other in a cycle.
TEST(TaskGraph, EveryDpModeIsDeadlockFree) {
  for (const int zero : {0, 1, 2, 3}) {
    for (const bool dp_overlap : {false, true}) {
      for (const int buckets : {1, 5}) {
        for (const bool pp_overlap : {false, true}) {
          for (const bool every_mb : {false, true}) {
            if (every_mb && zero < 2) continue;
            for (const auto& [p, v, m] : {std::tuple{1, 1, 3}, std::tuple{2, 1, 4}, std::tuple{4, 2, 8}, std::tuple{3, 3, 3}}) {
              const StepCosts c = costs(p, v, m, 4, buckets);
              WorkloadOptions o;
              o.zero_stage = zero;
              o.dp_overlap = dp_overlap;
              o.pp_overlap = pp_overlap;
              o.reduce_every_micro_batch = every_mb;
              EXPECT_TRUE(runs_to_completion(build_step_graph(c, o)))
                  << "zero " << zero << " dp_overlap " << dp_overlap << " buckets " << buckets << " pp_overlap "
                  << pp_overlap << " every_mb " << every_mb << " p " << p << " v " << v << " m " << m;
            }
          }
        }
      }
    }
  }
}

// Megatron-Core's merged 1F1B step pairs the n-th steady forward with the n-th steady backward
// and overlaps min(Lf, Lb) of their layers; the longer chunk's other layers run alone
// (TransformerModelChunkSchedulePlan.run). Chunk 0 has 2 layers, chunk 1 one: a steady
// 2-layer pass paired with a 1-layer one exposes half its layers' exchanges as a lone pass.
TEST(TaskGraph, MergedPairsOverlapOnlyTheShorterChunksLayers) {
  StepCosts c = costs(2, 2, 8, 1);
  for (auto& st : c.chunks) {
    for (std::size_t v = 0; v < st.size(); ++v) {
      st[v].merged_layers = v == 0 ? 2 : 1;
      st[v].fwd_ep_exposed_s = 0.1;
      st[v].fwd_ep_alone_s = 0.5;
      st[v].bwd_ep_exposed_s = 0.2;
      st[v].bwd_ep_alone_s = 0.6;
    }
  }
  const StepGraph g = build_step_graph(c, WorkloadOptions{});
  int mixed = 0, merged = 0;
  for (const auto& t : g.tasks) {
    if (t.kind != TaskKind::Forward && t.kind != TaskKind::Backward) continue;
    const bool fwd = t.kind == TaskKind::Forward;
    const double m = fwd ? 0.1 : 0.2, alone = fwd ? 0.5 : 0.6;
    if (std::abs(t.ep_exposed_s - 0.5 * (m + alone)) < 1e-12) {
      EXPECT_EQ(t.chunk, 0);  // only the 2-layer chunk is ever the longer one
      ++mixed;
    } else if (std::abs(t.ep_exposed_s - m) < 1e-12) {
      ++merged;
    } else {
      EXPECT_DOUBLE_EQ(t.ep_exposed_s, alone) << g.describe(static_cast<TaskIndex>(&t - g.tasks.data()));
    }
  }
  EXPECT_GT(mixed, 0);
  EXPECT_GT(merged, 0);
  // Even chunks: every steady pass keeps its merged figure.
  for (auto& st : c.chunks)
    for (auto& ch : st) ch.merged_layers = 2;
  const StepGraph even = build_step_graph(c, WorkloadOptions{});
  for (const auto& t : even.tasks) {
    if (t.kind != TaskKind::Forward) continue;
    EXPECT_TRUE(std::abs(t.ep_exposed_s - 0.1) < 1e-12 || std::abs(t.ep_exposed_s - 0.5) < 1e-12);
  }
}

}  // namespace
}  // namespace megasim
