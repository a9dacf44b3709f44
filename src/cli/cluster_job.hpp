#pragma once
// CONFIG of the commands that only look at the cluster (topology, collective): a job config as
// everywhere, or the name of a catalog cluster (`megasim topology gb200-nvl72-clos`), which
// becomes a job on that cluster with the neutral plan (a small catalog model, DP = GPUs), so
// its fabric can be described without writing a job first. --set applies either way.
#include <string>
#include <vector>

#include "cli_context.hpp"

namespace megasim {

inline constexpr const char* kJobOrClusterHelp = "job config (JSON file or bundled job name) or catalog cluster name";

JobSpec load_job_or_cluster(const CliContext& ctx, const std::string& config, const std::vector<std::string>& sets);

}  // namespace megasim
