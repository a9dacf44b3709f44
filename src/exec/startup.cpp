#include "megasim/exec/startup.hpp"

#include "megasim/config/catalog.hpp"
#include "megasim/goodput/comm_init.hpp"
#include "megasim/catalogs/reliability_reader.hpp"

namespace megasim {

double communicator_startup_for_plan_s(std::int64_t gpus, int tp, int pp, int cp,
                                       CommInitStore store, bool ordered,
                                       const Catalog& catalog) {
  const ReliabilityCatalog rel = load_reliability_catalog(catalog.root() / "reliability");
  CommInitInput in;
  in.num_gpus = gpus;
  in.groups = megatron_comm_groups(gpus, tp, pp, cp);
  in.store = store;
  in.ordered = ordered;
  return model_comm_init(in, rel.comm_init).total_s;
}

double communicator_startup_s(const JobSpec& job, const Catalog& catalog) {
  const ReliabilityCatalog rel = load_reliability_catalog(catalog.root() / "reliability");
  return model_comm_init(job, rel.comm_init).total_s;
}

}  // namespace megasim
