#include "sim/scenario/training.hpp"

#include "core/enum_names.hpp"
#include "core/table_reader.hpp"
#include "core/units.hpp"

namespace commbound::sim {


const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::selective_op: return "selective_op";
    case Recompute::mla_up_proj: return "mla_up_proj";
    case Recompute::full: return "full";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(std::string_view name) {
  return parse_named(name, {Recompute::none, Recompute::selective, Recompute::selective_op, Recompute::mla_up_proj,
                            Recompute::full});
}

const char* to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::zb_h1: return "zb-h1";
  }
  return "?";
}

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name) {
  return parse_named(name, {PipelineSchedule::one_f_one_b, PipelineSchedule::zb_h1});
}

const char* to_string(CpComm c) {
  switch (c) {
    case CpComm::p2p: return "p2p";
    case CpComm::all_gather: return "all_gather";
    case CpComm::a2a: return "a2a";
  }
  return "?";
}

std::optional<CpComm> parse_cp_comm(std::string_view name) {
  return parse_named(name, {CpComm::p2p, CpComm::all_gather, CpComm::a2a});
}

const char* to_string(Strategy s) {
  switch (s) {
    case Strategy::ddp: return "ddp";
    case Strategy::fsdp: return "fsdp";
    case Strategy::hsdp: return "hsdp";
    case Strategy::diloco: return "diloco";
  }
  return "?";
}

std::optional<Strategy> parse_strategy(std::string_view name) {
  return parse_named(name, {Strategy::ddp, Strategy::fsdp, Strategy::hsdp, Strategy::diloco});
}

int TrainingSpec::stage_layers(int stage) const {
  if (!vstage_layers.empty()) {
    int layers = 0;
    for (int c = 0; c < virtual_stages; ++c) layers += vstage_layers[static_cast<std::size_t>(c * pp + stage)];
    return layers;
  }
  if (stage == 0 && pp_first_stage_layers > 0) return pp_first_stage_layers;
  if (stage == pp - 1 && pp_last_stage_layers > 0) return pp_last_stage_layers;
  const int set = (pp_first_stage_layers > 0 ? 1 : 0) + (pp_last_stage_layers > 0 ? 1 : 0);
  return (model.layers - pp_first_stage_layers - pp_last_stage_layers) / (pp - set);
}

int TrainingSpec::first_layer(int vstage) const {
  int first = 1;
  for (int k = 0; k < vstage; ++k) first += chunk_layers(k);
  return first;
}

const char* display_name(Strategy s) {
  switch (s) {
    case Strategy::ddp: return "DDP";
    case Strategy::fsdp: return "FSDP";
    case Strategy::hsdp: return "HSDP";
    case Strategy::diloco: return "DiLoCo";
  }
  return "?";
}

Expected<GpuSpec> load_gpu(const Presets& presets, const std::string& name) {
  const auto path = presets.dir() / "gpus.toml";
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  const toml::node* node = file->get(name);
  if (node == nullptr || !node->is_table()) return Error{path.string() + ": no GPU named \"" + name + "\""};
  TableReader r(*node->as_table(), name);
  GpuSpec g;
  g.name = name;
  g.description = r.string("description", name);
  g.device_name = r.string("device_name", "");
  g.compute_capability = r.number("compute_capability", 0, 1, 99);
  g.sm_count = r.integer("sm_count", 0, 1, 100000);
  g.sm_clock_max_hz = r.number("sm_clock_max_MHz", 0, 1, 1e5) * kHzPerMHz;
  g.peak_dtype = r.choice("peak_dtype", "bf16", {"bf16", "fp16"});
  g.peak_flops_per_s = r.required_number("dense_bf16_TFLOPs", 1, 1e6) * kFlopsPerTFLOP;
  g.peak_fp8_flops_per_s = r.number("dense_fp8_TFLOPs", 0, 0, 1e6) * kFlopsPerTFLOP;
  g.hbm_bytes_per_s = r.required_number("hbm_GBps", 1, 1e7) * kBytesPerGB;
  g.memory_bytes = r.required_number("memory_GB", 1, 1e5) * kBytesPerGB;
  g.tdp_w = r.required_number("tdp_W", 1, 1e5);
  g.idle_w = r.required_number("idle_W", 0, 1e5);
  g.comm_contention_factor = r.number("comm_contention_factor", 1.0, 1.0, 10.0);
  if (Status s = r.finish(); !s) return s.error();
  return g;
}

Expected<HostCosts> load_host_costs(const Presets& presets, model::Framework framework) {
  if (!model::traits(framework).host_model) return HostCosts{};
  const auto path = presets.dir() / "frameworks.toml";
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  const std::string name = model::to_string(framework);
  const toml::node* node = file->get(name);
  if (node == nullptr || !node->is_table()) return Error{path.string() + ": no framework named \"" + name + "\""};
  TableReader r(*node->as_table(), name);
  HostCosts h;
  h.forward_op_s = r.required_number("host_forward_op_us", 0, 1e4) * kSecondsPerUs;
  h.backward_op_s = r.required_number("host_backward_op_us", 0, 1e4) * kSecondsPerUs;
  h.source = r.string("source", "");
  r.string("description", "");
  if (Status s = r.finish(); !s) return s.error();
  return h;
}

}  // namespace commbound::sim
