#pragma once
// Bookkeeping of named tasks for the deadlock report (DESIGN.md B2 rule 7, after SimGrid):
// a run that ends with tasks still open names them instead of silently returning a result.
//
// Tasks are kept in begin order in a deque; finished tasks at the front are dropped, so a
// long run of short tasks (one per network flow) keeps memory bounded.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace megasim {

using TaskId = std::uint64_t;

// Thrown by require_all_finished() when tasks are still open after the event queue drained.
class DeadlockError : public std::runtime_error {
 public:
  DeadlockError(std::string message, std::vector<std::string> unfinished)
      : std::runtime_error(std::move(message)), unfinished_(std::move(unfinished)) {}
  const std::vector<std::string>& unfinished() const noexcept { return unfinished_; }

 private:
  std::vector<std::string> unfinished_;
};

class TaskTracker {
 public:
  TaskId begin(std::string name);
  // Ending an unknown or already ended task is a programming error (std::logic_error).
  void end(TaskId id);
  bool is_open(TaskId id) const;
  std::size_t open_count() const { return open_; }
  std::vector<std::string> unfinished() const;  // in begin order
  // Throws DeadlockError naming the first `max_named` open tasks and the total count.
  void require_all_finished(std::size_t max_named = 20) const;

 private:
  struct Task {
    std::string name;
    bool open = true;
  };
  std::deque<Task> tasks_;  // tasks_[i] has id base_ + i
  TaskId base_ = 0;
  std::size_t open_ = 0;
};

}  // namespace megasim
