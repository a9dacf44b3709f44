#pragma once
// Host-side software overheads MegaScale §3.4 and §6.3 remove: the data loader's idle time
// at the start of a step and the launch skew that uneven Python garbage collection puts on
// the last data-parallel collective (figures: megasim/catalogs/host_overheads.hpp).
#include <cstdint>

#include "megasim/catalogs/host_overheads.hpp"
#include "megasim/config/specs.hpp"

namespace megasim {

// Exposed data-loading time: none with asynchronous preprocessing (the next step's batch is
// prepared while gradients synchronise); otherwise the first batch's latency, with every GPU's
// own loader contending for the host (one loader per node removes the contention).
double data_loading_time_s(const HostOverheads& h, const SystemSpec& sys, int gpus_per_node);

// Expected delay of the step's last DP collective from GC-induced launch skew: every rank of
// the DP group must launch it, so the slowest rank's pause counts. Removed by the fix.
double gc_skew_time_s(const HostOverheads& h, const SystemSpec& sys, std::int64_t dp);

// GPU idle per chunk pass from Megatron's torch.cuda.synchronize() after every batched,
// blocking pipeline send/recv: the queue drains and the GPU waits for the host to issue the
// next chunk. Asynchronous pipeline communication removes it (`pp_overlap`: system.pp_overlap
// where it applies, the interleaved schedule; pipeline_transfers_overlap in config/specs.hpp).
double p2p_sync_gap_time_s(const HostOverheads& h, bool pp_overlap, int pipeline_stages);

}  // namespace megasim
