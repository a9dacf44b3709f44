#include "megasim/catalogs/reliability_reader.hpp"

#include <nlohmann/json.hpp>
#include <string>

#include "megasim/config/load.hpp"
#include "megasim/config/strict_keys.hpp"
#include "megasim/core/error.hpp"
#include "megasim/core/units.hpp"

namespace megasim {

namespace {

using nlohmann::json;

void require_object(const json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "must be an object");
}

// Collects "path: source" for the report and returns the figure's value.
class Reader {
 public:
  explicit Reader(std::vector<std::string>& sources) : sources_(sources) {}

  const json& figure(const json& obj, const char* key, const std::string& parent) {
    const std::string path = join_path(parent, key);
    if (!obj.contains(key)) throw InputError(path, "is required");
    const json& f = obj.at(key);
    if (f.is_object()) {
      require_known_keys(f, path, {"value", "source"});
      if (!f.contains("value")) throw InputError(join_path(path, "value"), "is required");
      if (!f.contains("source") || !f.at("source").is_string()) {
        throw InputError(join_path(path, "source"), "every figure needs a source string");
      }
      sources_.push_back(path + ": " + f.at("source").get<std::string>());
      return f.at("value");
    }
    sources_.push_back(path + ": user override");
    return f;
  }
  double time_s(const json& obj, const char* key, const std::string& parent) {
    const json& v = figure(obj, key, parent);
    const std::string path = join_path(parent, key);
    if (!v.is_string()) throw InputError(path, "must be a time with a unit, e.g. \"30s\"");
    return parse_time_s(v.get<std::string>(), path);
  }
  double bandwidth_Bps(const json& obj, const char* key, const std::string& parent) {
    const json& v = figure(obj, key, parent);
    const std::string path = join_path(parent, key);
    if (!v.is_string()) throw InputError(path, "must be a bandwidth with a unit, e.g. \"25GB/s\"");
    const double r = parse_bandwidth_Bps(v.get<std::string>(), path);
    if (r <= 0) throw InputError(path, "must be > 0");
    return r;
  }
  double number(const json& obj, const char* key, const std::string& parent, double lo, double hi) {
    const json& v = figure(obj, key, parent);
    const std::string path = join_path(parent, key);
    if (!v.is_number()) throw InputError(path, "must be a number");
    const double d = v.get<double>();
    if (!(d >= lo && d <= hi)) {
      throw InputError(path, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return d;
  }

 private:
  std::vector<std::string>& sources_;
};

FailureScope parse_scope(const json& v, const std::string& path) {
  const std::string s = v.is_string() ? v.get<std::string>() : "";
  if (s == "gpu") return FailureScope::Gpu;
  if (s == "node") return FailureScope::Node;
  if (s == "link") return FailureScope::Link;
  if (s == "job") return FailureScope::Job;
  throw InputError(path, "must be \"gpu\", \"node\", \"link\" or \"job\"");
}

DetectionKind parse_detection(const json& v, const std::string& path) {
  const std::string s = v.is_string() ? v.get<std::string>() : "";
  if (s == "crash") return DetectionKind::Crash;
  if (s == "hang") return DetectionKind::Hang;
  if (s == "planned") return DetectionKind::Planned;
  throw InputError(path, "must be \"crash\", \"hang\" or \"planned\"");
}

struct Observation {
  double gpus = 0, nodes = 0, links = 0, hours = 0;
};

FailureClass parse_class(const std::string& name, const json& j, const Observation& obs,
                         const std::string& path, Reader& rd) {
  require_object(j, path);
  require_known_keys(j, path, {"category", "scope", "count", "rate_per_unit_hour", "detection",
                               "manual_fraction", "source"});
  FailureClass c;
  c.name = name;
  c.category = j.value("category", std::string("Other"));
  if (!j.contains("scope")) throw InputError(join_path(path, "scope"), "is required");
  c.scope = parse_scope(j.at("scope"), join_path(path, "scope"));
  c.detection = j.contains("detection") ? parse_detection(j.at("detection"), join_path(path, "detection"))
                                        : DetectionKind::Crash;
  c.source = j.value("source", std::string("user override"));
  c.manual_fraction = j.contains("manual_fraction") ? rd.number(j, "manual_fraction", path, 0, 1) : 0;
  if (j.contains("rate_per_unit_hour")) {
    const json& r = j.at("rate_per_unit_hour");
    if (!r.is_number() || r.get<double>() < 0) {
      throw InputError(join_path(path, "rate_per_unit_hour"), "must be a number >= 0");
    }
    c.rate_per_unit_hour = r.get<double>();
  } else if (j.contains("count")) {
    const json& n = j.at("count");
    if (!n.is_number() || n.get<double>() < 0) throw InputError(join_path(path, "count"), "must be >= 0");
    // A count over the observation window becomes a rate per unit-hour of that window.
    double units = obs.gpus;
    if (c.scope == FailureScope::Node) units = obs.nodes;
    if (c.scope == FailureScope::Link) units = obs.links;
    if (c.scope == FailureScope::Job) units = 1;
    if (units <= 0 || obs.hours <= 0) {
      throw InputError(join_path(path, "count"), "needs an \"observation\" window with units and days");
    }
    c.rate_per_unit_hour = n.get<double>() / (units * obs.hours);
  } else {
    throw InputError(path, "needs \"count\" (over the observation window) or \"rate_per_unit_hour\"");
  }
  return c;
}

}  // namespace

ReliabilityCatalog reliability_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  require_known_keys(j, path, {"source", "observation", "failure_classes", "detection", "recovery", "checkpoint",
                               "stragglers", "comm_init"});
  ReliabilityCatalog cat;
  Reader rd(cat.sources);

  Observation obs;
  if (j.contains("observation")) {
    const std::string p = join_path(path, "observation");
    const json& o = j.at("observation");
    require_object(o, p);
    require_known_keys(o, p, {"gpus", "nodes", "links", "days", "source"});
    obs.gpus = o.value("gpus", 0.0);
    obs.nodes = o.value("nodes", 0.0);
    obs.links = o.value("links", 0.0);
    obs.hours = o.value("days", 0.0) * 24.0;
  }
  {
    const std::string p = join_path(path, "failure_classes");
    if (!j.contains("failure_classes")) throw InputError(p, "is required");
    const json& fc = j.at("failure_classes");
    require_object(fc, p);
    for (auto it = fc.begin(); it != fc.end(); ++it) {  // nlohmann objects iterate sorted by key
      if (it.value().is_null()) continue;                // removed by a merge patch
      cat.failure_classes.push_back(parse_class(it.key(), it.value(), obs, join_path(p, it.key()), rd));
    }
  }
  const auto section = [&](const char* key) -> const json& {
    const std::string p = join_path(path, key);
    if (!j.contains(key)) throw InputError(p, "is required");
    require_object(j.at(key), p);
    return j.at(key);
  };
  {
    const std::string p = join_path(path, "detection");
    const json& d = section("detection");
    require_known_keys(d, p, {"heartbeat_interval", "heartbeat_timeout", "collective_timeout"});
    cat.recovery.heartbeat_interval_s = rd.time_s(d, "heartbeat_interval", p);
    cat.recovery.heartbeat_timeout_s = rd.time_s(d, "heartbeat_timeout", p);
    cat.recovery.collective_timeout_s = rd.time_s(d, "collective_timeout", p);
  }
  {
    const std::string p = join_path(path, "recovery");
    const json& r = section("recovery");
    require_known_keys(r, p, {"diagnostics", "node_replacement", "manual_response", "warmup", "planned_restart"});
    cat.recovery.diagnostics_s = rd.time_s(r, "diagnostics", p);
    cat.recovery.node_replacement_s = rd.time_s(r, "node_replacement", p);
    cat.recovery.manual_response_s = rd.time_s(r, "manual_response", p);
    cat.recovery.warmup_s = rd.time_s(r, "warmup", p);
    cat.recovery.planned_restart_s = rd.time_s(r, "planned_restart", p);
  }
  {
    const std::string p = join_path(path, "checkpoint");
    const json& c = section("checkpoint");
    require_known_keys(c, p, {"bytes_per_parameter", "snapshot_fixed", "gpu_to_host_bandwidth",
                              "storage_write_bandwidth", "storage_read_bandwidth", "reader_bandwidth",
                              "broadcast_bandwidth", "interval"});
    auto& ck = cat.checkpoint;
    ck.bytes_per_parameter = rd.number(c, "bytes_per_parameter", p, 0, 64);
    ck.snapshot_fixed_s = rd.time_s(c, "snapshot_fixed", p);
    ck.gpu_to_host_Bps = rd.bandwidth_Bps(c, "gpu_to_host_bandwidth", p);
    ck.storage_write_Bps = rd.bandwidth_Bps(c, "storage_write_bandwidth", p);
    ck.storage_read_Bps = rd.bandwidth_Bps(c, "storage_read_bandwidth", p);
    ck.reader_Bps = rd.bandwidth_Bps(c, "reader_bandwidth", p);
    ck.broadcast_Bps = rd.bandwidth_Bps(c, "broadcast_bandwidth", p);
    const json& iv = rd.figure(c, "interval", p);
    if (iv.is_string() && iv.get<std::string>() == "auto") {
      ck.interval_s = 0;
    } else if (iv.is_string()) {
      ck.interval_s = parse_time_s(iv.get<std::string>(), join_path(p, "interval"));
      if (ck.interval_s <= 0) throw InputError(join_path(p, "interval"), "must be > 0 or \"auto\"");
    } else {
      throw InputError(join_path(p, "interval"), "must be \"auto\" or a time such as \"30min\"");
    }
  }
  {
    const std::string p = join_path(path, "stragglers");
    const json& s = section("stragglers");
    require_known_keys(s, p, {"slow_host_fraction", "slowdown"});
    cat.stragglers.slow_host_fraction = rd.number(s, "slow_host_fraction", p, 0, 1);
    cat.stragglers.slowdown = rd.number(s, "slowdown", p, 0, 100);
  }
  {
    const std::string p = join_path(path, "comm_init");
    const json& c = section("comm_init");
    require_known_keys(c, p, {"tcpstore_op", "redis_ops_per_s", "group_fixed", "store_ops_per_rank_per_barrier", "store_connect"});
    cat.comm_init.tcpstore_op_s = rd.time_s(c, "tcpstore_op", p);
    cat.comm_init.redis_ops_per_s = rd.number(c, "redis_ops_per_s", p, 1, 1e12);
    cat.comm_init.group_fixed_s = rd.time_s(c, "group_fixed", p);
    cat.comm_init.store_ops_per_rank_per_barrier =
        static_cast<int>(rd.number(c, "store_ops_per_rank_per_barrier", p, 1, 100));
    cat.comm_init.store_connect_s = rd.time_s(c, "store_connect", p);
  }
  return cat;
}

ReliabilityCatalog load_reliability_catalog(const std::filesystem::path& dir, const json* overrides) {
  const auto file = dir / "default.json";
  json j = read_json_file(file, file.string());
  if (overrides != nullptr && !overrides->is_null()) {
    require_object(*overrides, "reliability");
    j.merge_patch(*overrides);
  }
  return reliability_from_json(j, "reliability");
}

ReliabilityCatalog load_reliability_catalog(const std::filesystem::path& dir, const std::filesystem::path& patch_file,
                                            const std::string& option) {
  const json patch = read_json_file(patch_file, option);
  return load_reliability_catalog(dir, &patch);
}

}  // namespace megasim
