#include "sim/scenario/scenario_schema.hpp"

#include "core/units.hpp"
#include "model/model_zoo.hpp"
#include "network/tuner_plugin.hpp"
#include "sim/scenario/presets.hpp"

// Key tables are written with designated initializers that leave the fields a key does not use
// at their defaults; GCC warns about each omitted field all the same.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace commbound::sim {

using network::ClusterSpec;
using network::FabricSpec;
using network::NodeType;

namespace {

using Key = KeySpec<Scenario>;
using Got = std::optional<KeyValue>;

KeyValue text(const char* s) { return KeyValue{std::string(s)}; }
const std::string& text_of(const KeyValue& v) { return std::get<std::string>(v); }

// A [fabric] key: Scenario::cluster.fabric.<member>.
template <auto Member>
using Fabric = KeyField<&Scenario::cluster, &ClusterSpec::fabric, Member>;
// A [training] or [parallel] key: Scenario::training-><member>.
template <auto Member>
using Training = KeyField<&Scenario::training, Member>;

std::vector<Key> top_keys() {
  return {
      {.key = "description", .fallback = text(""), .doc = "free text",
       .set = KeyField<&Scenario::description>::set,
       .get = [](const Scenario& s, double) -> Got { return s.description.empty() ? Got() : Got(KeyValue{s.description}); }},
  };
}

std::vector<Key> cluster_keys() {
  return {
      {.key = "node", .type = KeyType::table,
       .doc = "instead of `node_type`, the node described inline, `[cluster.node]` (keys below)"},
      {.key = "node_type", .derived = "required unless `[cluster.node]`",
       .doc = "a table of `calibration/nodes.toml` (`dgx-h100`, `dgx-a100`, `dgx-b200`, `gb200-nvl72`: the Blackwell "
              "nodes' compute tables are DERIVED from the H100 table; `hgx-h100-4gpu`: four H100 SXM5 wired pairwise by "
              "NVLink with no NVSwitch; `workstation-1gpu`: one H100 SXM5 and one 400G NIC; `dgx-h200`: the DGX H100 "
              "with H200s, priced by their own measured table; `hgx-h800`: DeepSeek's H800 nodes, 8 NVLinks a GPU, "
              "compute by the datasheet roofline)"},
      {.key = "nodes", .type = KeyType::integer, .lower = 1, .upper = network::kMaxNodes, .fallback = KeyValue{1L},
       .doc = "nodes in the cluster (`commbound collective --nodes` resizes it)",
       .set = KeyField<&Scenario::cluster, &ClusterSpec::nodes>::set,
       .get = KeyField<&Scenario::cluster, &ClusterSpec::nodes>::get},
      {.key = "kernel_table", .fallback = text("auto"),
       .doc = "what prices compute in `commbound run`: `auto` = `calibration/<gpu>.toml` when it exists, else the "
              "datasheet roofline; `roofline`; or a calibration table file (relative to the working directory, then to "
              "the calibration directory). See docs/calibration.md",
       .set = KeyField<&Scenario::kernel_table_setting>::set, .get = KeyField<&Scenario::kernel_table_setting>::get},
  };
}

std::vector<Key> fabric_keys() {
  using network::Routing;
  using network::Topology;
  return {
      {.key = "topology", .type = KeyType::choice, .fallback = text("fat-tree"),
       .names = names_of({Topology::single_switch, Topology::fat_tree, Topology::rail_optimized}),
       .doc = "`single-switch` (an ideal crossbar), `fat-tree` (NICs packed onto leaves in node order), "
              "`rail-optimized` (NIC k of every node on rail k's leaves, DGX SuperPOD style)",
       .set = KeyEnum<network::parse_topology, &Scenario::cluster, &ClusterSpec::fabric, &FabricSpec::topology>::set,
       .get = KeyEnum<network::parse_topology, &Scenario::cluster, &ClusterSpec::fabric, &FabricSpec::topology>::get},
      {.key = "link", .derived = "the node type's `nic`", .or_table = true,
       .doc = "a table of `calibration/links.toml` (`ib-hdr`, `ib-ndr`, `ib-xdr`, `roce-200g`, `roce-400g`, "
              "`efa-v2-400g`), or an inline `[fabric.link]` table (keys below)"},
      {.key = "routing", .type = KeyType::choice, .fallback = text("adaptive"),
       .names = names_of({Routing::adaptive, Routing::ecmp}),
       .doc = "`adaptive`: each flow spread over all up-links (IB adaptive routing); `ecmp`: each (source NIC, "
              "destination NIC) pair hashed onto one up-link",
       .set = KeyEnum<network::parse_routing, &Scenario::cluster, &ClusterSpec::fabric, &FabricSpec::routing>::set,
       .get = KeyEnum<network::parse_routing, &Scenario::cluster, &ClusterSpec::fabric, &FabricSpec::routing>::get},
      {.key = "oversubscription", .type = KeyType::number, .lower = 1.0, .upper = 64.0, .fallback = KeyValue{1.0},
       .doc = "leaf down-ports : up-ports; a leaf of radix R gets round(R / (1 + o)) up-ports",
       .set = Fabric<&FabricSpec::oversubscription>::set, .get = Fabric<&FabricSpec::oversubscription>::get},
      {.key = "switch_radix", .type = KeyType::integer, .lower = 4, .upper = 1024, .fallback = KeyValue{64L},
       .doc = "ports per switch",
       .set = Fabric<&FabricSpec::switch_radix>::set, .get = Fabric<&FabricSpec::switch_radix>::get},
      {.key = "levels", .type = KeyType::integer, .lower = 0, .upper = 3, .fallback = KeyValue{0L},
       .doc = "tree levels, 2 or 3; 0 picks the fewest that fit (2-level: up to R leaves; 3-level: pods of R/2 "
              "leaves, up to R pods)",
       .set = Fabric<&FabricSpec::levels>::set, .get = Fabric<&FabricSpec::levels>::get},
      {.key = "ecmp_seed", .type = KeyType::integer, .lower = 0, .upper = 1L << 31, .fallback = KeyValue{0L},
       .doc = "salt of the ECMP hash", .set = Fabric<&FabricSpec::ecmp_seed>::set,
       .get = Fabric<&FabricSpec::ecmp_seed>::get},
      {.key = "sharp", .type = KeyType::boolean, .fallback = KeyValue{false},
       .doc = "in-network reduction in the switches (InfiniBand SHARP): NCCL then runs AllReduce as NVLS across "
              "nodes (CollNet) on NVLink-SHARP nodes",
       .set = Fabric<&FabricSpec::sharp>::set, .get = Fabric<&FabricSpec::sharp>::get},
      {.key = "link_spread", .fallback = text(""),
       .doc = "unequal nodes, as a real cluster's pairwise sweep measured them: `calibration/fabric/spread/<name>.txt` "
              "(`xxrjun-cluster00`: 393 node pairs of an H100 cluster, a few of its nodes slow); each node's NIC rate "
              "is drawn from it (network/link_spread.hpp), so a ring waits for its slowest node. \"\": every NIC at "
              "the same rate",
       .get = [](const Scenario& s, double) -> Got {
         return s.cluster.fabric.spread ? Got(KeyValue{s.cluster.fabric.spread->name}) : Got();
       }},
      {.key = "link_spread_seed", .type = KeyType::integer, .lower = 0, .upper = 1L << 31, .fallback = KeyValue{0L},
       .doc = "which node draws which rate of the link spread; the same seed, the same fabric",
       .set = Fabric<&FabricSpec::link_spread_seed>::set, .get = Fabric<&FabricSpec::link_spread_seed>::get},
      {.key = "switch_latency_us", .type = KeyType::number, .si_per_unit = kSecondsPerUs, .lower = 0, .upper = 1e3,
       .derived = "the link's `latency_us`", .doc = "one switch traversal",
       .set = Fabric<&FabricSpec::switch_latency_s>::set, .get = Fabric<&FabricSpec::switch_latency_s>::get},
  };
}

std::vector<Key> nccl_keys() {
  using network::Fidelity;
  using network::Protocol;
  std::vector<std::string> algorithms = network::algorithm_names();
  algorithms.insert(algorithms.begin(), "auto");
  std::vector<std::string> protocols = {"auto"};
  for (const auto& n : names_of({Protocol::ll, Protocol::ll128, Protocol::simple})) protocols.push_back(n);
  return {
      {.key = "release", .fallback = text("2.30.7"), .doc = "which `calibration/nccl/nccl-<release>.toml` to use: `2.30.7`, or `2.20.5` (the NCCL of PyTorch 2.3.1 / CUDA 12.1 wheels)",
       .get = [](const Scenario& s, double) -> Got { return KeyValue{s.nccl.release}; }},
      {.key = "algorithm", .type = KeyType::choice, .fallback = text("auto"), .names = algorithms,
       .doc = "like NCCL_ALGO; `auto`: NCCL's tuner decides",
       .set = [](Scenario& s, const KeyValue& v, double) {
         if (text_of(v) != "auto") s.nccl_options.algorithm = network::parse_algorithm(text_of(v));
       },
       .get = [](const Scenario& s, double) -> Got {
         return text(s.nccl_options.algorithm ? network::to_string(*s.nccl_options.algorithm) : "auto");
       }},
      {.key = "protocol", .type = KeyType::choice, .fallback = text("auto"), .names = protocols,
       .doc = "like NCCL_PROTO; `auto`: NCCL's tuner decides",
       .set = [](Scenario& s, const KeyValue& v, double) {
         if (text_of(v) != "auto") s.nccl_options.protocol = network::parse_protocol(text_of(v));
       },
       .get = [](const Scenario& s, double) -> Got {
         return text(s.nccl_options.protocol ? network::to_string(*s.nccl_options.protocol) : "auto");
       }},
      {.key = "fidelity", .type = KeyType::choice, .fallback = text("fluid"),
       .names = names_of({Fidelity::fluid, Fidelity::step}),
       .doc = "see docs/collective.md; `step` is for `commbound collective` (a training run refuses it)",
       .set = KeyEnum<network::parse_fidelity, &Scenario::nccl_options, &NcclOptions::fidelity>::set,
       .get = KeyEnum<network::parse_fidelity, &Scenario::nccl_options, &NcclOptions::fidelity>::get},
      {.key = "jitter", .type = KeyType::choice, .fallback = text("on"), .names = {"on", "off"},
       .doc = "`on`: compute ops vary by their kernel-table spread (p10..p90) and a collective waits for its slowest "
              "member (order statistics); `off`: every op takes its p50 (the ideal model)",
       .set = [](Scenario& s, const KeyValue& v, double) { s.nccl_options.jitter = text_of(v) == "on"; },
       .get = [](const Scenario& s, double) -> Got { return text(s.nccl_options.jitter ? "on" : "off"); }},
      {.key = "fit", .fallback = text(""),
       .doc = "a fabric fit, `calibration/fabric/<fit>.toml` (`commbound fit-fabric`); must name the cluster's node "
              "type and link",
       .get = [](const Scenario& s, double) -> Got {
         return s.cluster.fabric.fit ? Got(KeyValue{s.cluster.fabric.fit->name}) : Got();
       }},
      {.key = "tuner_plugin", .fallback = text(""),
       .doc = "a tuner plugin NCCL asks before its own tuner, `calibration/nccl/plugins/<name>.toml` (its regions "
              "of size and ranks, each an algorithm and protocol); `aws-ofi-nccl-p5`: AWS EFA's net plugin on p5",
       .get = [](const Scenario& s, double) -> Got {
         return s.nccl.tuner_plugin ? Got(KeyValue{s.nccl.tuner_plugin->name}) : Got();
       }},
      {.key = "channels", .type = KeyType::integer, .lower = 1, .upper = 64,
       .derived = "the node type's `nccl_channels`", .doc = "NCCL channels per collective",
       .set = KeyField<&Scenario::cluster, &ClusterSpec::node, &NodeType::nccl_channels>::set},
  };
}

std::vector<Key> parallel_keys() {
  return {
      {.key = "strategy", .type = KeyType::choice, .fallback = text("fsdp"),
       .names = names_of({Strategy::fsdp, Strategy::hsdp, Strategy::ddp, Strategy::diloco}),
       .doc = "the data-parallel strategy; `diloco`: FSDP inside each island, an outer step across islands",
       .set = KeyEnum<parse_strategy, &Scenario::training, &TrainingSpec::strategy>::set,
       .get = KeyEnum<parse_strategy, &Scenario::training, &TrainingSpec::strategy>::get},
      {.key = "zero_stage", .type = KeyType::integer, .lower = 1, .upper = 3, .fallback = KeyValue{2L},
       .doc = "1: Megatron's distributed optimizer (parameters and gradients whole on every rank, "
              "optimizer state sharded); 2: parameters gathered once, kept for backward; 3: resharded after forward",
       .set = Training<&TrainingSpec::zero_stage>::set, .get = Training<&TrainingSpec::zero_stage>::get},
      {.key = "tp", .type = KeyType::integer, .lower = 1, .upper = 1024, .fallback = KeyValue{1L},
       .doc = "Megatron tensor parallelism (divides heads and KV heads)",
       .set = Training<&TrainingSpec::tp>::set, .get = Training<&TrainingSpec::tp>::get},
      {.key = "pp", .type = KeyType::integer, .lower = 1, .upper = 1024, .fallback = KeyValue{1L},
       .doc = "pipeline stages, run in `pp_schedule`'s order (divides the layers, unless `pp_first_stage_layers`, "
              "`pp_last_stage_layers` or `pp_layout` is set)",
       .set = Training<&TrainingSpec::pp>::set, .get = Training<&TrainingSpec::pp>::get},
      {.key = "cp", .type = KeyType::integer, .lower = 1, .upper = 1024, .fallback = KeyValue{1L},
       .doc = "context parallelism: the sequence split over cp ranks (divides `training.seq_len`)",
       .set = Training<&TrainingSpec::cp>::set, .get = Training<&TrainingSpec::cp>::get},
      {.key = "cp_comm", .type = KeyType::choice, .fallback = text("p2p"),
       .names = names_of({CpComm::p2p, CpComm::all_gather, CpComm::a2a}),
       .doc = "how context parallelism exchanges the sequence (Megatron's `cp_comm_type`): `p2p` ring attention, "
              "K/V blocks passed around the ring beside attention; `all_gather` K and V gathered before attention "
              "(as Llama 3 ran it), their gradients reduce-scattered; `a2a` DeepSpeed Ulysses, q/k/v all-to-all'd "
              "to heads / cp over the whole sequence (cp divides the heads and KV heads per tp rank)",
       .set = KeyEnum<parse_cp_comm, &Scenario::training, &TrainingSpec::cp_comm>::set,
       .get = KeyEnum<parse_cp_comm, &Scenario::training, &TrainingSpec::cp_comm>::get},
      {.key = "ep", .type = KeyType::integer, .lower = 1, .upper = 1 << 20, .fallback = KeyValue{1L},
       .doc = "expert parallelism: an MoE layer's routed experts sharded over ep ranks of a stage's tp x cp x dp "
              "(divides the experts and those ranks)",
       .set = Training<&TrainingSpec::ep>::set, .get = Training<&TrainingSpec::ep>::get},
      {.key = "expert_tp", .type = KeyType::integer, .lower = 1, .upper = 1024, .fallback = KeyValue{1L},
       .doc = "expert tensor parallelism: each expert's MLP split over expert_tp ranks (divides `expert_ffn`; "
              "ep x expert_tp divides a stage's tp x cp x dp)",
       .set = Training<&TrainingSpec::expert_tp>::set, .get = Training<&TrainingSpec::expert_tp>::get},
      {.key = "sequence_parallel", .type = KeyType::boolean, .fallback = KeyValue{false},
       .doc = "sequence parallelism beside tp: Megatron's all-gathers and reduce-scatters instead of all-reduces "
              "(under PyTorch frameworks DTensor's, each buffer also reordered by a cat: sequence on dim 1)",
       .set = Training<&TrainingSpec::sequence_parallel>::set, .get = Training<&TrainingSpec::sequence_parallel>::get},
      {.key = "tp_overlap", .type = KeyType::boolean, .fallback = KeyValue{false},
       .doc = "tensor-parallel comm-GEMM overlap (Transformer Engine's, Megatron's --tp-comm-overlap): each "
              "reduce-scatter beside the GEMM producing it, each all-gather beside the kernels up to the GEMM "
              "reading it (needs `sequence_parallel`)",
       .set = Training<&TrainingSpec::tp_overlap>::set, .get = Training<&TrainingSpec::tp_overlap>::get},
      {.key = "max_inflight_allgathers", .type = KeyType::integer, .lower = 1, .upper = 64, .fallback = KeyValue{2L},
       .doc = "FSDP forward prefetch limit (the current unit and the next)",
       .set = Training<&TrainingSpec::max_inflight_allgathers>::set,
       .get = Training<&TrainingSpec::max_inflight_allgathers>::get},
      {.key = "ddp_bucket_MB", .type = KeyType::number, .si_per_unit = kBytesPerMB, .lower = 1, .upper = 1e5,
       .fallback = KeyValue{25.0}, .doc = "DDP gradient bucket (PyTorch's bucket_cap_mb)",
       .set = Training<&TrainingSpec::ddp_bucket_bytes>::set, .get = Training<&TrainingSpec::ddp_bucket_bytes>::get},
      {.key = "overlap_grad_reduce", .type = KeyType::boolean, .fallback = KeyValue{true},
       .doc = "distributed optimizer (`zero_stage` 1): each bucket's gradients reduce-scattered as the last "
              "micro-batch's backward completes it (Megatron's --overlap-grad-reduce); false: every gradient after "
              "backward, one bucket per model chunk",
       .set = Training<&TrainingSpec::overlap_grad_reduce>::set,
       .get = Training<&TrainingSpec::overlap_grad_reduce>::get},
      {.key = "overlap_param_gather", .type = KeyType::boolean, .fallback = KeyValue{true},
       .doc = "distributed optimizer: the updated parameters all-gathered bucket by bucket under the forward, one "
              "bucket ahead (interleaved: a model chunk ahead; Megatron's --overlap-param-gather, needs "
              "`overlap_grad_reduce`); false: all of them before the forward",
       .set = Training<&TrainingSpec::overlap_param_gather>::set,
       .get = Training<&TrainingSpec::overlap_param_gather>::get},
      {.key = "overlap_param_gather_with_optimizer_step", .type = KeyType::boolean, .fallback = KeyValue{false},
       .doc = "distributed optimizer, interleaved pipeline: every model chunk's parameters gathered as the "
              "optimizer step leaves them, for the next step's forward, each chunk one bucket (Megatron's "
              "--overlap-param-gather-with-optimizer-step; needs `overlap_param_gather`, `virtual_stages` > 1)",
       .set = Training<&TrainingSpec::overlap_param_gather_with_optimizer_step>::set,
       .get = Training<&TrainingSpec::overlap_param_gather_with_optimizer_step>::get},
      {.key = "dp_bucket_params", .type = KeyType::number, .lower = 1, .upper = 1e13,
       .derived = "max(40e6, 1e6 x dp), Megatron-Core's default",
       .doc = "distributed optimizer: parameters per gradient bucket (Megatron's --ddp-bucket-size); only the first "
              "pipeline stage's first model chunk is bucketed, the others are one bucket each",
       .set = Training<&TrainingSpec::dp_bucket_params>::set,
       .get = Training<&TrainingSpec::dp_bucket_params>::get},
      {.key = "pp_schedule", .type = KeyType::choice, .fallback = text("1f1b"),
       .names = names_of({PipelineSchedule::one_f_one_b, PipelineSchedule::zb_h1}),
       .doc = "the pipeline's schedule: `1f1b` (Megatron's; interleaved with `virtual_stages`) or `zb-h1` (zero "
              "bubble: each backward split into input and weight gradients, the weight gradients deferred into the "
              "cool-down; dense models, no virtual stages)",
       .set = KeyEnum<parse_pipeline_schedule, &Scenario::training, &TrainingSpec::pp_schedule>::set,
       .get = KeyEnum<parse_pipeline_schedule, &Scenario::training, &TrainingSpec::pp_schedule>::get},
      {.key = "virtual_stages", .type = KeyType::integer, .lower = 1, .upper = 1024, .fallback = KeyValue{1L},
       .doc = "interleaved 1F1B: model chunks per stage (needs pp > 1; micro-batches a multiple of pp, or see "
              "`pp_microbatch_group`)",
       .set = Training<&TrainingSpec::virtual_stages>::set, .get = Training<&TrainingSpec::virtual_stages>::get},
      {.key = "pp_first_stage_layers", .type = KeyType::integer, .lower = 0, .upper = 1 << 20, .fallback = KeyValue{0L},
       .doc = "uneven pipelines: layers of the first stage (Megatron's --decoder-first-pipeline-num-layers); 0: an "
              "even share, the other stages splitting the rest evenly",
       .set = Training<&TrainingSpec::pp_first_stage_layers>::set,
       .get = Training<&TrainingSpec::pp_first_stage_layers>::get},
      {.key = "pp_last_stage_layers", .type = KeyType::integer, .lower = 0, .upper = 1 << 20, .fallback = KeyValue{0L},
       .doc = "uneven pipelines: layers of the last stage (Megatron's --decoder-last-pipeline-num-layers); 0: an even share",
       .set = Training<&TrainingSpec::pp_last_stage_layers>::set,
       .get = Training<&TrainingSpec::pp_last_stage_layers>::get},
      {.key = "pp_layout",
       .doc = "a free-form pipeline, Megatron-Core's `--pipeline-model-parallel-layout`: virtual stages split by `|`, "
              "chunk 0 of every stage first; `E` embedding (first stage), `t` a decoder layer, `m` an MTP module (last "
              "stage), `L` the loss (last stage); `t*3` and `(tt|)*29` repeat; e.g. `Et|(tt|)*62,tL` (Llama 3 405B on "
              "pp 16: 4 chunks, one layer fewer on the first and the last stage). Sets `virtual_stages`; not with "
              "`pp_first_stage_layers` or `pp_last_stage_layers`",
       .set = Training<&TrainingSpec::pp_layout>::set,
       .get = [](const Scenario& s, double) -> Got {
         return s.training->pp_layout.empty() ? Got() : Got(KeyValue{s.training->pp_layout});
       }},
      {.key = "pp_microbatch_group", .type = KeyType::integer, .lower = 1, .upper = 1L << 30, .derived = "pp",
       .doc = "interleaved pipelines: micro-batches each model chunk runs in a row (Megatron-Core's "
              "`microbatch_group_size_per_vp_stage`, the Llama 3 paper's N): from pp to the micro-batches, which it "
              "divides or leaves a remainder of at least pp",
       .set = Training<&TrainingSpec::pp_microbatch_group>::set,
       .get = [](const Scenario& s, double) -> Got {
         const TrainingSpec& t = *s.training;
         return t.virtual_stages > 1 ? Got(KeyValue{long{t.microbatch_group()}}) : Got();
       }},
      {.key = "hsdp_shard", .type = KeyType::integer, .lower = 1, .upper = 1 << 20,
       .derived = "the parameter replicas on one node",
       .doc = "HSDP: data-parallel ranks that shard the model (divides dp x cp); read under every strategy",
       .set = Training<&TrainingSpec::hsdp_shard>::set, .get = Training<&TrainingSpec::hsdp_shard>::get},
      {.key = "diloco_islands", .type = KeyType::integer, .lower = 1, .upper = 1 << 20, .fallback = KeyValue{8L},
       .doc = "DiLoCo: islands, each an FSDP group (divides dp x cp)",
       .set = Training<&TrainingSpec::diloco_islands>::set, .get = Training<&TrainingSpec::diloco_islands>::get},
      {.key = "diloco_sync_every", .type = KeyType::integer, .lower = 1, .upper = 1L << 30, .fallback = KeyValue{500L},
       .doc = "DiLoCo: inner steps per outer step (fp32 all-reduce across islands, amortised)",
       .set = Training<&TrainingSpec::diloco_sync_every>::set, .get = Training<&TrainingSpec::diloco_sync_every>::get},
  };
}

std::vector<Key> training_keys() {
  return {
      {.key = "seq_len", .type = KeyType::integer, .lower = 1, .upper = 1 << 24, .fallback = KeyValue{4096L},
       .doc = "tokens per sequence", .set = Training<&TrainingSpec::seq_len>::set,
       .get = Training<&TrainingSpec::seq_len>::get},
      {.key = "global_batch", .type = KeyType::integer, .lower = 1, .upper = (1L << 31) - 1,
       .derived = "`local_batch` x dp", .doc = "sequences per iteration, all replicas together (divisible by dp)",
       .get = Training<&TrainingSpec::global_batch>::get},
      {.key = "local_batch", .type = KeyType::integer, .lower = 1, .upper = 1L << 30, .fallback = KeyValue{2L},
       .doc = "sequences per data-parallel replica (give this or `global_batch`)"},
      {.key = "activation_checkpointing", .type = KeyType::choice, .fallback = text("none"),
       .names = names_of({Recompute::none, Recompute::selective, Recompute::selective_op, Recompute::mla_up_proj,
                          Recompute::full}),
       .boolean_names = {"none", "full"},
       .doc = "`selective`: the attention core replayed; `selective_op`: torchtitan's; `mla_up_proj`: Megatron's "
              "module of that name (MLA models); `full`: a layer keeps only its input (`true` reads as `full`, "
              "`false` as `none`)",
       .set = KeyEnum<parse_recompute, &Scenario::training, &TrainingSpec::recompute>::set,
       .get = KeyEnum<parse_recompute, &Scenario::training, &TrainingSpec::recompute>::get},
      {.key = "warmup_iterations", .type = KeyType::integer, .lower = 0, .upper = 100, .fallback = KeyValue{0L},
       .doc = "iterations simulated before the measured one (no state carries over: 0 suffices)",
       .set = Training<&TrainingSpec::warmup_iterations>::set, .get = Training<&TrainingSpec::warmup_iterations>::get},
      {.key = "framework", .type = KeyType::choice, .fallback = text("fused"), .names = model::framework_names(),
       .doc = "whose kernels a step runs and how its host issues them (model/framework_recipe.hpp; host "
              "costs per op in calibration/frameworks.toml; `commbound profile` lists the kernels)",
       .set = KeyEnum<model::parse_framework, &Scenario::training, &TrainingSpec::framework>::set,
       .get = KeyEnum<model::parse_framework, &Scenario::training, &TrainingSpec::framework>::get},
      {.key = "adamw", .type = KeyType::choice, .fallback = text("auto"), .names = {"auto", "foreach", "fused"},
       .doc = "the optimizer's kernels: `foreach` (torch.optim.AdamW's default on CUDA: one multi-tensor kernel per "
              "_foreach op, after clip_grad_norm_'s foreach norm), `fused` (one AdamW kernel, `fused=True`, "
              "torchtitan's and Megatron's); `auto`: foreach under `pytorch-eager`, else fused",
       .set = [](Scenario& s, const KeyValue& v, double) {
         const std::string& name = text_of(v);
         s.training->adamw_foreach = name == "auto" ? std::nullopt : std::optional<bool>(name == "foreach");
       },
       .get = [](const Scenario& s, double) -> Got {
         const auto& f = s.training->adamw_foreach;
         return text(!f ? "auto" : *f ? "foreach" : "fused");
       }},
      {.key = "cross_entropy", .type = KeyType::choice, .fallback = text("auto"),
       .names = {"auto", "log-softmax", "vocab-parallel", "te"},
       .doc = "how the loss holds the logits, for the memory model: `log-softmax` (PyTorch's on the fp32 logits: "
              "3 fp32 copies), `vocab-parallel` (Megatron-Core's: one fp32 copy, gradient in place), `te` "
              "(Transformer Engine's fused kernel, Megatron-Core's `cross_entropy_fusion_impl = \"te\"`: the "
              "gradient written over the bf16 logits); `auto`: vocab-parallel under `megatron-te`, else log-softmax",
       .set = KeyAutoEnum<model::parse_cross_entropy, &Scenario::training, &TrainingSpec::cross_entropy_choice>::set,
       .get = KeyAutoEnum<model::parse_cross_entropy, &Scenario::training, &TrainingSpec::cross_entropy_choice>::get},
      {.key = "precision", .type = KeyType::choice, .fallback = text("bf16"), .names = {"bf16", "fp8"},
       .doc = "the layers' matrix products in bf16 or fp8 (Transformer Engine's casts added; FP8 GEMMs priced as the "
              "bf16 rows x the table's FP8 / bf16 time ratio measured at the nearest shape, `[[gemm_fp8]]`, else x "
              "the datasheet's bf16 / fp8 peak, derived)",
       .set = KeyEnum<model::parse_precision, &Scenario::training, &TrainingSpec::precision>::set,
       .get = KeyEnum<model::parse_precision, &Scenario::training, &TrainingSpec::precision>::get},
      {.key = "grad_reduce_dtype", .type = KeyType::choice, .derived = "`fp32` at `zero_stage` 1, else `bf16`",
       .names = {"fp32", "bf16"},
       .doc = "the data-parallel gradient reduction (FSDP, ZeRO-1) and the gradient buffer it reads: Megatron's "
              "`grad_reduce_in_fp32` (fp32: twice the bytes and the ZeRO-1 buffer); PyTorch FSDP's `reduce_dtype`",
       .set = [](Scenario& s, const KeyValue& v, double) { s.training->grad_reduce_fp32 = text_of(v) == "fp32"; },
       .get = [](const Scenario& s, double) -> Got { return text(s.training->grad_reduce_fp32 ? "fp32" : "bf16"); }},
      {.key = "optimizer_dtype", .type = KeyType::choice, .fallback = text("fp32"), .names = {"fp32", "bf16"},
       .doc = "the optimizer's state: fp32 master weights and Adam moments, or bf16 moments and no master copy "
              "(Apex's distributed_fused_adam with dtype=bf16, NeMo 1.0's Megatron recipes; `zero_stage` 1 only)",
       .set = [](Scenario& s, const KeyValue& v, double) { s.training->optimizer_state_bf16 = text_of(v) == "bf16"; },
       .get = [](const Scenario& s, double) -> Got { return text(s.training->optimizer_state_bf16 ? "bf16" : "fp32"); }},
      {.key = "attention_kernel", .type = KeyType::choice, .derived = "`cudnn` under `megatron-te`; under `pytorch-eager` and `pytorch-compile` what PyTorch's SDPA "
                   "tries first: `cudnn` on compute capability 9.0, 10.0 and 10.3 (H100, B200), else `flash2` from "
                   "compute capability 8.0 (A100; not V100), where the table has such rows; else `commbound`",
       .names = {"commbound", "cudnn", "flash2"},
       .doc = "which `[[attention]]` rows of the kernel table price attention: our kernel, cuDNN's (Transformer "
              "Engine's) or FlashAttention-2 (PyTorch SDPA's flash backend)",
       .set = Training<&TrainingSpec::attention_kernel>::set, .get = Training<&TrainingSpec::attention_kernel>::get},
      {.key = "micro_batch", .type = KeyType::integer, .lower = 1, .upper = 1L << 30,
       .derived = "the whole local batch", .doc = "sequences per forward/backward pass (divides the local batch)",
       .get = Training<&TrainingSpec::micro_batch>::get},
  };
}

std::vector<Key> moe_keys() {
  using moe::RoutingKind;
  return {
      {.key = "routing", .type = KeyType::choice, .fallback = text("uniform"),
       .names = names_of({RoutingKind::uniform, RoutingKind::zipf, RoutingKind::histogram}),
       .doc = "how the router spreads tokens over the routed experts: evenly, Zipf(`zipf_s`) over a seeded order of "
              "the experts per layer, or a `histogram` file of loads a real router logged",
       .set = KeyEnum<moe::parse_routing_kind, &Scenario::training, &TrainingSpec::routing, &moe::Routing::kind>::set,
       .get = KeyEnum<moe::parse_routing_kind, &Scenario::training, &TrainingSpec::routing, &moe::Routing::kind>::get},
      {.key = "zipf_s", .type = KeyType::number, .lower = 0, .upper = 100, .fallback = KeyValue{1.0},
       .doc = "Zipf routing: the i-th most popular expert's share is proportional to 1 / i^s",
       .set = KeyField<&Scenario::training, &TrainingSpec::routing, &moe::Routing::zipf_s>::set,
       .get = KeyField<&Scenario::training, &TrainingSpec::routing, &moe::Routing::zipf_s>::get},
      {.key = "histogram", .type = KeyType::string, .fallback = text(""),
       .doc = "histogram routing: a file of one load per routed expert, one per line, `#` comments (relative to the "
              "scenario file's folder)",
       .set = Training<&TrainingSpec::routing_histogram>::set,
       .get = [](const Scenario& s, double) -> Got {
         return s.training->routing_histogram.empty() ? Got() : Got(KeyValue{s.training->routing_histogram});
       }},
      {.key = "capacity_factor", .type = KeyType::number, .lower = 0, .upper = 1e6, .fallback = KeyValue{0.0},
       .doc = "tokens an expert takes from a rank, over an even share, before the rest are dropped; 0: dropless",
       .set = KeyField<&Scenario::training, &TrainingSpec::routing, &moe::Routing::capacity_factor>::set,
       .get = KeyField<&Scenario::training, &TrainingSpec::routing, &moe::Routing::capacity_factor>::get},
      {.key = "pad_to_capacity", .type = KeyType::boolean, .fallback = KeyValue{false},
       .doc = "with a `capacity_factor`, every expert slot padded to its capacity (Megatron-Core's "
              "`moe_pad_expert_input_to_capacity`): each rank sends and each expert computes exactly the capacity",
       .set = KeyField<&Scenario::training, &TrainingSpec::routing, &moe::Routing::pad_to_capacity>::set,
       .get = KeyField<&Scenario::training, &TrainingSpec::routing, &moe::Routing::pad_to_capacity>::get},
      {.key = "seed", .type = KeyType::integer, .lower = 0, .upper = 1L << 62, .fallback = KeyValue{0L},
       .doc = "which experts are popular in which layer (Zipf routing); the same seed, the same result",
       .set = KeyField<&Scenario::training, &TrainingSpec::routing, &moe::Routing::seed>::set,
       .get = KeyField<&Scenario::training, &TrainingSpec::routing, &moe::Routing::seed>::get},
      {.key = "dispatcher", .type = KeyType::choice, .fallback = text("nccl"),
       .names = names_of({network::AllToAllMethod::nccl, network::AllToAllMethod::hierarchical}),
       .doc = "the token all-to-all: NCCL's send/recv to every peer, or `hierarchical` (one RDMA transfer per node "
              "pair and rail, then NVLink inside the node, as DeepEP's normal kernels)",
       .set = KeyEnum<network::parse_all_to_all_method, &Scenario::training, &TrainingSpec::dispatcher>::set,
       .get = KeyEnum<network::parse_all_to_all_method, &Scenario::training, &TrainingSpec::dispatcher>::get},
      {.key = "probs", .type = KeyType::choice, .fallback = text("auto"), .names = {"auto", "output", "activation"},
       .doc = "where the router's probabilities weigh each routed token, for the memory model: `output` (the experts' "
              "output at the unpermute, which is kept for their gradient: Megatron-Core up to 0.12, torchtitan), "
              "`activation` (inside the experts' activation: Megatron-Core from 0.13); `auto`: activation under "
              "`megatron-te`, else output",
       .set = KeyAutoEnum<model::parse_moe_probs, &Scenario::training, &TrainingSpec::moe_probs_choice>::set,
       .get = KeyAutoEnum<model::parse_moe_probs, &Scenario::training, &TrainingSpec::moe_probs_choice>::get},
      {.key = "shared_expert_overlap", .type = KeyType::boolean, .fallback = KeyValue{false},
       .doc = "the shared experts compute beside the dispatch all-to-all (Megatron-Core's "
              "`moe_shared_expert_overlap`), forward and backward; off: after the routed experts",
       .set = Training<&TrainingSpec::shared_expert_overlap>::set,
       .get = Training<&TrainingSpec::shared_expert_overlap>::get},
  };
}

std::vector<Key> train_keys() {
  return {
      {.key = "tokens", .type = KeyType::number, .lower = 0, .upper = 1e18, .fallback = KeyValue{0.0},
       .doc = "tokens to train (`commbound train --tokens` sets it); 0: unset",
       .set = KeyField<&Scenario::train, &TrainPlan::tokens>::set, .get = KeyField<&Scenario::train, &TrainPlan::tokens>::get},
      {.key = "checkpoint_interval_s", .type = KeyType::number, .lower = 0, .upper = 1e9, .fallback = KeyValue{0.0},
       .doc = "training time between checkpoints; 0: Daly's optimal interval for the failure rate and checkpoint cost",
       .set = KeyField<&Scenario::train, &TrainPlan::checkpoint_interval_s>::set,
       .get = KeyField<&Scenario::train, &TrainPlan::checkpoint_interval_s>::get},
      {.key = "storage_TBps", .type = KeyType::number, .si_per_unit = 1e12, .lower = 1e-6, .upper = 1e6,
       .fallback = KeyValue{2.0},
       .doc = "checkpoint writes and reads, the whole job's; default Llama 3's storage, 2 TB/s sustained",
       .set = KeyField<&Scenario::train, &TrainPlan::storage_bytes_per_s>::set,
       .get = KeyField<&Scenario::train, &TrainPlan::storage_bytes_per_s>::get},
      {.key = "checkpoint_bytes_per_parameter", .type = KeyType::number, .lower = 0, .upper = 1e3, .fallback = KeyValue{14.0},
       .doc = "a checkpoint's size per model parameter; default mixed-precision AdamW's bf16 weights, fp32 master "
              "weights and two fp32 moments",
       .set = KeyField<&Scenario::train, &TrainPlan::checkpoint_bytes_per_parameter>::set,
       .get = KeyField<&Scenario::train, &TrainPlan::checkpoint_bytes_per_parameter>::get},
      {.key = "restart_s", .type = KeyType::number, .lower = 0, .upper = 1e7, .fallback = KeyValue{kRestartGuessS},
       .doc = "after each interruption, before the checkpoint is read (rescheduling, start-up, warm-up); the default, "
              "600, is a guess (no public figure at scale)",
       .set = KeyField<&Scenario::train, &TrainPlan::restart_s>::set,
       .get = KeyField<&Scenario::train, &TrainPlan::restart_s>::get},
      {.key = "gpu_failures_per_gpu_hour", .type = KeyType::number, .lower = 0, .upper = 1, .fallback = KeyValue{kLlama3GpuFailuresPerGpuHour},
       .doc = "interruptions a GPU causes (GPU, HBM, SRAM, system processor); default the Llama 3 run's: 256 in 1296 h "
              "on 16384 GPUs",
       .set = KeyField<&Scenario::train, &TrainPlan::gpu_failures_per_gpu_hour>::set,
       .get = KeyField<&Scenario::train, &TrainPlan::gpu_failures_per_gpu_hour>::get},
      {.key = "node_failures_per_node_hour", .type = KeyType::number, .lower = 0, .upper = 1,
       .fallback = KeyValue{kLlama3NodeFailuresPerNodeHour},
       .doc = "every other interruption, per node (switches and cables, software, host, NIC, storage, planned "
              "maintenance); default the Llama 3 run's: 210 in 1296 h on 2048 nodes",
       .set = KeyField<&Scenario::train, &TrainPlan::node_failures_per_node_hour>::set,
       .get = KeyField<&Scenario::train, &TrainPlan::node_failures_per_node_hour>::get},
      {.key = "seed", .type = KeyType::integer, .lower = 0, .upper = 1L << 62, .fallback = KeyValue{1L},
       .doc = "the Monte Carlo's failure draws; the same seed, the same result",
       .set = KeyField<&Scenario::train, &TrainPlan::seed>::set, .get = KeyField<&Scenario::train, &TrainPlan::seed>::get},
      {.key = "trials", .type = KeyType::integer, .lower = 1, .upper = 1000000, .fallback = KeyValue{2000L},
       .doc = "Monte Carlo runs of the whole training",
       .set = KeyField<&Scenario::train, &TrainPlan::trials>::set, .get = KeyField<&Scenario::train, &TrainPlan::trials>::get},
  };
}

}  // namespace

const std::vector<ScenarioSection>& scenario_sections() {
  static const std::vector<ScenarioSection> sections = {
      {"", false, top_keys()},
      {"cluster", false, cluster_keys()},
      {"fabric", false, fabric_keys()},
      {"nccl", false, nccl_keys()},
      {"parallel", true, parallel_keys()},
      {"training", true, training_keys()},
      {"moe", true, moe_keys()},
      {"train", true, train_keys()},
  };
  return sections;
}

const ScenarioSection& scenario_section(const std::string& name) {
  for (const ScenarioSection& s : scenario_sections()) {
    if (name == s.name) return s;
  }
  COMMBOUND_CHECK(false, "scenario_section() of a section the schema does not have");
  return scenario_sections().front();
}

const KeySpec<Scenario>* find_scenario_key(const std::string& key) {
  const auto dot = key.rfind('.');
  const std::string section = dot == std::string::npos ? "" : key.substr(0, dot);
  const std::string name = dot == std::string::npos ? key : key.substr(dot + 1);
  for (const ScenarioSection& s : scenario_sections()) {
    if (section != s.name) continue;
    for (const KeySpec<Scenario>& k : s.keys) {
      if (name == k.key) return &k;
    }
  }
  return nullptr;
}

std::string scenario_keys_markdown() {
  std::string out;
  auto section = [&](const std::string& title, const std::vector<KeyRow>& rows) {
    out += "## " + title + "\n" + keys_markdown(rows) + "\n";
  };
  for (const ScenarioSection& s : scenario_sections()) {
    const std::string prefix = std::string(s.name).empty() ? "" : std::string(s.name) + ".";
    section(std::string(s.name).empty() ? "Top level" : "[" + std::string(s.name) + "]",
            key_rows(s.keys, prefix));
    if (std::string(s.name) == "cluster") section("[cluster.node]", key_rows(node_keys(), "cluster.node."));
    if (std::string(s.name) == "fabric") section("[fabric.link]", key_rows(link_keys(), "fabric.link."));
    if (std::string(s.name) == "nccl") section("[model]", key_rows(model::model_keys(), "model."));
  }
  return out;
}

}  // namespace commbound::sim
