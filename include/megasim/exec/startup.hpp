#pragma once
// Start-up cost of a job: communicator initialisation for its process groups (MegaScale §3.5,
// and today's lazy PyTorch), from the goodput module's model and the system's switches.
#include <string>

#include "megasim/config/specs.hpp"

namespace megasim {

class Catalog;

struct CommunicatorStartup {
  double seconds = 0;
  // For the text report: what to change when a start-up of more than ten minutes is mostly the
  // gloo groups' full-mesh connects (Megatron-Core's default at scale); empty otherwise.
  std::string hint;
};
CommunicatorStartup communicator_startup(const JobSpec& job, const Catalog& catalog);
// MegaScale's measurement: a bare GPU count and plan with the 2023 PyTorch behaviour (a global
// barrier per group, communicators built as the groups are created), store and ordering given.
double communicator_startup_for_plan_s(std::int64_t gpus, int tp, int pp, int cp,
                                       CommInitStore store, bool ordered,
                                       const Catalog& catalog);

}  // namespace megasim
