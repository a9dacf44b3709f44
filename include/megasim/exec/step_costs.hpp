#pragma once
// Computing the per-micro-batch cost ingredients of one training step (StepCosts, declared in
// megasim/workload/step_costs.hpp, the input of both engines) from a job and the catalogs.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/hw/hardware_profile.hpp"
#include "megasim/model/layer_ops.hpp"
#include "megasim/model/memory.hpp"
#include "megasim/report/kernel_table.hpp"
#include "megasim/workload/step_costs.hpp"

namespace megasim {

class Catalog;

StepCosts compute_step_costs(const JobSpec& job, const Catalog& catalog);

// The catalog data compute_step_costs reads (hardware profile of the job's GPU, NCCL model,
// host overheads), loaded once. The planner evaluates thousands of plans on one cluster and
// re-reading and re-parsing these files was ~80% of its analytic phase (callgrind). Valid for
// every job on the same GPU type and catalog; immutable, so shareable across threads.
struct StepCostData;
std::shared_ptr<const StepCostData> load_step_cost_data(const JobSpec& job, const Catalog& catalog);
StepCosts compute_step_costs(const JobSpec& job, const StepCostData& data);
// Same, with the MoE dispatch and combine priced as flows on the fabric (the event engine's
// pricing, src/exec/ep_fabric.hpp) instead of NCCL's closed form; null: the closed form.
class EpExchangeOnFabric;
StepCosts compute_step_costs(const JobSpec& job, const StepCostData& data, const EpExchangeOnFabric* ep_on_fabric);
// The buffer sizes of the loaded hardware profile (memory_per_gpu's last argument).
BufferSizes buffer_sizes(const StepCostData& data);

struct NcclModel;

// The word embedding's gradient all-reduce between the first and the last pipeline stage before
// the optimizer, when both hold the embedding (tied input and output embeddings, or MTP modules;
// Megatron's finalize_model_grads): part of StepCosts::optimizer_s. 0 on one stage.
double embedding_grad_sync_time_s(const JobSpec& job, const NcclModel& nccl);

// Every kernel and collective of one layer (report/kernel_table.hpp says how each is timed).
std::vector<LayerKernelTime> layer_kernel_times(const JobSpec& job, const StepCostData& data);  // layer 0's kind
std::vector<LayerKernelTime> layer_kernel_times(const JobSpec& job, const StepCostData& data, const LayerKind& kind);

}  // namespace megasim
