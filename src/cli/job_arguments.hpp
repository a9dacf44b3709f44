#pragma once
// The CONFIG positional and the repeatable --set overrides that every job-taking subcommand
// accepts, and the --jobs option of the parallel ones, declared once so their names, help and
// checks stay the same everywhere.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "megasim/core/error.hpp"

namespace megasim {

inline void add_job_arguments(CLI::App* cmd, std::string& config, std::vector<std::string>& sets,
                              const char* set_help = "override a config field: PATH=VALUE (repeatable)",
                              const char* config_help = "job config (JSON file or bundled job name)") {
  cmd->add_option("CONFIG", config, config_help)->required();
  cmd->add_option("--set", sets, set_help);
}

// --jobs N: worker threads, 0 (the default) = hardware concurrency.
inline void add_jobs_option(CLI::App* cmd, int& jobs,
                            const char* help = "worker threads (default: hardware concurrency)") {
  cmd->add_option("--jobs", jobs, help);
}

// Called from the subcommand's callback: a negative count exits 2 naming the flag.
inline void check_jobs_option(int jobs) {
  if (jobs < 0) throw InputError("--jobs", "must be >= 0 (0 = hardware concurrency)");
}

}  // namespace megasim
