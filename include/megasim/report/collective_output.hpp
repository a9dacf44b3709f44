#pragma once
// `megasim collective`: the nccl-tests-style table of one collective over a size sweep, and
// the optional ECMP collision report, as text or as one versioned JSON object.
#include <ostream>
#include <string>
#include <vector>

#include "megasim/coll/sweep.hpp"

namespace megasim {

struct CollectiveOutput {
  CollectiveSweepOptions options;
  std::string cluster_name;
  std::string nccl_model_name;
  std::vector<CollectiveRow> rows;
  const EcmpReport* ecmp = nullptr;  // absent unless --ecmp-report
};

// {"schema_version", "op", "gpus", "algo", "engine", "rows": [...], "ecmp_report"?}, indented.
std::string collective_output_json(const CollectiveOutput& c);
// A commented header, one line per size, then the ECMP report as comment lines.
void write_collective_table(const CollectiveOutput& c, std::ostream& out);

}  // namespace megasim
