// commbound search: the best parallel layouts of a scenario's model on its cluster.
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/search/layout_search.hpp"
#include "sim/report/output.hpp"
#include "sim/search/search_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <thread>

namespace commbound::cli {
namespace {

const char* kSearchDescription = R"(Which layout is fastest? Enumerates the parallel layouts of the scenario's [model] on its
cluster with the global batch fixed ([training] global_batch; micro-batches per replica =
global_batch / (dp x micro_batch)):
  tp    tensor parallel degree: divisors of the GPUs up to --max-tp (default: a node's GPUs)
  cp    context parallel degree: up to --max-cp (default: a node's GPUs); tp x cp stays within
        --max-model-parallel (default: the larger of the two limits, i.e. inside a node)
  pp    pipeline stages: divisors of what remains, from --min-pp (default 1) up to --max-pp
        (default 16)
  v     interleaved 1F1B chunks per stage: 1, 2, 4 ... up to --max-virtual-stages (default 4);
        with v = 1 also zero bubble's ZB-H1 (dense models): --schedules 1f1b,zb-h1 (default both)
  split the layers over the pipeline's virtual stages: even (default); with --pipeline-splits
        even,ends-1 also each 1F1B pipeline whose pp x v virtual stages divide layers + 2 with its
        first and last stage one layer lighter (room for the embedding and the loss, as Llama 3
        split its 405B; " ends-1"; not with multi-token prediction)
  dp    what remains: GPUs / (tp x cp x pp)
  mb    micro-batch: divisors of global_batch / dp, up to --max-micro-batch (default 8)
  ep    mixture-of-experts models only: expert parallelism over the divisors of both the routed
        experts and tp x cp x dp, up to --max-ep (default: the experts); sequence parallelism on
        whenever tp > 1 (Megatron-Core requires it of an MoE model)
  strategy   ddp, zero2 (FSDP ZeRO-2), zero3 (FSDP ZeRO-3), hsdp (ZeRO-2 inside a node,
             replicas across); zero1 (Megatron's distributed optimizer) when asked: --strategies
  ckpt  activation recompute, as [training] activation_checkpointing names it: none and full by
        default; selective (the attention core), selective_op (torchtitan's) when asked:
        --checkpointing none,selective,full
  cp exchange, tp overlap   only when asked: --cp-comm p2p,all_gather,a2a for layouts with
        cp > 1; --tp-overlap off,on for layouts with tp > 1 (on turns sequence parallelism on,
        which Transformer Engine's overlap needs)
Other keys (sequence_parallel, tp_overlap and cp_comm unless asked for, pp_first_stage_layers
and pp_last_stage_layers but where ends-1 replaces them, hsdp_shard, the data-parallel overlap
and buckets, the fabric, NCCL) stay as the file sets them; a pp_layout gives way to each layout's
own split; its [sweep] is not applied. Each layout is validated by the scenario's own rules (an invalid one
keeps its reason) and checked against GPU memory by the memory model (docs/metrics.md).

Every layout that fits gets a bound without simulation: its compute at the kernel table's
prices, then (for layouts that may win) its iteration replayed with every collective at its
floor: the bytes that must cross a GPU's links or a node's NICs, at their full rate, with
nothing else on them but the same collective of the other groups on the node (the engine runs
those beside it). The replay keeps the pipeline bubble and the communication the schedule
cannot hide. No simulation of it can be faster. Layouts are simulated best bound first in -j
child processes; once N (--top) are simulated, a layout whose bound is below the N-th best is
pruned: it cannot enter the top N. The top N are those an exhaustive search (--no-prune) ranks;
only the number pruned depends on -j. With --objective tokens-per-joule the bound is on energy:
idle power over the bounded iteration plus the least busy power over the bounded compute.

Prints the top N (tokens/s per GPU, MFU, exposed communication, memory and power per GPU,
tokens per joule) and why the others lost: against the best, by more exposed communication, a
larger pipeline bubble (idle time) or more compute (recomputation, smaller kernels); pruned by
bound; out of memory (with the worst); invalid (with the commonest reason). Any --format but
table lists every candidate with its verdict, bound and reason. Progress goes to stderr.
)";

struct SearchArgs {
  ScenarioArgs scenario;
  std::string objective = "tokens-per-s";
  int top = 10;
  sim::SearchSpace space;
  std::vector<std::string> strategies;
  std::vector<std::string> schedules;
  std::vector<std::string> checkpointing;
  std::vector<std::string> cp_comms;
  std::vector<std::string> tp_overlap;
  std::vector<std::string> pipeline_splits;
  bool no_prune = false;
  sim::Format format = sim::Format::table;
  std::string out;
  bool force = false;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

std::string title_of(const sim::Scenario& sc, const std::string& objective) {
  const sim::TrainingSpec& t = *sc.training;
  return fmt::format("commbound search: {}: {}, {} GPUs ({} x {}), global batch {}, seq {}; ranked by {}", sc.path,
                     t.model.name, sc.cluster.gpus(), sc.cluster.nodes, sc.cluster.node.name, t.global_batch, t.seq_len,
                     objective == "tokens-per-s" ? "tokens/s per GPU" : "tokens per joule");
}

int run_search(SearchArgs a) {
  auto file = load(a.scenario);
  if (!file) return fail(file.error().message);
  const sim::Scenario& base = file->scenario();
  if (!base.training) return fail(base.path + ": search needs a [model] section (and [training] global_batch)");
  if (Status ok = sim::check_outputs({{"--out", a.out}}, {{"scenario", a.scenario.scenario}}, a.force); !ok) {
    return fail(ok.error().message);
  }
  if (!a.strategies.empty()) {
    a.space.strategies.clear();
    for (const std::string& s : a.strategies) a.space.strategies.push_back(*sim::parse_data_parallel(s));
  }
  if (!a.checkpointing.empty()) {
    a.space.recompute.clear();
    for (const std::string& r : a.checkpointing) a.space.recompute.push_back(*sim::parse_recompute(r));
  }
  for (const std::string& c : a.cp_comms) a.space.cp_comms.push_back(*sim::parse_cp_comm(c));
  for (const std::string& o : a.tp_overlap) a.space.tp_overlap.push_back(o == "on");
  a.space.ends_lighter = std::find(a.pipeline_splits.begin(), a.pipeline_splits.end(), "ends-1") != a.pipeline_splits.end();
  if (!a.schedules.empty()) {
    a.space.schedules.clear();
    for (const std::string& s : a.schedules) a.space.schedules.push_back(*sim::parse_pipeline_schedule(s));
  }
  sim::SearchOptions options;
  options.space = a.space;
  options.objective = a.objective == "tokens-per-s" ? sim::Objective::tokens_per_s : sim::Objective::tokens_per_joule;
  options.top = a.top;
  options.jobs = a.jobs;
  options.prune = !a.no_prune;
  ProgressLine progress;
  options.bounding = [&](std::size_t done, std::size_t total) {
    progress.show(fmt::format("[{}/{} layouts validated and bounded]  elapsed {:.0f} s", done, total, progress.elapsed_s()));
  };
  options.progress = [&](std::size_t simulated, std::size_t pruned, std::size_t fits, const sim::Candidate& last) {
    progress.show(fmt::format("[{} simulated, {} pruned of {} that fit] {}: {:.5g} {}  elapsed {:.0f} s", simulated,
                              pruned, fits, last.layout.name(), sim::objective_of(*last.metrics, options.objective),
                              options.objective == sim::Objective::tokens_per_s ? "tokens/s/GPU" : "tokens/J",
                              progress.elapsed_s()));
  };
  options.bounded = [&](const std::vector<sim::Candidate>& candidates) {
    std::size_t invalid = 0, oom = 0;
    for (const sim::Candidate& c : candidates) {
      invalid += c.verdict == sim::Verdict::invalid ? 1 : 0;
      oom += c.verdict == sim::Verdict::out_of_memory ? 1 : 0;
    }
    progress.finish();
    std::cerr << fmt::format("{} layouts: {} invalid, {} out of memory, {} fit and bounded in {:.1f} s; simulating the "
                             "best bounds first\n",
                             candidates.size(), invalid, oom, candidates.size() - invalid - oom, progress.elapsed_s());
  };
  auto result = sim::search_layouts(*file, options);
  progress.finish();
  if (!result) return fail(result.error().message);
  std::cerr << fmt::format("search: {} candidates in {:.1f} s wall\n", result->candidates.size(), progress.elapsed_s());
  sim::SearchReportOptions report;
  report.format = a.format;
  report.title = title_of(base, a.objective);
  report.objective = options.objective;
  report.top = a.top;
  Status written = sim::write_output(a.out, a.force, [&](std::ostream& o) { sim::write_search(o, *result, report); });
  if (!written) return fail(written.error().message);
  return 0;
}

}  // namespace

void add_search_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SearchArgs>();
  CLI::App* cmd = app.add_subcommand("search", "the best parallel layouts of the scenario's [model] on its cluster, "
                                               "by tokens/s or tokens per joule");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--objective", a->objective, "tokens-per-s (default) | tokens-per-joule")
      ->check(CLI::IsMember({"tokens-per-s", "tokens-per-joule"}));
  cmd->add_option("--top", a->top, "layouts ranked and shown (default 10)")->check(CLI::Range(1, 1000));
  cmd->add_option("--max-tp", a->space.max_tp, "largest tensor parallel degree (default: a node's GPUs)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-cp", a->space.max_cp, "largest context parallel degree (default: a node's GPUs)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-model-parallel", a->space.max_model_parallel,
                  "largest tp x cp (default: the larger of --max-tp and --max-cp)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--min-pp", a->space.min_pp, "fewest pipeline stages (default 1)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-pp", a->space.max_pp, "most pipeline stages (default 16)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-virtual-stages", a->space.max_virtual_stages,
                  "most interleaved chunks per pipeline stage (default 4; 1: plain 1F1B)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-micro-batch", a->space.max_micro_batch, "largest micro-batch in sequences (default 8)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-ep", a->space.max_ep, "MoE: largest expert parallel degree (default: the routed experts)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--strategies", a->strategies,
                  "data-parallel strategies, comma-separated: ddp, zero1, zero2, zero3, hsdp (default: ddp,zero2,zero3,hsdp)")
      ->delimiter(',')
      ->check(CLI::IsMember({"ddp", "zero1", "zero2", "zero3", "hsdp"}))
      ->type_name("LIST");
  cmd->add_option("--checkpointing", a->checkpointing,
                  "activation recompute, comma-separated: none, selective, selective_op, full (default: none,full)")
      ->delimiter(',')
      ->check(CLI::IsMember({"none", "selective", "selective_op", "full"}))
      ->type_name("LIST");
  cmd->add_option("--cp-comm", a->cp_comms,
                  "context-parallel exchanges for cp > 1, comma-separated: p2p, all_gather, a2a (default: the "
                  "scenario's parallel.cp_comm)")
      ->delimiter(',')
      ->check(CLI::IsMember({"p2p", "all_gather", "a2a"}))
      ->type_name("LIST");
  cmd->add_option("--tp-overlap", a->tp_overlap,
                  "tensor-parallel comm-GEMM overlap for tp > 1, comma-separated: off, on (on sets sequence_parallel; "
                  "default: the scenario's parallel.tp_overlap)")
      ->delimiter(',')
      ->check(CLI::IsMember({"off", "on"}))
      ->type_name("LIST");
  cmd->add_option("--schedules", a->schedules,
                  "pipeline schedules, comma-separated: 1f1b (plain and interleaved), zb-h1 (default: both)")
      ->delimiter(',')
      ->check(CLI::IsMember({"1f1b", "zb-h1"}))
      ->type_name("LIST");
  cmd->add_option("--pipeline-splits", a->pipeline_splits,
                  "how the layers split over a pipeline's virtual stages, comma-separated: even, ends-1 (the first "
                  "and last one layer lighter; default: even)")
      ->delimiter(',')
      ->check(CLI::IsMember({"even", "ends-1"}))
      ->type_name("LIST");
  cmd->add_flag("--no-prune", a->no_prune, "simulate every layout that fits (exhaustive; slow)");
  cmd->add_option("-j,--jobs", a->jobs, "layouts simulated at once, each in its own process (default: the cores)")
      ->check(CLI::Range(1, 1024));
  add_format_option(*cmd, a->format, report_formats(),
                    " (all but table: every candidate)");
  cmd->add_option("--out", a->out, "write there instead of standard output (never overwrites without --force)")
      ->type_name("FILE");
  cmd->add_flag("--force", a->force, "allow --out to replace an existing file");
  cmd->footer(std::string(kSearchDescription) + R"(
Examples:
  commbound search scenarios/studies/search_7b_256gpu.toml
  commbound search scenarios/studies/search_7b_256gpu.toml --objective tokens-per-joule --top 5
  commbound search scenarios/studies/search_7b_256gpu.toml --strategies zero2,zero3 --checkpointing none --max-pp 4
  commbound search scenarios/studies/search_7b_256gpu.toml --set cluster.nodes=8 --format csv --out layouts.csv)");
  cmd->callback([a, &exit_code] { exit_code = run_search(*a); });
}

}  // namespace commbound::cli
