#include "megasim/exec/des_step.hpp"

#include <iostream>
#include <optional>

#include "cost_context.hpp"
#include "des_executor.hpp"
#include "des_report.hpp"
#include "ep_fabric.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/net/topology_builders.hpp"

namespace megasim {

StepReport simulate_step_des(const JobSpec& job, const StepCosts& costs, const Fabric& fabric,
                             const NcclModel& nccl, const DesOptions& options) {
  WorkloadOptions wo = workload_options(job);
  wo.schedule = options.schedule;
  const StepGraph graph = build_step_graph(costs, wo);
  DesExecutor ex(job, costs, graph, fabric, nccl, options);
  ex.run();
  StepReport rep = summarize_des_run(ex, options);
  if (!options.trace_path.empty()) write_des_trace(ex, options.trace_counter_links, options.trace_path);
  return rep;
}

StepReport simulate_step_des(const JobSpec& job, const Catalog& catalog, const SimulateOptions& options,
                             StepCosts& costs) {
  const Fabric fabric = build_fabric(job.cluster);
  const std::shared_ptr<const StepCostData> data = load_step_cost_data(job, catalog);
  const NcclModel& nccl = data->nccl;
  std::optional<EpExchangeOnFabric> ep;
  if (is_moe(job.model) && job.parallel.expert_model_parallel_size > 1)
    ep.emplace(job, fabric, ep_exchange_model(job, *data));
  costs = compute_step_costs(job, *data, ep ? &*ep : nullptr);
  DesOptions o;
  o.full = options.full;
  o.trace_path = options.trace_path;
  if (options.progress) o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  if (ep && ep->priced_on_fabric()) o.external_link_bytes = ep->step_link_bytes(costs.micro_batches);
  return simulate_step_des(job, costs, fabric, nccl, o);
}

}  // namespace megasim
