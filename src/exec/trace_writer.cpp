// Chrome Trace Event Format (the JSON Perfetto and chrome://tracing open): "X" complete
// events in microseconds on one track per stage and stream, "C" counters for the hottest
// links' utilisation, "M" metadata naming processes and threads.
#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "des_report.hpp"
#include "megasim/core/error.hpp"

namespace megasim {

namespace {

constexpr int kComputeTid = 0;
constexpr int kDpTid = 1;
constexpr int kPpTid = 2;
constexpr int kLinkPid = 1000000;

nlohmann::json meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

std::string des_trace_json(const DesExecutor& ex, std::size_t counter_links) {
  const StepGraph& g = ex.graph();
  nlohmann::json events = nlohmann::json::array();
  for (int s = 0; s < g.stages; ++s) {
    events.push_back(meta("process_name", s, 0, "stage " + std::to_string(s) + " (replica 0)"));
    events.push_back(meta("thread_name", s, kComputeTid, "compute"));
    events.push_back(meta("thread_name", s, kDpTid, "dp comm"));
    events.push_back(meta("thread_name", s, kPpTid, "pp send"));
  }
  for (TaskIndex t = 0; t < g.tasks.size(); ++t) {
    const StepTask& task = g.tasks[t];
    const TaskTiming& tm = ex.timing(0, t);
    if (task.kind == TaskKind::StepEnd) continue;
    const int tid = task.stream == TaskStream::Compute ? kComputeTid
                    : task.stream == TaskStream::DpComm ? kDpTid
                                                        : kPpTid;
    nlohmann::json e = {{"ph", "X"},
                        {"name", g.describe(t)},
                        {"cat", to_string(task.kind)},
                        {"pid", task.stage},
                        {"tid", tid},
                        {"ts", tm.start_s * 1e6},
                        {"dur", std::max(0.0, tm.end_s - tm.start_s) * 1e6}};
    if (task.bytes > 0) e["args"] = {{"bytes", task.bytes}};
    events.push_back(std::move(e));
  }
  // Hottest links by bytes carried; their sampled load as a utilisation counter.
  const auto hot = ex.network().busiest_links(counter_links);
  const auto& caps = ex.fabric().link_capacity_Bps();
  if (!hot.empty()) events.push_back(meta("process_name", kLinkPid, 0, "hottest links"));
  for (const auto& [link, bytes] : hot) {
    const std::string name = ex.fabric().link_name(link) + " utilization";
    for (const LinkSample& sample : ex.link_samples()) {
      double load = 0;
      const auto it = std::lower_bound(sample.load_Bps.begin(), sample.load_Bps.end(),
                                       std::make_pair(link, 0.0),
                                       [](const auto& a, const auto& b) { return a.first < b.first; });
      if (it != sample.load_Bps.end() && it->first == link) load = it->second;
      events.push_back({{"ph", "C"},
                        {"name", name},
                        {"pid", kLinkPid},
                        {"ts", sample.time_s * 1e6},
                        {"args", {{"utilization", load / caps[link]}}}});
    }
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return doc.dump();
}

void write_des_trace(const DesExecutor& ex, std::size_t counter_links, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError("--trace", "cannot open \"" + path + "\" for writing");
  out << des_trace_json(ex, counter_links) << "\n";
  if (!out) throw InputError("--trace", "failed writing \"" + path + "\"");
}

}  // namespace megasim
