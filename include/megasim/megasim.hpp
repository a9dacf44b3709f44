#pragma once
// megasim's C++ user API (DESIGN.md A5): load a job, simulate one training step, read or
// serialise the report. This header is the stable surface; everything else under
// include/megasim/ is internal and may change.
//
//   #include <megasim/megasim.hpp>          // CMake: find_package(megasim CONFIG REQUIRED),
//                                           //        target_link_libraries(app megasim::megasim)
//   megasim::Job job = megasim::load_job("megascale-175b-12288", {"cluster.num_gpus=6144"});
//   megasim::StepReport r = megasim::simulate(job);                  // event engine
//   megasim::StepReport a = megasim::simulate(job, {.engine = megasim::Engine::analytic});
//   double t = r.step_time_s, mfu = r.mfu;
//   std::string json = megasim::to_json(r);   // the object `megasim simulate --json` prints
//
// Bad input throws megasim::InputError, whose what() is the CLI's one-line "PATH: RULE".
#include <filesystem>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/core/error.hpp"
#include "megasim/report/step_report.hpp"

// The catalogs of an installed megasim: find_package(megasim) defines this for its consumers.
#ifdef MEGASIM_CATALOG_DIR_DEFAULT
#define MEGASIM_API_CATALOG_DIR MEGASIM_CATALOG_DIR_DEFAULT
#else
#define MEGASIM_API_CATALOG_DIR ""
#endif

namespace megasim {

// A validated job and the catalog directory it was read against (the simulation reads the
// hardware profiles and NCCL constants from the same place).
struct Job {
  JobSpec spec;
  std::filesystem::path catalog_dir;
};

// CONFIG: a JSON file or the name of a bundled job ("megascale-175b-12288"); overrides as the
// CLI's --set ("PATH=VALUE", VALUE parsed as JSON, else a string), applied in order. The
// catalog: $MEGASIM_CATALOG_DIR if set, else `catalog_dir` when not empty (an installed
// megasim's, by default), else the catalogs megasim was built with.
Job load_job(const std::string& config, const std::vector<std::string>& overrides = {},
             const std::filesystem::path& catalog_dir = MEGASIM_API_CATALOG_DIR);

enum class Engine { des, analytic };

struct SimulationOptions {
  Engine engine = Engine::des;  // des: the discrete-event engine; analytic: closed form
  bool full = false;            // des only: simulate every rank instead of folding symmetric ones
};

// One training step of the job: step time, MFU, breakdown, memory (DESIGN.md A3 fields).
StepReport simulate(const Job& job, const SimulationOptions& options = {});

// The report as `megasim simulate --json` prints it (2-space indented, no trailing newline).
std::string to_json(const StepReport& report);

}  // namespace megasim
