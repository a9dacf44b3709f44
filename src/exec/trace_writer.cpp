// The event engine's run as a Chrome trace: one track per stage and stream (replica 0) in
// microseconds, counters for the hottest links' utilisation. The JSON is report/chrome_trace.
#include <algorithm>
#include <fstream>

#include "des_report.hpp"
#include "megasim/core/error.hpp"
#include "megasim/report/chrome_trace.hpp"

namespace megasim {

namespace {

constexpr int kComputeTid = 0;
constexpr int kDpTid = 1;
constexpr int kPpTid = 2;
constexpr int kLinkPid = 1000000;

void add_task_events(const DesExecutor& ex, ChromeTrace& trace) {
  const StepGraph& g = ex.graph();
  for (TaskIndex t = 0; t < g.tasks.size(); ++t) {
    const StepTask& task = g.tasks[t];
    const TaskTiming& tm = ex.timing(0, t);
    if (task.kind == TaskKind::StepEnd) continue;
    TraceEvent e;
    e.name = g.describe(t);
    e.category = to_string(task.kind);
    e.pid = task.stage;
    e.tid = task.stream == TaskStream::Compute ? kComputeTid : task.stream == TaskStream::DpComm ? kDpTid : kPpTid;
    e.ts_us = tm.start_s * 1e6;
    e.dur_us = std::max(0.0, tm.end_s - tm.start_s) * 1e6;
    e.bytes = task.bytes;
    trace.events.push_back(std::move(e));
  }
}

// Hottest links by bytes carried; their sampled load as a utilisation counter.
void add_link_counters(const DesExecutor& ex, std::size_t counter_links, ChromeTrace& trace) {
  const auto hot = ex.network().busiest_links(counter_links);
  const auto& caps = ex.fabric().link_capacity_Bps();
  if (!hot.empty()) trace.events.push_back(trace_metadata("process_name", kLinkPid, 0, "hottest links"));
  for (const auto& [link, bytes] : hot) {
    const std::string name = ex.fabric().link_name(link) + " utilization";
    for (const LinkSample& sample : ex.link_samples()) {
      double load = 0;
      const auto it = std::lower_bound(sample.load_Bps.begin(), sample.load_Bps.end(),
                                       std::make_pair(link, 0.0),
                                       [](const auto& a, const auto& b) { return a.first < b.first; });
      if (it != sample.load_Bps.end() && it->first == link) load = it->second;
      TraceEvent e;
      e.phase = TraceEvent::Phase::Counter;
      e.name = name;
      e.pid = kLinkPid;
      e.ts_us = sample.time_s * 1e6;
      e.counter_key = "utilization";
      e.value = load / caps[link];
      trace.events.push_back(std::move(e));
    }
  }
}

}  // namespace

std::string des_trace_json(const DesExecutor& ex, std::size_t counter_links) {
  ChromeTrace trace;
  for (int s = 0; s < ex.graph().stages; ++s) {
    trace.events.push_back(trace_metadata("process_name", s, 0, "stage " + std::to_string(s) + " (replica 0)"));
    trace.events.push_back(trace_metadata("thread_name", s, kComputeTid, "compute"));
    trace.events.push_back(trace_metadata("thread_name", s, kDpTid, "dp comm"));
    trace.events.push_back(trace_metadata("thread_name", s, kPpTid, "pp send"));
  }
  add_task_events(ex, trace);
  add_link_counters(ex, counter_links, trace);
  return chrome_trace_json(trace);
}

void write_des_trace(const DesExecutor& ex, std::size_t counter_links, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError("--trace", "cannot open \"" + path + "\" for writing");
  out << des_trace_json(ex, counter_links) << "\n";
  if (!out) throw InputError("--trace", "failed writing \"" + path + "\"");
}

}  // namespace megasim
