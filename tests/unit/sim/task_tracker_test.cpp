#include "megasim/sim/task_tracker.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace megasim {
namespace {

TEST(TaskTracker, UnfinishedInBeginOrder) {
  TaskTracker tracker;
  const TaskId a = tracker.begin("a");
  const TaskId b = tracker.begin("b");
  const TaskId c = tracker.begin("c");
  tracker.end(b);
  EXPECT_EQ(tracker.unfinished(), (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(tracker.is_open(a));
  EXPECT_FALSE(tracker.is_open(b));
  tracker.end(a);  // ending a must keep c addressable by its id
  EXPECT_TRUE(tracker.is_open(c));
  tracker.end(c);
  EXPECT_EQ(tracker.open_count(), 0u);
  EXPECT_NO_THROW(tracker.require_all_finished());
}

TEST(TaskTracker, EndingTwiceIsAnError) {
  TaskTracker tracker;
  const TaskId a = tracker.begin("a");
  const TaskId b = tracker.begin("b");
  tracker.end(b);
  EXPECT_THROW(tracker.end(b), std::logic_error);  // b's slot is free, a still open
  tracker.end(a);
  EXPECT_THROW(tracker.end(a), std::logic_error);  // every slot free
  EXPECT_THROW(tracker.end(999), std::logic_error);
}

// A finished task's slot is reused: a long task open from the start does not keep the short
// ones after it, an old id of a reused slot is not mistaken for its new task, and the report
// keeps begin order whatever slots the tasks landed in.
TEST(TaskTracker, ReusedSlotsKeepIdsDistinctAndBeginOrder) {
  TaskTracker tracker;
  const TaskId first = tracker.begin("first");
  TaskId old = 0;
  for (int i = 0; i < 1000; ++i) {
    const TaskId t = tracker.begin("short" + std::to_string(i));
    if (i == 0) old = t;
    tracker.end(t);
  }
  const TaskId late = tracker.begin("late");  // lands in a freed slot
  const TaskId later = tracker.begin("later");
  EXPECT_FALSE(tracker.is_open(old));
  EXPECT_THROW(tracker.end(old), std::logic_error);
  tracker.end(later);
  const TaskId last = tracker.begin("last");  // reuses later's slot, begun after late
  EXPECT_EQ(tracker.unfinished(), (std::vector<std::string>{"first", "late", "last"}));
  tracker.end(first);
  tracker.end(late);
  tracker.end(last);
  EXPECT_EQ(tracker.open_count(), 0u);
}

TEST(TaskTracker, ReportListsTwentyAndCountsTheRest) {
  TaskTracker tracker;
  for (int i = 0; i < 25; ++i) tracker.begin("task" + std::to_string(i));
  try {
    tracker.require_all_finished();
    FAIL() << "expected DeadlockError";
  } catch (const DeadlockError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("25 task(s)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("task0,"), std::string::npos) << msg;
    EXPECT_NE(msg.find("task19"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("task20"), std::string::npos) << msg;
    EXPECT_NE(msg.find("and 5 more"), std::string::npos) << msg;
    EXPECT_EQ(e.unfinished().size(), 25u);
  }
}

}  // namespace
}  // namespace megasim
