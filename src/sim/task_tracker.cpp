#include "megasim/sim/task_tracker.hpp"

#include <algorithm>
#include <utility>

#include "megasim/core/slot_pool.hpp"

namespace megasim {

TaskId TaskTracker::begin(std::string name) {
  const std::uint32_t slot = acquire_slot(tasks_, free_);
  Task& task = tasks_[slot];
  task.name = std::move(name);
  task.seq = next_seq_++;
  task.open = true;
  ++open_;
  return (static_cast<TaskId>(task.gen) << 32) | slot;
}

const TaskTracker::Task* TaskTracker::find_open(TaskId id) const {
  const auto slot = static_cast<std::size_t>(id & 0xffffffffULL);
  if (slot >= tasks_.size()) return nullptr;
  const Task& task = tasks_[slot];
  return task.open && task.gen == static_cast<std::uint32_t>(id >> 32) ? &task : nullptr;
}

void TaskTracker::end(TaskId id) {
  if (find_open(id) == nullptr) {
    throw std::logic_error("TaskTracker::end: unknown or already finished task id " + std::to_string(id));
  }
  const auto slot = static_cast<std::uint32_t>(id & 0xffffffffULL);
  Task& task = tasks_[slot];
  task.open = false;
  task.name.clear();  // only open names are reported
  ++task.gen;
  free_.push_back(slot);
  --open_;
}

bool TaskTracker::is_open(TaskId id) const { return find_open(id) != nullptr; }

std::vector<std::string> TaskTracker::unfinished() const {
  std::vector<const Task*> open;
  open.reserve(open_);
  for (const Task& task : tasks_)
    if (task.open) open.push_back(&task);
  std::sort(open.begin(), open.end(), [](const Task* a, const Task* b) { return a->seq < b->seq; });
  std::vector<std::string> names;
  names.reserve(open.size());
  for (const Task* task : open) names.push_back(task->name);
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
