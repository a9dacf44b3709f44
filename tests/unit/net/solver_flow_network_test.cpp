// FlowNetwork on the engine: completion times derived by hand, byte conservation, stats.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "megasim/core/rng.hpp"
#include "megasim/net/flow_network.hpp"
#include "megasim/sim/engine.hpp"

namespace megasim {
namespace {

TEST(FlowNetwork, SingleFlowFinishesAtLatencyPlusSizeOverCapacity) {
  // S = 1e9 B over C = 1e10 B/s with 1 us latency: 1e-6 + 0.1 s = 100,001,000,000 ps.
  Engine engine;
  FlowNetwork net(engine, {1e10});
  std::int64_t done_ps = -1;
  net.start_flow({.path = {0}, .bytes = 1e9, .latency_s = 1e-6,
                  .on_complete = [&] { done_ps = engine.now().ps(); }});
  EXPECT_EQ(net.active_flows(), 1u);
  engine.run();
  EXPECT_EQ(done_ps, 100'001'000'000);
  EXPECT_DOUBLE_EQ(net.link_bytes(0), 1e9);
  EXPECT_NEAR(net.link_busy_s(0), 0.1, 1e-12);
  EXPECT_EQ(net.flows_completed(), 1u);
  EXPECT_EQ(net.active_flows(), 0u);
  EXPECT_NO_THROW(engine.require_all_finished());
}

TEST(FlowNetwork, FlowStartingMidwayHalvesTheRate) {
  // C = 1e10 B/s. A: 1e9 B from t = 0. B: 1e9 B from t = 0.05 s.
  // 0 .. 0.05: A alone at 1e10 -> 5e8 B moved, 5e8 left.
  // Then both at 5e9: A's 5e8 take 0.1 s -> A done at 0.15 s; B has moved 5e8 by then.
  // B alone again at 1e10: 5e8 left take 0.05 s -> B done at 0.20 s.
  Engine engine;
  FlowNetwork net(engine, {1e10});
  std::int64_t a_ps = -1;
  std::int64_t b_ps = -1;
  net.start_flow({.path = {0}, .bytes = 1e9, .on_complete = [&] { a_ps = engine.now().ps(); }});
  engine.schedule_at(SimTime::from_seconds(0.05), [&] {
    net.start_flow({.path = {0}, .bytes = 1e9, .on_complete = [&] { b_ps = engine.now().ps(); }});
  });
  engine.run();
  EXPECT_NEAR(static_cast<double>(a_ps), 150e9, 1.0);
  EXPECT_NEAR(static_cast<double>(b_ps), 200e9, 1.0);
  EXPECT_NEAR(net.link_bytes(0), 2e9, 1e-3);
  EXPECT_NEAR(net.link_busy_s(0), 0.2, 1e-11);
}

TEST(FlowNetwork, MultiplicityMovesEveryCopy) {
  // k = 2 copies of S = 1e9 on C = 1e10: each copy gets 5e9 -> done at 0.2 s;
  // the link carries 2e9 bytes.
  Engine engine;
  FlowNetwork net(engine, {1e10});
  std::int64_t done_ps = -1;
  net.start_flow({.path = {0}, .bytes = 1e9, .multiplicity = 2,
                  .on_complete = [&] { done_ps = engine.now().ps(); }});
  engine.run();
  EXPECT_NEAR(static_cast<double>(done_ps), 200e9, 1.0);
  EXPECT_DOUBLE_EQ(net.link_bytes(0), 2e9);
}

TEST(FlowNetwork, LocalCopiesUseOnlyTheCap) {
  // Empty path: 1e6 B at a cap of 1e9 B/s after 2 us -> 2e-6 + 1e-3 s = 1,002,000,000 ps.
  // With no cap the copy completes when the latency is paid.
  Engine engine;
  FlowNetwork net(engine, {1e10});
  std::int64_t capped_ps = -1;
  std::int64_t free_ps = -1;
  net.start_flow({.bytes = 1e6, .latency_s = 2e-6, .rate_cap_Bps = 1e9,
                  .on_complete = [&] { capped_ps = engine.now().ps(); }});
  net.start_flow({.bytes = 1e6, .latency_s = 2e-6,
                  .on_complete = [&] { free_ps = engine.now().ps(); }});
  engine.run();
  EXPECT_EQ(capped_ps, 1'002'000'000);
  EXPECT_EQ(free_ps, 2'000'000);
  EXPECT_DOUBLE_EQ(net.link_bytes(0), 0.0);
}

TEST(FlowNetwork, ZeroByteFlowCompletesAfterLatencyOutsideStartFlow) {
  Engine engine;
  FlowNetwork net(engine, {1e10});
  bool done = false;
  net.start_flow({.path = {0}, .bytes = 0.0, .on_complete = [&] { done = true; }});
  EXPECT_FALSE(done);  // never re-entrantly from start_flow
  engine.run();
  EXPECT_TRUE(done);
  EXPECT_EQ(engine.now().ps(), 0);
}

TEST(FlowNetwork, CompletionCallbackMayStartTheNextFlow) {
  // A chain of 3 flows of 1e9 B on C = 1e10 with 1 us latency each: 3 x (1e-6 + 0.1) s.
  Engine engine;
  FlowNetwork net(engine, {1e10});
  int remaining = 3;
  std::function<void()> next = [&] {
    if (--remaining < 0) return;
    net.start_flow({.path = {0}, .bytes = 1e9, .latency_s = 1e-6, .on_complete = next});
  };
  next();
  engine.run();
  EXPECT_EQ(engine.now().ps(), 3 * 100'001'000'000);
  EXPECT_EQ(net.flows_completed(), 3u);
}

TEST(FlowNetwork, StalledFlowIsReportedAsUnfinished) {
  Engine engine;
  FlowNetwork net(engine, {0.0});
  net.start_flow({.path = {0}, .bytes = 10.0, .name = "send r0->r1 over dead link"});
  engine.run();
  EXPECT_EQ(net.active_flows(), 1u);
  try {
    engine.require_all_finished();
    FAIL() << "expected DeadlockError";
  } catch (const DeadlockError& e) {
    EXPECT_NE(std::string(e.what()).find("send r0->r1 over dead link"), std::string::npos);
  }
}

// Flows whose latency ends together share one activation event only when nothing else was
// scheduled between their starts: an event scheduled in between (X, which starts flow C at that
// time) still runs between the two activations, so C completes between A and B.
TEST(FlowNetwork, SharedLatencyEndsKeepTheEventOrder) {
  Engine engine;
  FlowNetwork net(engine, {1e9});
  std::vector<char> done;
  auto flow = [&](char name, double latency_s) {
    net.start_flow({.path = {0}, .bytes = 0.0, .latency_s = latency_s, .on_complete = [&done, name] { done.push_back(name); }});
  };
  flow('A', 1e-6);
  engine.schedule_at(SimTime::from_seconds(1e-6), [&] { flow('C', 0.0); });
  flow('B', 1e-6);
  flow('D', 1e-6);  // shares B's activation
  engine.run();
  EXPECT_EQ(std::string(done.begin(), done.end()), "ACBD");
}

TEST(FlowNetwork, BusiestLinksByBytesThenId) {
  Engine engine;
  FlowNetwork net(engine, {1e9, 1e9, 1e9, 1e9});
  net.start_flow({.path = {2}, .bytes = 100.0});
  net.start_flow({.path = {1, 3}, .bytes = 300.0});
  net.start_flow({.path = {0}, .bytes = 300.0});
  engine.run();
  const auto top = net.busiest_links(3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 0u);
  EXPECT_EQ(top[1].first, 1u);
  EXPECT_EQ(top[2].first, 3u);
  EXPECT_DOUBLE_EQ(top[0].second, 300.0);
  EXPECT_EQ(net.busiest_links(10).size(), 4u);
}

// Equal loads summed in another order differ in their last bits; they still tie and list by id.
TEST(FlowNetwork, BusiestLinksTieOnWholeBytes) {
  Engine engine;
  FlowNetwork net(engine, {1e9, 1e9});
  const std::size_t a = net.register_link_loads({{0.3, 0, {0}}});
  const std::size_t b = net.register_link_loads({{0.2, 0, {1}}, {0.1, 0, {1}}});
  net.add_link_loads(a, 1.0);
  net.add_link_loads(b, 1.0);
  ASSERT_GT(net.link_bytes(1), net.link_bytes(0));  // 0.2 + 0.1 is a little over 0.3 in binary
  const auto top = net.busiest_links(2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].first, 0u);
  EXPECT_EQ(top[1].first, 1u);
}

// A registered set of link loads added by weight: each entry's bytes and seconds times the
// summed weight, folded in whenever the counters are read, however often that happens.
TEST(FlowNetwork, LinkLoadSetsAddByWeight) {
  Engine engine;
  FlowNetwork net(engine, {1e9, 1e9, 1e9});
  const std::size_t set = net.register_link_loads({{100.0, 1e-6, {0}}, {50.0, 2e-6, {2}}});
  net.add_link_loads(set, 1.0);
  net.add_link_loads(set, 0.5);
  EXPECT_DOUBLE_EQ(net.link_bytes(0), 150.0);
  EXPECT_NEAR(net.link_busy_s(2), 3e-6, 1e-15);
  net.add_link_loads(set, 2.0);  // after a read: only the new weight is added
  EXPECT_DOUBLE_EQ(net.link_bytes(0), 350.0);
  EXPECT_DOUBLE_EQ(net.link_bytes(2), 175.0);
  EXPECT_DOUBLE_EQ(net.link_bytes(1), 0.0);
  const auto top = net.busiest_links(5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].first, 0u);
  EXPECT_THROW(net.add_link_loads(set + 1, 1.0), std::invalid_argument);
  EXPECT_THROW(net.add_link_loads(set, -1.0), std::invalid_argument);
  EXPECT_THROW(net.register_link_loads({{1.0, 0, {0, 3}}}), std::invalid_argument);
  EXPECT_THROW(net.register_link_loads({{-1.0, 0, {0}}}), std::invalid_argument);
}

TEST(FlowNetwork, RandomFlowsConserveBytesAndAllComplete) {
  // Sum over links of carried bytes = sum over flows of bytes x path length x multiplicity,
  // and per link the bytes equal those of the flows that crossed it.
  Rng rng(2024);
  const std::size_t num_links = 40;
  std::vector<double> caps(num_links);
  for (double& c : caps) c = 1e9 * (1.0 + 9.0 * rng.uniform());
  Engine engine;
  FlowNetwork net(engine, caps);
  std::vector<double> expected(num_links, 0.0);
  double expected_total = 0.0;
  int completions = 0;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    FlowRequest req;
    const std::uint64_t len = rng.below(4);  // 0 = local copy
    for (std::uint64_t h = 0; h < len; ++h) req.path.push_back(static_cast<LinkId>(rng.below(num_links)));
    req.bytes = 1e3 + 1e7 * rng.uniform();
    req.latency_s = 1e-6 * rng.uniform();
    req.multiplicity = 1 + static_cast<int>(rng.below(3));
    if (rng.uniform() < 0.2) req.rate_cap_Bps = 1e8 + 1e9 * rng.uniform();
    req.on_complete = [&completions] { ++completions; };
    for (LinkId l : req.path) expected[l] += req.bytes * req.multiplicity;
    expected_total += req.bytes * static_cast<double>(req.path.size()) * req.multiplicity;
    const auto start = SimTime::from_seconds(1e-3 * rng.uniform());
    engine.schedule_at(start, [&net, r = std::move(req)]() mutable { net.start_flow(std::move(r)); });
  }
  engine.run();
  EXPECT_EQ(completions, n);
  EXPECT_EQ(net.flows_completed(), static_cast<std::uint64_t>(n));
  EXPECT_EQ(net.active_flows(), 0u);
  EXPECT_NO_THROW(engine.require_all_finished());
  double total = 0.0;
  for (LinkId l = 0; l < num_links; ++l) {
    EXPECT_NEAR(net.link_bytes(l), expected[l], 1e-9 * expected[l] + 1e-6) << "link " << l;
    total += net.link_bytes(l);
    EXPECT_EQ(net.solver().flows_on_link(l), 0u);
  }
  EXPECT_NEAR(total, expected_total, 1e-9 * expected_total);
}

}  // namespace
}  // namespace megasim
