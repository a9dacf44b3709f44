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
  tracker.end(a);  // front compaction must keep c addressable by its id
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
  EXPECT_THROW(tracker.end(b), std::logic_error);  // still stored behind open a
  tracker.end(a);
  EXPECT_THROW(tracker.end(a), std::logic_error);  // compacted away
  EXPECT_THROW(tracker.end(999), std::logic_error);
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
