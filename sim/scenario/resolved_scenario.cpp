#include "sim/scenario/resolved_scenario.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace commbound::sim {
namespace {

// The units a scenario file writes: scenario.cpp and presets.cpp read them back into SI by
// multiplying with these.
constexpr double kSecondsPerUs = 1e-6;
constexpr double kBytesPerGB = 1e9;
constexpr double kBytesPerMB = 1e6;

// The value a file writes in a unit of `si_per_unit` for a reader's `value * si_per_unit` to give
// `si` back exactly: the shortest decimal that does (1.7 us, not 1.6999999999999997), else the
// nearest double that does. Dividing alone can miss by an ulp, which a second round trip doubles.
double in_file_unit(double si, double si_per_unit) {
  const double guess = si / si_per_unit;
  for (int digits = 1; digits <= 17; ++digits) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text - 1, guess, std::chars_format::general, digits).ptr;
    *end = '\0';
    const double v = std::strtod(text, nullptr);
    if (v * si_per_unit == si) return v;
  }
  double below = guess, above = guess;
  for (int step = 0; step < 4; ++step) {
    below = std::nextafter(below, -HUGE_VAL);
    above = std::nextafter(above, HUGE_VAL);
    if (below * si_per_unit == si) return below;
    if (above * si_per_unit == si) return above;
  }
  return guess;
}

const char* host_cpu_name(network::HostCpu cpu) {
  switch (cpu) {
    case network::HostCpu::intel: return "intel";
    case network::HostCpu::amd: return "amd";
    case network::HostCpu::other: return "other";
  }
  return "other";
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::ddp: return "ddp";
    case Strategy::fsdp: return "fsdp";
    case Strategy::hsdp: return "hsdp";
    case Strategy::diloco: return "diloco";
  }
  return "fsdp";
}

// A link technology as [fabric.link] (or a links.toml entry) writes it.
toml::table link_table(const network::LinkTech& link) {
  return toml::table{{"name", link.name},
                     {"bandwidth_GBps", in_file_unit(link.bw_bytes_per_s, kBytesPerGB)},
                     {"efficiency", link.efficiency},
                     {"latency_us", in_file_unit(link.latency_s, kSecondsPerUs)}};
}

toml::table node_table(const network::NodeType& node) {
  return toml::table{{"name", node.name},
                     {"gpu", node.gpu},
                     {"gpus", node.gpus},
                     {"nics", node.nics},
                     {"nvlink", node.nvlink.name},
                     {"nvlink_topology", node.nvlink_topology == network::NvlinkTopology::mesh ? "mesh" : "switch"},
                     {"pcie", node.pcie.name},
                     {"sm_arch", node.sm_arch},
                     {"nvls", node.nvls},
                     {"nccl_channels", node.nccl_channels},
                     {"nic", node.nic},
                     {"host_cpu", host_cpu_name(node.host_cpu)}};
}

}  // namespace

toml::table resolved_scenario(const Scenario& sc) {
  const network::FabricSpec& f = sc.cluster.fabric;
  toml::table doc;
  if (!sc.description.empty()) doc.insert("description", sc.description);
  doc.insert("cluster", toml::table{{"nodes", sc.cluster.nodes},
                                    {"kernel_table", sc.kernel_table_setting},
                                    {"node", node_table(sc.cluster.node)}});
  doc.insert("fabric", toml::table{{"topology", network::to_string(f.topology)},
                                   {"link", link_table(f.link)},
                                   {"routing", network::to_string(f.routing)},
                                   {"oversubscription", f.oversubscription},
                                   {"switch_radix", f.switch_radix},
                                   {"levels", f.levels},
                                   {"ecmp_seed", static_cast<int64_t>(f.ecmp_seed)},
                                   {"sharp", f.sharp},
                                   {"switch_latency_us", in_file_unit(f.switch_latency_s, kSecondsPerUs)}});
  const NcclOptions& o = sc.nccl_options;
  toml::table nccl{{"release", sc.nccl.release},
                   {"algorithm", o.algorithm ? network::to_string(*o.algorithm) : "auto"},
                   {"protocol", o.protocol ? network::to_string(*o.protocol) : "auto"},
                   {"fidelity", network::to_string(o.fidelity)},
                   {"jitter", o.jitter ? "on" : "off"}};
  if (f.fit) nccl.insert("fit", f.fit->name);
  doc.insert("nccl", std::move(nccl));
  if (!sc.training) return doc;

  const TrainingSpec& t = *sc.training;
  doc.insert("model", toml::table{{"name", t.model.name},
                                  {"layers", t.model.layers},
                                  {"hidden", t.model.hidden},
                                  {"heads", t.model.heads},
                                  {"kv_heads", t.model.kv_heads},
                                  {"ffn", t.model.ffn},
                                  {"vocab", t.model.vocab},
                                  {"mlp", calibration::to_string(t.model.mlp)},
                                  {"norm", calibration::to_string(t.model.norm)},
                                  {"position", calibration::to_string(t.model.position)},
                                  {"max_positions", t.model.max_positions},
                                  {"bias", t.model.bias},
                                  {"tied_embeddings", t.model.tied_embeddings}});
  doc.insert("training", toml::table{{"seq_len", t.seq_len},
                                     {"global_batch", t.global_batch},
                                     {"micro_batch", t.micro_batch},
                                     {"activation_checkpointing", to_string(t.recompute)},
                                     {"warmup_iterations", t.warmup_iterations},
                                     {"attention_kernel", t.attention_kernel},
                                     {"framework", calibration::to_string(t.framework)},
                                     {"precision", calibration::to_string(t.precision)}});
  doc.insert("parallel", toml::table{{"strategy", strategy_name(t.strategy)},
                                     {"zero_stage", t.zero_stage},
                                     {"hsdp_shard", t.hsdp_shard},
                                     {"diloco_islands", t.diloco_islands},
                                     {"diloco_sync_every", t.diloco_sync_every},
                                     {"tp", t.tp},
                                     {"pp", t.pp},
                                     {"cp", t.cp},
                                     {"sequence_parallel", t.sequence_parallel},
                                     {"virtual_stages", t.virtual_stages},
                                     {"max_inflight_allgathers", t.max_inflight_allgathers},
                                     {"ddp_bucket_MB", in_file_unit(t.ddp_bucket_bytes, kBytesPerMB)}});
  if (sc.workload) {
    const TraceWorkload& w = *sc.workload;
    toml::table workload{{"trace", w.path},  // absolute (read_workload): points/ is elsewhere
                         {"collectives", w.simulate_collectives ? "simulate" : "measured"}};
    if (w.step) workload.insert("step", static_cast<int64_t>(*w.step));
    toml::table groups;
    for (const auto& g : w.groups) groups.insert(g.trace_group, g.kind);
    if (!groups.empty()) workload.insert("groups", std::move(groups));
    doc.insert("workload", std::move(workload));
  }
  return doc;
}

std::string resolved_scenario_toml(const Scenario& scenario, const std::string& comment) {
  std::ostringstream out;
  out << "# " << comment << "\n" << toml::toml_formatter(resolved_scenario(scenario)) << "\n";
  return out.str();
}

std::string resolved_scenario_json(const Scenario& scenario) {
  std::ostringstream out;
  out << toml::json_formatter(resolved_scenario(scenario));
  return out.str();
}

}  // namespace commbound::sim
