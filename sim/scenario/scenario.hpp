// Scenario: one validated scenario file (plus --set overrides), in SI units.
//
// Sections: [cluster], [fabric], [nccl] (the hardware and NCCL); [model], [training], [parallel]
// (a training iteration, optional: present together); [workload] (replay a profiler trace,
// with a [model]); [sweep] (one key over a list of values); or, instead of [model], [[job]] tables:
// several training jobs sharing the cluster, each with its nodes and its own [job.model],
// [job.training], [job.parallel] and [job.moe].
// Every problem is reported as "file:line: key = value: reason" (or "--set key=value: ...").
#pragma once

#include "network/cluster_spec.hpp"
#include "network/collective.hpp"
#include "core/expected.hpp"
#include "network/nccl_constants.hpp"
#include "calibration/table/kernel_table.hpp"
#include "core/key_table.hpp"
#include "sim/scenario/job_placement.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/train_plan.hpp"
#include "sim/scenario/training.hpp"

#include <toml++/toml.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

struct NcclOptions {
  std::optional<network::Algorithm> algorithm;  // NCCL_ALGO; unset: NCCL's tuner decides
  std::optional<network::Protocol> protocol;    // NCCL_PROTO; unset: NCCL's tuner decides
  network::Fidelity fidelity = network::Fidelity::fluid;
  bool jitter = true;  // run-to-run compute variability and the wait for the slowest rank (engine.hpp)
};

// [sweep]: `commbound run` repeats the scenario with `key` set to each value, typed as the file
// wrote it. `key` may list several keys; each value is then an array with one entry per key.
struct Sweep {
  std::vector<std::string> keys;
  std::vector<toml::array> values;  // per point: one value per key
  std::vector<std::string> names;   // per point: "key=value key=value", the row's name
};

// [workload]: replay a PyTorch profiler trace of one rank instead of building the model's program
// (sim/trace/, docs/traces.md). [model] still gives the FLOPs (MFU) and the memory model.
struct TraceWorkload {
  std::string path;          // the trace file (.json or .json.gz), absolute (given relative to the scenario file's folder)
  std::string origin;        // "file:line" of workload.trace (errors about the trace and its groups name it)
  std::optional<long> step;  // ProfilerStep#N to replay; unset: the trace's first
  bool simulate_collectives = true;  // collectives = "simulate" (on the fabric) | "measured" (traced durations)
  // [workload.groups]: a trace process group (its "Process Group Name" or "Process Group
  // Description") -> the layout's group kind by name ("data_parallel", "tensor_parallel", ...,
  // checked where the trace is built), with the entry's "file:line".
  struct Group {
    std::string trace_group;
    std::string kind;
    std::string origin;
  };
  std::vector<Group> groups;
};

// [[job]]: one of several training jobs that share the cluster (sim/run/cluster_run.hpp).
struct Job {
  std::string name;
  std::string origin;     // "file:line" of its [[job]] table
  NodeList nodes;         // the cluster's nodes it runs on, in its own node order (job_placement.hpp)
  TrainingSpec training;  // its [job.model], [job.training], [job.parallel], [job.moe] on its nodes
};

// [[degraded]]: a GPU or a NIC of the cluster that keeps only part of its speed (a GPU at a
// lowered clock or power limit, a link at a reduced rate). NICs are applied to
// cluster.fabric.degraded_nics; GPUs to the job that runs on them (engine.hpp: its stage computes
// at its slowest GPU's pace). An iteration runs with every part degraded; a whole run (`commbound
// train`) only within each part's window, in hours of its failure-free timeline
// (sim/train/degraded_windows.hpp).
struct DegradedPart {
  enum class Kind { gpu, nic };
  Kind kind = Kind::gpu;
  int node = 0;                // the cluster's node
  int index = 0;               // the GPU or NIC of that node
  double speed_fraction = 1;   // of its full speed, in (0, 1]
  double from_hour = 0;        // the window's start
  double hours = 0;            // the window's length; 0: to the end of the run
  std::string origin;          // "file:line" of its [[degraded]] table
};


struct Scenario {
  std::string path;
  std::string description;
  network::ClusterSpec cluster;
  network::NcclConstants nccl;
  NcclOptions nccl_options;
  std::optional<TrainingSpec> training;
  std::optional<TraceWorkload> workload;
  // [cluster] kernel_table: the calibration table that prices compute, or null for the datasheet
  // roofline, with the reason in `roofline_reason` ("kernel_table = \"roofline\"", or the
  // missing calibration/<gpu>.toml of "auto").
  std::shared_ptr<const calibration::KernelTable> kernel_table;
  std::string roofline_reason;
  std::string kernel_table_setting = "auto";  // [cluster] kernel_table as given: "auto", "roofline" or a file
  std::optional<Sweep> sweep;
  // [[job]] tables: several jobs on this cluster, each on its own nodes (then `training` is unset).
  std::vector<Job> jobs;
  std::vector<DegradedPart> degraded;  // [[degraded]] tables, in file order
  TrainPlan train;                     // [train]: a whole run's tokens, failures and checkpoints
};

// Makes `parts` the scenario's degraded parts, its NICs' rates (cluster.fabric.degraded_nics)
// rebuilt from them: what the file's [[degraded]] tables set, and `commbound train` for a phase.
void set_degraded(Scenario& sc, std::vector<DegradedPart> parts);

// One key set to a typed value, in the unit the file writes it ("parallel.tp" = 2L,
// "training.activation_checkpointing" = "full"): how a program changes a scenario, with no text to
// format and parse. Validated like the file's own keys (scenario_schema.hpp).
struct ScenarioEdit {
  std::string key;
  KeyValue value;
};

// A scenario file read once, and the points of its [sweep] built from it: each point applies its
// values to the parsed document (typed, as the file wrote them) and validates the result, reusing
// the kernel table already read. Cheap to copy (the parsed document is shared).
class ScenarioFile {
public:
  // Reads `path`, applies `overrides` ("a.b=value", value in TOML syntax or a bare string) and
  // validates the result (the file as written, with its [sweep] unapplied).
  static Expected<ScenarioFile> load(const std::string& path, const std::vector<std::string>& overrides,
                                     const Presets& presets);

  const Scenario& scenario() const { return base_; }
  // Points of the [sweep] (1 without one), and the row name of point `i`.
  std::size_t points() const;
  std::string point_name(std::size_t i) const;
  // The scenario of point `i`: its sweep values set, then `overrides`, validated. Errors name the
  // [sweep] value's file and line.
  Expected<Scenario> point(std::size_t i, const std::vector<std::string>& overrides = {}) const;
  // The file as written (with its --set), its [sweep] not applied, with `edits` applied and
  // validated by the same schema and rules as the file (a layout search's candidates). Errors
  // about an edited key name `origin` where a file would name its line.
  Expected<Scenario> unswept(const std::vector<ScenarioEdit>& edits, const std::string& origin) const;
  // Where the file (or a --set) gives dotted `key` ("file:line", or "--set key=value"); empty when
  // neither does.
  std::string origin(const std::string& key) const;

private:
  struct State;
  // Validates the parsed document with [sweep] point `i`'s values set (when `apply_sweep`), then `overrides`.
  Expected<Scenario> resolve_with(const std::vector<std::string>& overrides, bool apply_sweep, std::size_t i) const;
  ScenarioFile(std::shared_ptr<State> state, Scenario base);
  std::shared_ptr<State> state_;
  Scenario base_;
};

// ScenarioFile::load(path, overrides, presets).scenario().
Expected<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                                 const Presets& presets);

}  // namespace commbound::sim
