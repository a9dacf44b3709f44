#include "megasim/sim/task_tracker.hpp"

#include <utility>

namespace megasim {

TaskId TaskTracker::begin(std::string name) {
  tasks_.push_back(Task{std::move(name), true});
  ++open_;
  return base_ + (tasks_.size() - 1);
}

void TaskTracker::end(TaskId id) {
  if (id < base_ || id - base_ >= tasks_.size()) {
    throw std::logic_error("TaskTracker::end: unknown or already finished task id " +
                           std::to_string(id));
  }
  Task& task = tasks_[static_cast<std::size_t>(id - base_)];
  if (!task.open) {
    throw std::logic_error("TaskTracker::end: task '" + task.name + "' ended twice");
  }
  task.open = false;
  task.name = std::string();  // release the name now; only open names are reported
  --open_;
  while (!tasks_.empty() && !tasks_.front().open) {
    tasks_.pop_front();
    ++base_;
  }
}

bool TaskTracker::is_open(TaskId id) const {
  if (id < base_ || id - base_ >= tasks_.size()) return false;
  return tasks_[static_cast<std::size_t>(id - base_)].open;
}

std::vector<std::string> TaskTracker::unfinished() const {
  std::vector<std::string> names;
  names.reserve(open_);
  for (const Task& task : tasks_) {
    if (task.open) names.push_back(task.name);
  }
  return names;
}

void TaskTracker::require_all_finished(std::size_t max_named) const {
  if (open_ == 0) return;
  std::vector<std::string> names = unfinished();
  std::string message = "deadlock: " + std::to_string(names.size()) +
                        " task(s) unfinished when the event queue drained:";
  const std::size_t shown = names.size() < max_named ? names.size() : max_named;
  for (std::size_t i = 0; i < shown; ++i) message += (i == 0 ? " " : ", ") + names[i];
  if (shown < names.size()) {
    message += ", ... and " + std::to_string(names.size() - shown) + " more";
  }
  throw DeadlockError(std::move(message), std::move(names));
}

}  // namespace megasim
