#pragma once
// Start-up cost of a job: communicator initialisation for its process groups (MegaScale
// §3.5), from the goodput module's model and the system's store/ordering switches.
#include "megasim/config/specs.hpp"

namespace megasim {

class Catalog;

double communicator_startup_s(const JobSpec& job, const Catalog& catalog);
// Same for a bare GPU count with MegaScale's 175B plan (TP 8, PP 8), as the paper measured.
double communicator_startup_for_plan_s(std::int64_t gpus, int tp, int pp, int cp,
                                       CommInitStore store, bool ordered,
                                       const Catalog& catalog);

}  // namespace megasim
