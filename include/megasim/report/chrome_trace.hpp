#pragma once
// Chrome Trace Event Format (the JSON Perfetto and chrome://tracing open) from plain events:
// "M" metadata naming processes and threads, "X" complete events, "C" counters. The event
// engine fills a ChromeTrace (exec/trace_writer.cpp); this module owns the JSON.
#include <string>
#include <vector>

namespace megasim {

struct TraceEvent {
  enum class Phase { Metadata, Complete, Counter };
  Phase phase = Phase::Complete;
  std::string name;      // Metadata: "process_name" / "thread_name"; else the event's name
  std::string category;  // Complete only ("cat")
  int pid = 0;
  int tid = 0;           // Metadata and Complete
  double ts_us = 0;      // Complete and Counter
  double dur_us = 0;     // Complete
  double bytes = 0;      // Complete: written as args.bytes when > 0
  std::string label;     // Metadata: the process or thread name (args.name)
  double value = 0;      // Counter: args.<counter_key>
  std::string counter_key;
};

struct ChromeTrace {
  std::vector<TraceEvent> events;  // written in this order
};

TraceEvent trace_metadata(const char* what, int pid, int tid, std::string label);

// {"displayTimeUnit": "ms", "traceEvents": [...]}, on one line.
std::string chrome_trace_json(const ChromeTrace& trace);

}  // namespace megasim
