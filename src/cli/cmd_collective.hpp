#pragma once
// Registration of `megasim collective` (src/cli/cmd_collective.cpp).
#include <CLI/CLI.hpp>

#include "cli_context.hpp"

namespace megasim {

void register_collective_command(CLI::App& app, CliContext& ctx);

}  // namespace megasim
