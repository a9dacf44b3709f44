#include "megasim/exec/startup.hpp"

#include "megasim/config/catalog.hpp"
#include "megasim/core/units.hpp"
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

CommunicatorStartup communicator_startup(const JobSpec& job, const Catalog& catalog) {
  const ReliabilityCatalog rel = load_reliability_catalog(catalog.root() / "reliability");
  CommunicatorStartup out;
  out.seconds = model_comm_init(job, rel.comm_init).total_s;
  if (!job.system.comm_init_lazy || !job.system.gloo_process_groups || out.seconds < 600.0) return out;
  JobSpec without = job;
  without.system.gloo_process_groups = false;
  const double rest = model_comm_init(without, rel.comm_init).total_s;
  if (out.seconds - rest >= 0.5 * out.seconds) {
    out.hint = "mostly gloo process groups' full-mesh connects; system.gloo_process_groups=false "
               "(Megatron-Core --disable-gloo-process-groups) gives " + format_time(rest);
  }
  return out;
}

}  // namespace megasim
