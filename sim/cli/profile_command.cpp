// commbound profile: what one GPU computes for one micro-batch of the scenario's training, kernel
// by kernel, as its framework runs it.
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/engine/compute_profile.hpp"
#include "sim/run/training_run.hpp"
#include "sim/report/output.hpp"
#include "sim/report/profile_report.hpp"

#include <fmt/format.h>

#include <memory>

namespace commbound::cli {
namespace {

const char* kProfileDescription = R"(Lists what one GPU computes for one micro-batch of the scenario's [training] at its layout
(tp, cp, micro_batch, seq_len), as [training] framework runs it: "fused" (our own kernels back to
back), "pytorch-eager" (PyTorch's separate elementwise kernels and autograd's backward of each),
"pytorch-compile" (Inductor's fused kernels) or "megatron-te" (Transformer Engine's fused kernels,
cuDNN attention). Each kernel: its shape, the bytes it moves, its FLOPs, its price from the
calibration table and how it was found (exact row, nearest row's rate, roofline), and the host
time its framework takes to issue it (calibration/frameworks.toml).

Each part runs alone, as a benchmark times it with CUDA events, call after call: one host thread
issues the part's ops in order; a kernel starts once issued and once the previous one ended. A
part whose kernels are shorter than their issue time is bound by its host (eager small shards).
Called back to back, a part holds the board at its power limit: its GEMMs and attention are slowed
by the table's measured curve at the part's share of compute-bound time (column "power limit").
The table shows the first decoder layer's kernels (forward, backward, recompute), and the first
MoE layer's (moe_layer.*) where the model's first layers are dense, then every part's totals;
--format csv or json lists every kernel of every part. An MoE layer's experts are priced at the
busiest rank of the expert-parallel group (the local experts in batches by tokens, "xN": N GEMMs
of that shape). No communication is included: `commbound run` simulates the whole iteration,
the all-to-alls too.
)";

struct ProfileArgs {
  ScenarioArgs scenario;
  sim::Format format = sim::Format::table;
  std::string out;
  bool force = false;
};

int profile(const ProfileArgs& args) {
  auto file = load(args.scenario);
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  if (!sc.training) return fail(sc.path + ": profile needs a [model] section (and optionally [training], [parallel])");
  if (file->points() > 1) {
    return fail(sc.path + ": profile needs one point: the [sweep] has " + std::to_string(file->points()) +
                "; pick one with --set 'sweep.values=[...]'");
  }
  if (Status ok = sim::check_outputs({{"--out", args.out}}, {{"scenario", args.scenario.scenario}}, args.force); !ok) {
    return fail(ok.error().message);
  }
  const sim::TrainingSpec& t = *sc.training;
  const sim::CostModel cost = sim::cost_model(sc);
  const sim::ComputeProfile profile = sim::profile_compute(t, cost);
  const std::string title = fmt::format(
      "# commbound profile: {}: {}, framework {}, tp {}, cp {}, micro-batch {}, seq {}\n# compute {}; host {}", sc.path,
      t.model.name, model::to_string(t.framework), t.tp, t.cp, t.micro_batch, t.seq_len, cost.describe(),
      t.host.source.empty() ? std::string("not modelled") : t.host.source);
  Status written = sim::write_output(args.out, args.force,
                                     [&](std::ostream& o) { sim::write_profile(o, profile, args.format, title); });
  if (!written) return fail(written.error().message);
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "what one GPU computes for one micro-batch, kernel by kernel, as the scenario's framework runs it");
  add_scenario_args(*cmd, args->scenario);
  add_format_option(*cmd, args->format, report_formats());
  cmd->add_option("--out", args->out, "write there instead of standard output (never overwrites without --force)")
      ->type_name("FILE");
  cmd->add_flag("--force", args->force, "allow --out to replace an existing file");
  cmd->footer(std::string(kProfileDescription) + R"(
Examples:
  commbound profile scenarios/paper/weak_scaling_7b.toml --set 'sweep.values=[1]'
  commbound profile scenarios/paper/weak_scaling_7b.toml --set 'sweep.values=[1]' --set parallel.tp=8 --format csv
  commbound profile scenarios/examples/dgx-h100-ib-ndr.toml --set training.framework=megatron-te)");
  cmd->callback([args, &exit_code] { exit_code = profile(*args); });
}

}  // namespace commbound::cli
