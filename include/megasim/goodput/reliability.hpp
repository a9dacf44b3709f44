#pragma once
// Reliability inputs of the goodput model: failure classes with their rates, detection and
// recovery times, checkpoint bandwidths, stragglers and the communicator-init constants.
// Defaults live in configs/reliability/default.json, every figure with its source; any field can
// be overridden with a JSON merge patch of the same shape (megasim/catalogs/reliability_reader.hpp
// reads both).
#include <string>
#include <vector>

#include "megasim/goodput/comm_init.hpp"

namespace megasim {

// What one failure rate is counted per: a GPU, a node (host), a network link (one NIC cable per
// GPU in a rail-optimised cluster) or the whole job (independent of its size).
enum class FailureScope { Gpu, Node, Link, Job };
// How the failure is noticed: a crash stops heartbeats; a hang is only seen when a collective
// times out; a planned interruption is announced (checkpoint first, nothing is lost).
enum class DetectionKind { Crash, Hang, Planned };

struct FailureClass {
  std::string name;              // key in the catalog, e.g. "faulty_gpu"
  std::string category;          // "GPU", "Network", "Host", "Dependency", ...
  FailureScope scope = FailureScope::Gpu;
  double rate_per_unit_hour = 0; // interruptions per unit (GPU/node/link/job) per hour running
  DetectionKind detection = DetectionKind::Crash;
  double manual_fraction = 0;    // share of these interruptions that need a human
  std::string source;
};

struct RecoveryParams {
  double heartbeat_interval_s = 0;
  double heartbeat_timeout_s = 0;   // missing heartbeats for this long = crash detected
  double collective_timeout_s = 0;  // a hang is detected when a collective times out
  double diagnostics_s = 0;         // automated self-check tests on the suspect nodes
  double node_replacement_s = 0;    // evict bad nodes, bring in healthy spares
  double manual_response_s = 0;     // extra time when a human must intervene
  double warmup_s = 0;              // process launch, data loader, first slow iterations
  double planned_restart_s = 0;     // announced stop + relaunch (excluding init and load)
};

struct CheckpointParams {
  double bytes_per_parameter = 0;     // model + optimizer state saved per parameter
  double snapshot_fixed_s = 0;        // stage 1 serialisation cost besides the copy itself
  double gpu_to_host_Bps = 0;         // stage 1 copy, per GPU (PCIe)
  double storage_write_Bps = 0;       // stage 2, aggregate remote-storage write bandwidth
  double storage_read_Bps = 0;        // restart, aggregate remote-storage read bandwidth
  double reader_Bps = 0;              // restart, one reader's own bandwidth (its NIC)
  double broadcast_Bps = 0;           // restart, broadcast of a shard inside a DP group
  double interval_s = 0;              // user interval; 0 = Young/Daly optimum
};

struct StragglerParams {
  double slow_host_fraction = 0;  // share of hosts that run slower
  double slowdown = 0;            // 0.1 = 10% longer compute on a slow host
};

struct ReliabilityCatalog {
  std::vector<FailureClass> failure_classes;  // sorted by name (deterministic order)
  RecoveryParams recovery;
  CheckpointParams checkpoint;
  StragglerParams stragglers;
  CommInitConstants comm_init;
  std::vector<std::string> sources;  // "field: source" lines for the report's assumptions
};

const char* to_string(FailureScope s);
const char* to_string(DetectionKind d);

}  // namespace megasim
