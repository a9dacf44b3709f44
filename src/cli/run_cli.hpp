#pragma once
// The whole command line as a function, so golden tests can run it in-process.
// Returns the process exit code: 0 success, 2 invalid input, 1 internal error (and the
// subcommand's own code where it reports one, e.g. regress drift).
#include <ostream>

namespace megasim {

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace megasim
