#pragma once
// Host-side software overheads (configs/hw/host.json). The figures are order-of-magnitude
// ESTIMATES (MegaScale §3.4 and §6.3 give no numbers), kept in the catalog with that status
// so that a measurement can replace them; exec/host_overheads.hpp turns them into step time.
namespace megasim {

class Catalog;

struct HostOverheads {
  double loader_first_batch_s = 0;  // one loader preparing a step's first micro-batch
  double gc_pause_s = 0;            // a generation-2 collection in a training process
  double p2p_sync_gap_s = 0;        // GPU idle after a host synchronize, before the next chunk
};

// Reads hw/host from the catalog (strict: every figure {"value", "source"}, no unknown keys).
HostOverheads load_host_overheads(const Catalog& catalog);

}  // namespace megasim
