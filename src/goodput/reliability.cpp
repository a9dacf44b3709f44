// Names of the reliability enums (the catalog reader is megasim/catalogs/reliability_reader.hpp).
#include "megasim/goodput/reliability.hpp"

namespace megasim {

const char* to_string(FailureScope s) {
  switch (s) {
    case FailureScope::Gpu: return "gpu";
    case FailureScope::Node: return "node";
    case FailureScope::Link: return "link";
    case FailureScope::Job: return "job";
  }
  return "?";
}

const char* to_string(DetectionKind d) {
  switch (d) {
    case DetectionKind::Crash: return "crash";
    case DetectionKind::Hang: return "hang";
    case DetectionKind::Planned: return "planned";
  }
  return "?";
}

}  // namespace megasim
