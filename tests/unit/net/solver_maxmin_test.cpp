// Textbook max-min cases: every expected rate is derived by hand in the comment above it.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "megasim/net/maxmin_solver.hpp"

namespace megasim {
namespace {

constexpr double kInf = MaxMinSolver::kUnlimited;

TEST(MaxMinSolver, TwoFlowsOnOneLinkShareEquallyTextbook) {
  // One link of C = 10: two unlimited flows each get C/2 = 5.
  MaxMinSolver s({10.0});
  const FlowHandle a = s.add_flow({0});
  const FlowHandle b = s.add_flow({0});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 5.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 5.0);
  EXPECT_DOUBLE_EQ(s.link_load_Bps(0), 10.0);
}

TEST(MaxMinSolver, PathsLongerThanTheInlineHopsTextbook) {
  // A 12-link flow (longer than the hops a flow holds inline) over links 0..11 of C = 12, and
  // f2, f3 on link 5 and link 11 alone: each shared link gives 6, so all three run at 6. When
  // the long flow leaves, f2 and f3 get their links' 12; a fresh long flow after a short one
  // reuses the slot (heap hops, then inline, then heap again).
  MaxMinSolver s(std::vector<double>(12, 12.0));
  const LinkPath long_path{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const FlowHandle f1 = s.add_flow(long_path);
  const FlowHandle f2 = s.add_flow({5});
  const FlowHandle f3 = s.add_flow({11});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f1), 6.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 6.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f3), 6.0);
  EXPECT_EQ(s.path(f1), long_path);
  s.remove_flow(f1);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 12.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f3), 12.0);
  const FlowHandle f4 = s.add_flow({0, 11});  // the freed slot, inline again
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f3), 6.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f4), 6.0);
  s.remove_flow(f2);  // moves f4's or f3's entries: their positions must follow
  s.remove_flow(f3);
  const FlowHandle f5 = s.add_flow(long_path);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f4), 6.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f5), 6.0);
  s.remove_flow(f4);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f5), 12.0);
  EXPECT_EQ(s.num_flows(), 1u);
}

TEST(MaxMinSolver, LinksOfOneFlowBoundThatFlowTextbook) {
  // A link carrying one flow is that flow's bound. f1 alone on an infinite link: +inf.
  // f2 (multiplicity 2) alone on link 1 (C = 10): 10 / 2 = 5 per copy. f3 crosses link 2
  // (C = 6, its own) and link 3 (C = 4, shared with f4): link 3's share 2 < link 2's 6, so
  // f3 = f4 = 2. f5 repeats its own link 4 (C = 8): two entries, 8 / 2 = 4.
  MaxMinSolver s({kInf, 10.0, 6.0, 4.0, 8.0});
  const FlowHandle f1 = s.add_flow({0});
  const FlowHandle f2 = s.add_flow({1}, kInf, 2);
  const FlowHandle f3 = s.add_flow({2, 3});
  const FlowHandle f4 = s.add_flow({3});
  const FlowHandle f5 = s.add_flow({4, 4});
  s.solve();
  EXPECT_EQ(s.rate_Bps(f1), kInf);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 5.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f3), 2.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f4), 2.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f5), 4.0);
  EXPECT_EQ(s.changed_flows().size(), 5u);  // every new flow is reported, f1 included
}

TEST(MaxMinSolver, ClassicTwoLinkBottleneckTextbook) {
  // Links A = 10, B = 4. f1 crosses A, f2 crosses A and B, f3 crosses B.
  // Fair shares: A 10/2 = 5, B 4/2 = 2 -> B saturates first: f2 = f3 = 2.
  // A has 10 - 2 = 8 left for f1 alone: f1 = 8. Both links end saturated.
  MaxMinSolver s({10.0, 4.0});
  const FlowHandle f1 = s.add_flow({0});
  const FlowHandle f2 = s.add_flow({0, 1});
  const FlowHandle f3 = s.add_flow({1});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f1), 8.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 2.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f3), 2.0);
}

TEST(MaxMinSolver, CappedFlowLeavesTheRestToOthersTextbook) {
  // Link C = 10; f1 capped at 2, f2 unlimited. Water level reaches 2 first (cap < 10/2):
  // f1 = 2, then f2 takes the remaining 8.
  MaxMinSolver s({10.0});
  const FlowHandle f1 = s.add_flow({0}, 2.0);
  const FlowHandle f2 = s.add_flow({0}, kInf);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f1), 2.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 8.0);
}

TEST(MaxMinSolver, CapAboveFairShareDoesNotBindTextbook) {
  // Link C = 10; f1 capped at 7 > 10/2: both get 5.
  MaxMinSolver s({10.0});
  const FlowHandle f1 = s.add_flow({0}, 7.0);
  const FlowHandle f2 = s.add_flow({0});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f1), 5.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 5.0);
}

TEST(MaxMinSolver, ParkingLotTextbook) {
  // Three links of C = 1 in a row; one long flow crosses all three, one short flow on each.
  // Every link has 2 flows: share 1/2, all links saturate together: everyone gets 0.5.
  MaxMinSolver s({1.0, 1.0, 1.0});
  const FlowHandle lng = s.add_flow({0, 1, 2});
  FlowHandle shorts[3] = {s.add_flow({0}), s.add_flow({1}), s.add_flow({2})};
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(lng), 0.5);
  for (const FlowHandle& h : shorts) EXPECT_DOUBLE_EQ(s.rate_Bps(h), 0.5);
}

TEST(MaxMinSolver, MultiplicityCountsEveryCopyTextbook) {
  // Link C = 12; flow a stands for 3 identical flows, b for 1: 4 flows in all, 3 each.
  // Load = 3 x 3 + 1 x 3 = 12.
  MaxMinSolver s({12.0});
  const FlowHandle a = s.add_flow({0}, kInf, 3);
  const FlowHandle b = s.add_flow({0}, kInf, 1);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 3.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 3.0);
  EXPECT_DOUBLE_EQ(s.link_load_Bps(0), 12.0);
}

TEST(MaxMinSolver, RemovingAFlowGivesItsShareBackTextbook) {
  MaxMinSolver s({10.0});
  const FlowHandle a = s.add_flow({0});
  const FlowHandle b = s.add_flow({0});
  s.solve();
  s.remove_flow(a);
  EXPECT_FALSE(s.valid(a));
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 10.0);
  ASSERT_EQ(s.changed_flows().size(), 1u);
  EXPECT_EQ(s.changed_flows()[0], b);
  EXPECT_THROW(s.remove_flow(a), std::invalid_argument);
  EXPECT_THROW((void)s.rate_Bps(a), std::invalid_argument);
}

TEST(MaxMinSolver, OnlyTheTouchedComponentIsResolvedTextbook) {
  // Links 0 and 1 are independent components. Adding a flow on link 1 must not report the
  // flow on link 0 as changed and must visit only link 1's flows.
  MaxMinSolver s({10.0, 10.0});
  const FlowHandle a = s.add_flow({0});
  const FlowHandle b = s.add_flow({1});
  s.solve();
  EXPECT_EQ(s.changed_flows().size(), 2u);  // both new
  const FlowHandle c = s.add_flow({1});
  s.solve();
  EXPECT_EQ(s.last_component_flows(), 2u);
  ASSERT_EQ(s.changed_flows().size(), 2u);
  EXPECT_EQ(s.changed_flows()[0], b);
  EXPECT_EQ(s.changed_flows()[1], c);
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 10.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 5.0);
  s.solve();  // nothing dirty: nothing changes
  EXPECT_TRUE(s.changed_flows().empty());
}

TEST(MaxMinSolver, ComponentsJoinThroughASharedLinkTextbook) {
  // f1 on link 0, f2 on link 1; then f3 on links 0+1 joins both into one component.
  // Shares: link0 (C=6) has f1,f3 -> 3; link1 (C=10) has f2,f3 -> 5. Link0 saturates:
  // f1 = f3 = 3; f2 = 10 - 3 = 7.
  MaxMinSolver s({6.0, 10.0});
  const FlowHandle f1 = s.add_flow({0});
  const FlowHandle f2 = s.add_flow({1});
  s.solve();
  const FlowHandle f3 = s.add_flow({0, 1});
  s.solve();
  EXPECT_EQ(s.last_component_flows(), 3u);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f1), 3.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 7.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f3), 3.0);
}

TEST(MaxMinSolver, EmptyPathRunsAtItsCapTextbook) {
  MaxMinSolver s({1.0});
  const FlowHandle a = s.add_flow({}, 4.0);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 4.0);
}

TEST(MaxMinSolver, ZeroCapacityLinkStallsItsFlowsTextbook) {
  MaxMinSolver s({0.0, 5.0});
  const FlowHandle a = s.add_flow({0, 1});
  const FlowHandle b = s.add_flow({1});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 0.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 5.0);
}

TEST(MaxMinSolver, RejectsBadArguments) {
  EXPECT_THROW(MaxMinSolver({-1.0}), std::invalid_argument);
  MaxMinSolver s({1.0});
  EXPECT_THROW(s.add_flow({1}), std::invalid_argument);
  EXPECT_THROW(s.add_flow({0}, 0.0), std::invalid_argument);
  EXPECT_THROW(s.add_flow({0}, kInf, 0), std::invalid_argument);
}

TEST(MaxMinSolver, SlotReuseKeepsLinkListsConsistent) {
  // Remove from the middle of a link's list (swap-pop), reuse the slot, and check loads.
  MaxMinSolver s({9.0, 9.0});
  const FlowHandle a = s.add_flow({0, 1});
  const FlowHandle b = s.add_flow({1, 0});
  const FlowHandle c = s.add_flow({0});
  s.remove_flow(a);
  const FlowHandle d = s.add_flow({1});
  EXPECT_EQ(d.slot, a.slot);
  EXPECT_NE(d.gen, a.gen);
  s.solve();
  // link0: b, c -> 4.5 each; link1: b, d -> 4.5 each.
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 4.5);
  EXPECT_DOUBLE_EQ(s.rate_Bps(c), 4.5);
  EXPECT_DOUBLE_EQ(s.rate_Bps(d), 4.5);
  EXPECT_EQ(s.flows_on_link(0), 2u);
  EXPECT_EQ(s.flows_on_link(1), 2u);
}

}  // namespace
}  // namespace megasim
