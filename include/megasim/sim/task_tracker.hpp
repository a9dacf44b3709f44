#pragma once
// Bookkeeping of named tasks for the deadlock report (DESIGN.md B2 rule 7, after SimGrid):
// a run that ends with tasks still open names them instead of silently returning a result.
//
// A finished task's slot is reused (its id carries a generation, so a stale id is caught), so
// memory follows the tasks open at once, not the run's length: a step opens every task instance
// at its start and then half a million short network flows, which a begin-ordered list kept
// alive behind the first long task (10% of a 5,120-GPU run, most of it page faults).
#include <cstddef>
#include <cstdint>
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
    std::uint64_t seq = 0;  // begin order, for unfinished()
    std::uint32_t gen = 0;
    bool open = false;
  };
  const Task* find_open(TaskId id) const;  // null when unknown or ended

  std::vector<Task> tasks_;  // id = gen << 32 | slot
  std::vector<std::uint32_t> free_;
  std::uint64_t next_seq_ = 0;
  std::size_t open_ = 0;
};

}  // namespace megasim
