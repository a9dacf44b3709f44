#pragma once
// Host-side software overheads MegaScale §3.4 and §6.3 remove: the data loader's idle time
// at the start of a step and the launch skew that uneven Python garbage collection puts on
// the last data-parallel collective. The figures are order-of-magnitude ESTIMATES (the paper
// gives no numbers), kept in configs/hw/host.json with that status so they can be replaced
// by a measurement.
#include <cstdint>

#include "megasim/config/specs.hpp"

namespace megasim {

class Catalog;

struct HostOverheads {
  double loader_first_batch_s = 0;  // one loader preparing a step's first micro-batch
  double gc_pause_s = 0;            // a generation-2 collection in a training process
};

HostOverheads load_host_overheads(const Catalog& catalog);

// Exposed data-loading time: none with asynchronous preprocessing (the next step's batch is
// prepared while gradients synchronise); otherwise the first batch's latency, with every GPU's
// own loader contending for the host (one loader per node removes the contention).
double data_loading_time_s(const HostOverheads& h, const SystemSpec& sys, int gpus_per_node);

// Expected delay of the step's last DP collective from GC-induced launch skew: every rank of
// the DP group must launch it, so the slowest rank's pause counts. Removed by the fix.
double gc_skew_time_s(const HostOverheads& h, const SystemSpec& sys, std::int64_t dp);

}  // namespace megasim
