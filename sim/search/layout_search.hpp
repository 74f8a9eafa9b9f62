// LayoutSearch: the fastest (or most energy-efficient) parallel layout of a scenario's model on its
// cluster, as `commbound search` prints it.
//
// Every candidate layout (tensor, context and pipeline parallel degrees, interleaved virtual
// stages, micro-batch, data-parallel strategy, activation checkpointing; the global batch fixed) is
// validated by the scenario's own rules (an invalid one keeps the line that says why), checked
// against GPU memory by the memory model (an out-of-memory one keeps its breakdown), and bounded
// without simulation (iteration_bound.hpp): first by its compute alone (cheap), then, when that
// does not already rule it out, by replaying its iteration with every collective at its floor
// (compute, pipeline bubble and the communication no schedule hides at the fabric's full rate).
// Layouts are simulated in child processes, best bound first (the replay run lazily: only for
// layouts whose compute bound tops every replayed bound left); a layout whose bound is already
// worse than the k-th best simulated one cannot enter the top k and is pruned. The top k are
// therefore exactly those an exhaustive search would rank first (ties aside); only the count of
// pruned layouts depends on -j (the order in which results arrive).
#pragma once

#include "core/expected.hpp"
#include "sim/engine/iteration_bound.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/scenario/scenario.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

// The data-parallel strategy of a layout: DDP, Megatron's distributed optimizer (ZeRO-1), FSDP
// with ZeRO-2 or ZeRO-3, HSDP (ZeRO-2 inside the shard group, replicas across; shard = the
// parameter replicas on one node unless the scenario sets parallel.hsdp_shard).
enum class DataParallel { ddp, zero1, zero2, zero3, hsdp };
const char* to_string(DataParallel d);
// "ddp", "zero1", "zero2", "zero3", "hsdp"
std::optional<DataParallel> parse_data_parallel(const std::string& name);

// One candidate layout. dp is what the cluster leaves: GPUs / (tp x cp x pp).
struct LayoutChoice {
  int tp = 1, cp = 1, pp = 1, virtual_stages = 1, dp = 1, micro_batch = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  // A mixture of experts: its expert parallelism (and sequence parallelism beside tp > 1, which
  // Megatron-Core requires of an MoE model); 0 for a dense model, whose layouts leave both alone.
  int ep = 0;
  DataParallel strategy = DataParallel::zero2;
  Recompute recompute = Recompute::none;  // [training] activation_checkpointing
  // Set only when the search varies them: [parallel] cp_comm (cp > 1) and tp_overlap (tp > 1,
  // with sequence parallelism, which it needs); unset, the scenario's own stand.
  std::optional<CpComm> cp_comm;
  std::optional<bool> tp_overlap;
  // A pipeline whose first and last virtual stages carry one layer fewer than the others, room for
  // the embedding and the loss (the Llama 3 paper's split, set as a pp_layout): every other
  // virtual stage's layers; 0: the even split.
  int ends_lighter_chunk_layers = 0;
  // The scenario keys that set it, as typed edits.
  std::vector<ScenarioEdit> edits() const;
  // "tp2 cp1 pp4 v2 dp32 mb2 zero3 ckpt" (" ckpt" for full recompute, " selective" and the like
  // for the others, nothing without; " ep8" after dp for an MoE model; " zb-h1" after v for a
  // zero-bubble pipeline; " ends-1" for lighter first and last stages; " cp-all_gather" and the
  // like, " tp-overlap", when the search sets them).
  std::string name() const;
};

// Which layouts to consider. A limit of 0 takes its default.
struct SearchSpace {
  int max_tp = 0;               // default: the GPUs of a node
  int max_cp = 0;               // default: the GPUs of a node
  int max_model_parallel = 0;   // tp x cp at most this; default: the larger of max_tp, max_cp
  int min_pp = 1;
  int max_pp = 0;               // default: 16
  int max_virtual_stages = 0;   // default: 4
  int max_micro_batch = 0;      // default: 8
  int max_ep = 0;               // MoE: expert parallelism at most this; default: the routed experts
  std::vector<DataParallel> strategies = {DataParallel::ddp, DataParallel::zero2, DataParallel::zero3,
                                          DataParallel::hsdp};
  // Activation recompute, as [training] activation_checkpointing names it: none and full.
  std::vector<Recompute> recompute = {Recompute::none, Recompute::full};
  // Context-parallel exchanges for layouts with cp > 1, tensor-parallel comm-GEMM overlap off/on
  // for layouts with tp > 1; empty (the default): the scenario's own.
  std::vector<CpComm> cp_comms;
  std::vector<bool> tp_overlap;
  // Pipeline schedules of a pipelined (pp > 1) dense model: 1F1B (plain and interleaved) and
  // ZB-H1 (one chunk per stage).
  std::vector<PipelineSchedule> schedules = {PipelineSchedule::one_f_one_b, PipelineSchedule::zb_h1};
  // Pipelines also with their first and last stage one layer lighter (LayoutChoice), when asked:
  // off by default, as they make pp 2-4 layouts of large models with thousands of data-parallel
  // ranks fit, each minutes to simulate.
  bool ends_lighter = false;
};
inline constexpr int kDefaultMaxPp = 16;
inline constexpr int kDefaultMaxVirtualStages = 4;
inline constexpr int kDefaultMaxMicroBatch = 8;

// Every candidate of `space` for `gpus` GPUs in nodes of `gpus_per_node` and `global_batch`
// sequences, in this order (outermost first): tp over the divisors of gpus up to max_tp; cp over
// the divisors of gpus / tp up to max_cp, with tp x cp <= max_model_parallel; pp over the divisors
// of gpus / (tp x cp) from min_pp up to max_pp; virtual stages 1 (pp = 1) or the powers of two up to
// max_virtual_stages (1F1B), and ZB-H1 beside plain 1F1B for a dense model (the schedules asked
// for; a layout without a pipeline has none); micro-batch over the divisors of global_batch / dp up to max_micro_batch (1
// alone when dp does not divide the global batch: validation then says why); the strategies; the
// recompute modes; then the cp exchanges (cp > 1) and tp overlaps (tp > 1) asked for. Nothing else
// is filtered here: the scenario's validation judges the rest. With space.ends_lighter and
// `layers` (a model without multi-token prediction), each 1F1B pipeline of pp x v virtual stages that divide layers + 2 in
// at least 2 a stage also comes with its first and last stage one layer lighter, right after the
// even split.
std::vector<LayoutChoice> enumerate_layouts(int gpus, int gpus_per_node, int global_batch, const SearchSpace& space,
                                            int experts = 0, int layers = 0);

enum class Objective { tokens_per_s, tokens_per_joule };
double objective_of(const Metrics& m, Objective objective);

enum class Verdict { simulated, pruned, out_of_memory, invalid };
const char* to_string(Verdict v);

struct Candidate {
  LayoutChoice layout;
  Verdict verdict = Verdict::invalid;
  // invalid: the validation's line; out_of_memory: "needs 93.1 GB of 80.0 GB"; pruned: its bound
  // against the k-th best when it was skipped; simulated: empty.
  std::string reason;
  MemoryUse memory;                  // valid layouts
  // Layouts that fit: compute_only_bound, replaced by iteration_lower_bound (compute, bubble and
  // communication at its floor) when the search got that far (`replayed`), and the objective's
  // upper bound from it.
  IterationBound bound;
  bool replayed = false;
  double objective_bound = 0;
  std::optional<Metrics> metrics;    // simulated layouts
};

struct SearchOptions {
  SearchSpace space;
  Objective objective = Objective::tokens_per_s;
  int top = 10;        // layouts ranked exactly (the k of "cannot enter the top k")
  int jobs = 1;        // child processes at once
  bool prune = true;   // false: simulate every layout that fits (exhaustive)
  // Called before each layout is validated, fitted and bounded: how many are done, of how many.
  std::function<void(std::size_t done, std::size_t total)> bounding;
  // Called once every candidate is validated, fitted and bounded, before any simulation.
  std::function<void(const std::vector<Candidate>& candidates)> bounded;
  // Called in the parent after each simulated layout: `simulated` and `pruned` so far, of `fits`.
  std::function<void(std::size_t simulated, std::size_t pruned, std::size_t fits, const Candidate& last)> progress;
};

struct SearchResult {
  // Simulated layouts best first, then pruned (best bound first), out of memory, invalid.
  std::vector<Candidate> candidates;
  // The k-th best simulated objective when the search ended (what every pruned bound is below).
  double kth_best = 0;
};

// Searches the layouts of `file` (its [model] on its cluster; [training] global_batch fixed, its
// [sweep] not applied). Fails when the file has no [model], gives local_batch instead of
// global_batch, or a simulation fails.
Expected<SearchResult> search_layouts(const ScenarioFile& file, const SearchOptions& options);

// Why simulated `m` lost to `best`: the larger of its extra exposed communication ("exposed
// communication"), its extra time neither computing nor communicating ("pipeline bubble": the
// schedule's idle time and waits for the slowest rank) and its extra compute ("compute":
// recomputation, smaller kernels), each per iteration.
std::string loss_reason(const Metrics& m, const Metrics& best);

}  // namespace commbound::sim
