#include "megasim/sim/engine.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace megasim {
namespace {

SimTime ps(std::int64_t v) { return SimTime::from_ps(v); }

TEST(Engine, RunsEventsInTimeOrder) {
  Engine engine;
  std::vector<int> order;
  engine.schedule_at(ps(30), [&] { order.push_back(3); });
  engine.schedule_at(ps(10), [&] { order.push_back(1); });
  engine.schedule_at(ps(20), [&] { order.push_back(2); });
  engine.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(engine.now(), ps(30));
  EXPECT_EQ(engine.events_processed(), 3u);
  EXPECT_EQ(engine.pending_events(), 0u);
}

TEST(Engine, EqualTimesRunInInsertionOrder) {
  Engine engine;
  std::string order;
  for (char c : std::string("abcdefghij")) {
    engine.schedule_at(ps(5), [&order, c] { order.push_back(c); });
  }
  // An event scheduled at the current time from inside a callback runs after those already
  // queued for that time.
  engine.schedule_at(ps(1), [&] {
    engine.schedule_at(ps(5), [&] { order.push_back('z'); });
  });
  engine.run();
  EXPECT_EQ(order, "abcdefghijz");
}

TEST(Engine, ScheduleAfterIsRelativeToNow) {
  Engine engine;
  std::vector<std::int64_t> times;
  engine.schedule_at(ps(100), [&] {
    engine.schedule_after(ps(50), [&] { times.push_back(engine.now().ps()); });
  });
  engine.run();
  EXPECT_EQ(times, (std::vector<std::int64_t>{150}));
}

TEST(Engine, CancelSkipsTheEventAndReportsOnce) {
  Engine engine;
  int ran = 0;
  const EventId a = engine.schedule_at(ps(10), [&] { ran += 1; });
  const EventId b = engine.schedule_at(ps(20), [&] { ran += 10; });
  EXPECT_TRUE(engine.is_pending(a));
  EXPECT_TRUE(engine.cancel(a));
  EXPECT_FALSE(engine.cancel(a));  // already cancelled
  EXPECT_FALSE(engine.is_pending(a));
  EXPECT_FALSE(engine.cancel(kNoEvent));
  EXPECT_EQ(engine.pending_events(), 1u);
  engine.run();
  EXPECT_EQ(ran, 10);
  EXPECT_FALSE(engine.cancel(b));  // already ran
  EXPECT_EQ(engine.events_processed(), 1u);
}

// Mass cancellation (the flow network reschedules a completion on every rate change) drops
// dead heap entries in bulk; the survivors still run once each, in (time, insertion) order.
TEST(Engine, MassCancellationKeepsOrder) {
  Engine e;
  std::vector<EventId> ids;
  std::vector<int> ran;
  for (int i = 0; i < 20000; ++i) {
    ids.push_back(e.schedule_at(SimTime::from_ps((i * 7919) % 1000), [&ran, i] { ran.push_back(i); }));
  }
  for (int i = 0; i < 20000; ++i) {
    if (i % 10 != 0) {
      EXPECT_TRUE(e.cancel(ids[static_cast<std::size_t>(i)]));
    }
  }
  e.run();
  ASSERT_EQ(ran.size(), 2000u);
  for (std::size_t k = 1; k < ran.size(); ++k) {
    const int a = ran[k - 1], b = ran[k];
    const int ta = (a * 7919) % 1000, tb = (b * 7919) % 1000;
    EXPECT_TRUE(ta < tb || (ta == tb && a < b)) << a << " before " << b;
    EXPECT_EQ(b % 10, 0);
  }
}

// Events scheduled from inside callbacks, at random times, some cancelled: they run exactly in
// (time, scheduling order), checked against a sorted reference (the heap's order is total).
TEST(Engine, RandomInterleavingRunsInTimeThenSchedulingOrder) {
  Engine e;
  std::uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  struct Ev {
    std::int64_t t;
    int seq;
  };
  std::vector<Ev> scheduled;  // by seq
  std::vector<bool> cancelled;
  std::vector<EventId> ids;
  std::vector<int> ran;
  std::function<void(int)> fire = [&](int seq) {
    ran.push_back(seq);
    for (int k = 0; k < 3 && scheduled.size() < 30000; ++k) {
      const std::int64_t t = e.now().ps() + static_cast<std::int64_t>(next() % 50);
      const int s = static_cast<int>(scheduled.size());
      scheduled.push_back({t, s});
      cancelled.push_back(false);
      ids.push_back(e.schedule_at(ps(t), [&fire, s] { fire(s); }));
    }
    if (next() % 3 == 0 && !ids.empty()) {  // cancel a random earlier event, if still pending
      const std::size_t victim = next() % ids.size();
      if (e.cancel(ids[victim])) cancelled[victim] = true;
    }
  };
  for (int i = 0; i < 8; ++i) {
    scheduled.push_back({static_cast<std::int64_t>(next() % 50), i});
    cancelled.push_back(false);
    ids.push_back(e.schedule_at(ps(scheduled.back().t), [&fire, i] { fire(i); }));
  }
  // Far-future events, most cancelled from a callback while the run goes on: the dead entries
  // outgrow the live ones and the heap is rebuilt without them mid-run.
  const std::size_t far_first = scheduled.size();
  for (int i = 0; i < 12000; ++i) {
    const int s = static_cast<int>(scheduled.size());
    scheduled.push_back({1'000'000 + static_cast<std::int64_t>(next() % 1000), s});
    cancelled.push_back(false);
    ids.push_back(e.schedule_at(ps(scheduled.back().t), [&fire, s] { fire(s); }));
  }
  e.schedule_at(ps(25), [&] {
    for (std::size_t i = far_first; i < far_first + 12000; ++i)
      if (i % 8 != 0 && e.cancel(ids[i])) cancelled[i] = true;
  });
  scheduled.push_back({25, static_cast<int>(scheduled.size())});  // the canceller's own slot
  cancelled.push_back(true);                                       // (not in `ran`)
  ids.push_back(kNoEvent);
  e.run();
  ASSERT_GT(ran.size(), 10000u);
  for (std::size_t k = 1; k < ran.size(); ++k) {
    const Ev& a = scheduled[static_cast<std::size_t>(ran[k - 1])];
    const Ev& b = scheduled[static_cast<std::size_t>(ran[k])];
    ASSERT_TRUE(a.t < b.t || (a.t == b.t && a.seq < b.seq)) << a.seq << " before " << b.seq;
  }
  std::size_t expected = 0;
  for (std::size_t i = 0; i < scheduled.size(); ++i) expected += cancelled[i] ? 0 : 1;
  EXPECT_EQ(ran.size(), expected);
}

TEST(Engine, CancelledSlotReuseDoesNotResurrectOldId) {
  Engine engine;
  int ran = 0;
  const EventId a = engine.schedule_at(ps(10), [&] { ran += 1; });
  ASSERT_TRUE(engine.cancel(a));
  const EventId b = engine.schedule_at(ps(10), [&] { ran += 2; });
  EXPECT_NE(a, b);
  EXPECT_FALSE(engine.cancel(a));  // the stale id must not cancel the new event
  engine.run();
  EXPECT_EQ(ran, 2);
}

TEST(Engine, CancelFromInsideACallback) {
  Engine engine;
  int ran = 0;
  EventId later = kNoEvent;
  engine.schedule_at(ps(1), [&] { EXPECT_TRUE(engine.cancel(later)); });
  later = engine.schedule_at(ps(2), [&] { ++ran; });
  engine.run();
  EXPECT_EQ(ran, 0);
}

TEST(Engine, RunUntilStopsAtTheBoundaryInclusive) {
  Engine engine;
  std::vector<int> order;
  engine.schedule_at(ps(10), [&] { order.push_back(10); });
  engine.schedule_at(ps(20), [&] { order.push_back(20); });
  engine.schedule_at(ps(30), [&] { order.push_back(30); });
  EXPECT_TRUE(engine.run_until(ps(20)));
  EXPECT_EQ(order, (std::vector<int>{10, 20}));
  EXPECT_EQ(engine.now(), ps(20));
  EXPECT_TRUE(engine.run_until(ps(25)));
  EXPECT_EQ(engine.now(), ps(25));  // clock advances to the boundary
  EXPECT_FALSE(engine.run_until(ps(100)));
  EXPECT_EQ(order, (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(engine.now(), ps(100));
}

TEST(Engine, RunUntilIgnoresCancelledEventsWhenReportingRemaining) {
  Engine engine;
  const EventId a = engine.schedule_at(ps(50), [] {});
  engine.cancel(a);
  EXPECT_FALSE(engine.run_until(ps(10)));
}

TEST(Engine, SchedulingInThePastIsRejected) {
  Engine engine;
  engine.schedule_at(ps(100), [] {});
  engine.run();
  EXPECT_THROW(engine.schedule_at(ps(99), [] {}), std::logic_error);
  EXPECT_THROW(engine.schedule_after(ps(-1), [] {}), std::logic_error);
  EXPECT_NO_THROW(engine.schedule_at(ps(100), [] {}));
}

TEST(Engine, ManyInterleavedEventsStayOrdered) {
  // Events scheduled with pseudo-random times must come out sorted by (time, sequence).
  Engine engine;
  std::vector<std::pair<std::int64_t, int>> seen;
  std::uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto t = static_cast<std::int64_t>((x >> 33) % 1000);
    engine.schedule_at(ps(t), [&seen, t, i] { seen.emplace_back(t, i); });
  }
  engine.run();
  ASSERT_EQ(seen.size(), 5000u);
  for (std::size_t i = 1; i < seen.size(); ++i) {
    ASSERT_LE(seen[i - 1], seen[i]) << "at " << i;
  }
}

TEST(Engine, TwoEnginesAreIndependent) {
  Engine a;
  Engine b;
  a.schedule_at(ps(5), [] {});
  b.schedule_at(ps(7), [] {});
  a.run();
  EXPECT_EQ(a.now(), ps(5));
  EXPECT_EQ(b.now(), ps(0));
  EXPECT_EQ(b.pending_events(), 1u);
}

TEST(Engine, DeadlockReportNamesUnfinishedTasks) {
  Engine engine;
  const TaskId send = engine.begin_task("send rank0->rank1");
  const TaskId recv = engine.begin_task("recv rank1<-rank0");
  engine.schedule_at(ps(10), [&] { engine.end_task(send); });
  engine.run();
  (void)recv;
  EXPECT_EQ(engine.unfinished_tasks(), (std::vector<std::string>{"recv rank1<-rank0"}));
  try {
    engine.require_all_finished();
    FAIL() << "expected DeadlockError";
  } catch (const DeadlockError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("1 task(s)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("recv rank1<-rank0"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("send rank0"), std::string::npos) << msg;
  }
  engine.end_task(recv);
  EXPECT_NO_THROW(engine.require_all_finished());
}

}  // namespace
}  // namespace megasim
