#pragma once
// The CONFIG positional and the repeatable --set overrides that every job-taking subcommand
// accepts, declared once so their names and help stay the same everywhere.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace megasim {

inline void add_job_arguments(CLI::App* cmd, std::string& config, std::vector<std::string>& sets,
                              const char* set_help = "override a config field: PATH=VALUE (repeatable)") {
  cmd->add_option("CONFIG", config, "job config (JSON file or bundled job name)")->required();
  cmd->add_option("--set", sets, set_help);
}

}  // namespace megasim
