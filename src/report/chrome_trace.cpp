#include "megasim/report/chrome_trace.hpp"

#include <nlohmann/json.hpp>

namespace megasim {

TraceEvent trace_metadata(const char* what, int pid, int tid, std::string label) {
  TraceEvent e;
  e.phase = TraceEvent::Phase::Metadata;
  e.name = what;
  e.pid = pid;
  e.tid = tid;
  e.label = std::move(label);
  return e;
}

namespace {

nlohmann::json event_json(const TraceEvent& e) {
  switch (e.phase) {
    case TraceEvent::Phase::Metadata:
      return {{"ph", "M"}, {"name", e.name}, {"pid", e.pid}, {"tid", e.tid}, {"args", {{"name", e.label}}}};
    case TraceEvent::Phase::Complete: {
      nlohmann::json j = {{"ph", "X"}, {"name", e.name}, {"cat", e.category}, {"pid", e.pid},
                          {"tid", e.tid}, {"ts", e.ts_us}, {"dur", e.dur_us}};
      if (e.bytes > 0) j["args"] = {{"bytes", e.bytes}};
      return j;
    }
    case TraceEvent::Phase::Counter:
      return {{"ph", "C"}, {"name", e.name}, {"pid", e.pid}, {"ts", e.ts_us}, {"args", {{e.counter_key, e.value}}}};
  }
  return {};
}

}  // namespace

std::string chrome_trace_json(const ChromeTrace& trace) {
  nlohmann::json events = nlohmann::json::array();
  for (const TraceEvent& e : trace.events) events.push_back(event_json(e));
  const nlohmann::json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return doc.dump();
}

}  // namespace megasim
