// commbound search: the enumeration counted by hand, the bound below every simulation, pruning
// that keeps exactly the exhaustive top k, out-of-memory layouts reported as such (label unit).
#include "sim/engine/iteration_bound.hpp"
#include "sim/search/layout_search.hpp"
#include "sim/run/training_run.hpp"
#include "sim/scenario/pp_layout.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/sweep/sweep_runner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace commbound::sim {
namespace {

const std::string kScenario = "tests/sim/data/search_16gpu.toml";

// The hand-counted case below: 4 GPUs in one node, pp <= 2, v <= 2, micro-batch <= 2, one
// strategy, no recompute.
SearchSpace hand_counted_space() {
  SearchSpace space;
  space.max_pp = 2;
  space.max_virtual_stages = 2;
  space.max_micro_batch = 2;
  space.strategies = {DataParallel::zero2};
  space.recompute = {Recompute::none};
  return space;
}

TEST(LayoutSearch, EnumerationCountsASmallCaseByHand) {
  // 4 GPUs in one node, global batch 8, pp <= 2, v <= 2, micro-batch <= 2, one strategy, no
  // checkpointing. (tp, cp) with tp x cp <= 4: (1,1) (1,2) (1,4) (2,1) (2,2) (4,1).
  //   (1,1): pp 1 (dp 4, 2 per replica: mb 1, 2) = 2; pp 2 (dp 2, v 1 or 2, mb 1, 2) = 4  -> 6
  //   (1,2) and (2,1): pp 1 (dp 2: mb 1, 2) = 2; pp 2 (dp 1, v 1 or 2, mb 1, 2) = 4    -> 6 each
  //   (1,4), (2,2), (4,1): pp 1 only (dp 1: mb 1, 2)                                    -> 2 each
  // 6 + 6 + 6 + 3 x 2 = 24; with two strategies and checkpointing on and off, 96. ZB-H1 adds a
  // plain pipeline's second schedule: (1,1), (1,2), (2,1) pp 2 v 1 (mb 1, 2): 3 x 2 = 6 more, 30.
  SearchSpace space = hand_counted_space();
  EXPECT_EQ(enumerate_layouts(4, 4, 8, space).size(), 30u);
  int zero_bubble = 0;
  for (const LayoutChoice& l : enumerate_layouts(4, 4, 8, space)) {
    if (l.schedule == PipelineSchedule::zb_h1) {
      EXPECT_EQ(l.pp, 2) << l.name();
      EXPECT_EQ(l.virtual_stages, 1) << l.name();
      ++zero_bubble;
    }
  }
  EXPECT_EQ(zero_bubble, 6);
  space.schedules = {PipelineSchedule::one_f_one_b};
  EXPECT_EQ(enumerate_layouts(4, 4, 8, space).size(), 24u);
  space.strategies = {DataParallel::zero2, DataParallel::ddp};
  space.recompute = {Recompute::none, Recompute::full};
  const auto all = enumerate_layouts(4, 4, 8, space);
  EXPECT_EQ(all.size(), 96u);
  for (const LayoutChoice& l : all) EXPECT_EQ(l.tp * l.cp * l.pp * l.dp, 4) << l.name();
  // Selective recompute as a third mode: 48 layouts each, named and set as the scenario spells it.
  space.recompute = {Recompute::none, Recompute::selective, Recompute::full};
  const auto three = enumerate_layouts(4, 4, 8, space);
  EXPECT_EQ(three.size(), 144u);
  int selective = 0;
  for (const LayoutChoice& l : three) {
    if (l.recompute != Recompute::selective) continue;
    ++selective;
    EXPECT_NE(l.name().find(" selective"), std::string::npos) << l.name();
    bool sets = false;
    for (const ScenarioEdit& e : l.edits()) {
      if (e.key == "training.activation_checkpointing") sets = std::get<std::string>(e.value) == "selective";
    }
    EXPECT_TRUE(sets) << l.name();
  }
  EXPECT_EQ(selective, 48);
}

// Lighter first and last stages: with 6 layers, pp 2 has 2 (v 1) or 4 (v 2) virtual stages, both
// dividing 6 + 2 = 8 in at least 2, so each of the hand count's 12 pipelined 1F1B layouts ((1,1),
// (1,2), (2,1) x v 1, 2 x mb 1, 2) gains a twin: 24 + 12 = 36. With 7 layers 9 splits in neither.
// The twin's layout is Megatron's syntax for 1, 2, 2, 1 layers (v 2), the ends' first/last keys off.
TEST(LayoutSearch, LighterEndsWhereLayersPlusTwoSplit) {
  SearchSpace space = hand_counted_space();
  space.schedules = {PipelineSchedule::one_f_one_b};
  EXPECT_EQ(enumerate_layouts(4, 4, 8, space, 0, 6).size(), 24u);  // not asked for
  space.ends_lighter = true;
  EXPECT_EQ(enumerate_layouts(4, 4, 8, space, 0, 7).size(), 24u);
  const auto all = enumerate_layouts(4, 4, 8, space, 0, 6);
  EXPECT_EQ(all.size(), 36u);
  int twins = 0;
  for (const LayoutChoice& l : all) {
    if (l.ends_lighter_chunk_layers == 0) continue;
    ++twins;
    EXPECT_EQ(l.pp, 2) << l.name();
    EXPECT_EQ(l.ends_lighter_chunk_layers, 8 / (l.pp * l.virtual_stages)) << l.name();
    EXPECT_NE(l.name().find(" ends-1"), std::string::npos) << l.name();
    std::string layout;
    long first = -1;
    for (const ScenarioEdit& e : l.edits()) {
      if (e.key == "parallel.pp_layout") layout = std::get<std::string>(e.value);
      if (e.key == "parallel.pp_first_stage_layers") first = std::get<long>(e.value);
    }
    EXPECT_EQ(first, 0) << l.name();
    auto parsed = parse_pp_layout(layout, l.pp, 6, 0);
    ASSERT_TRUE(parsed) << layout << ": " << parsed.error().message;
    EXPECT_EQ(parsed->chunks, l.virtual_stages);
    const std::vector<int> expected = l.virtual_stages == 2 ? std::vector<int>{1, 2, 2, 1} : std::vector<int>{3, 3};
    EXPECT_EQ(parsed->layers, expected) << layout;
  }
  EXPECT_EQ(twins, 12);
  // --min-pp 2 leaves the pipelined half: 12 even splits and their 12 twins.
  space.min_pp = 2;
  EXPECT_EQ(enumerate_layouts(4, 4, 8, space, 0, 6).size(), 24u);
}

// Context-parallel exchanges and tensor-parallel overlap multiply only the layouts they apply to.
// In the hand count above (one strategy, no recompute, 1F1B only: 24 layouts), cp > 1 holds for
// (1,2) 6, (1,4) 2, (2,2) 2 = 10 layouts, tp > 1 for (2,1) 6, (2,2) 2, (4,1) 2 = 10, both for (2,2)'s
// 2. Three exchanges: 24 + 2 x 10 = 44; then overlap off and on: each tp > 1 layout twice,
// 44 + (6 + 2 x 3 + 2) = 58. Overlap on sets sequence parallelism, which it needs.
TEST(LayoutSearch, CpExchangesAndTpOverlapApplyWhereTheyMeanSomething) {
  SearchSpace space = hand_counted_space();
  space.schedules = {PipelineSchedule::one_f_one_b};
  space.cp_comms = {CpComm::p2p, CpComm::all_gather, CpComm::a2a};
  EXPECT_EQ(enumerate_layouts(4, 4, 8, space).size(), 44u);
  space.tp_overlap = {false, true};
  const auto all = enumerate_layouts(4, 4, 8, space);
  EXPECT_EQ(all.size(), 58u);
  for (const LayoutChoice& l : all) {
    EXPECT_EQ(l.cp_comm.has_value(), l.cp > 1) << l.name();
    EXPECT_EQ(l.tp_overlap.has_value(), l.tp > 1) << l.name();
    if (!l.tp_overlap || !*l.tp_overlap) continue;
    EXPECT_NE(l.name().find(" tp-overlap"), std::string::npos) << l.name();
    bool overlap = false, sp = false;
    for (const ScenarioEdit& e : l.edits()) {
      if (e.key == "parallel.tp_overlap") overlap = std::get<bool>(e.value);
      if (e.key == "parallel.sequence_parallel") sp = std::get<bool>(e.value);
    }
    EXPECT_TRUE(overlap && sp) << l.name();
  }
}

// A mixture of experts adds expert parallelism: 16 GPUs, tp 1 or 2 (cp 1, pp 1), so tp x cp x dp =
// 16 ranks a stage; 8 experts: ep over the divisors of gcd(8, 16) = 8, i.e. 1, 2, 4, 8, for each
// tp: 8 layouts, and 4 with --max-ep 2 (ep 1, 2). Sequence parallelism follows tp.
TEST(LayoutSearch, MixtureOfExpertsEnumeratesExpertParallelism) {
  SearchSpace space;
  space.max_tp = 2;
  space.max_cp = 1;
  space.max_pp = 1;
  space.max_micro_batch = 1;
  space.strategies = {DataParallel::zero2};
  space.recompute = {Recompute::none};
  const auto moe = enumerate_layouts(16, 8, 16, space, 8);
  EXPECT_EQ(moe.size(), 8u);
  for (const LayoutChoice& l : moe) {
    EXPECT_EQ(8 % l.ep, 0) << l.name();
    bool sets_sp = false;
    for (const ScenarioEdit& e : l.edits()) {
      if (e.key == "parallel.sequence_parallel") sets_sp = std::get<bool>(e.value) == (l.tp > 1);
    }
    EXPECT_TRUE(sets_sp) << l.name();
  }
  space.max_ep = 2;
  EXPECT_EQ(enumerate_layouts(16, 8, 16, space, 8).size(), 4u);
  EXPECT_EQ(enumerate_layouts(16, 8, 16, space).size(), 2u) << "a dense model: no ep";
}

// zero1 is Megatron's distributed optimizer: FSDP's strategy key with zero_stage 1.
TEST(LayoutSearch, Zero1SetsTheDistributedOptimizer) {
  ASSERT_EQ(parse_data_parallel("zero1"), DataParallel::zero1);
  LayoutChoice c;
  c.strategy = DataParallel::zero1;
  bool strategy = false, stage = false;
  for (const ScenarioEdit& e : c.edits()) {
    if (e.key == "parallel.strategy") strategy = std::get<std::string>(e.value) == "fsdp";
    if (e.key == "parallel.zero_stage") stage = std::get<long>(e.value) == 1;
  }
  EXPECT_TRUE(strategy);
  EXPECT_TRUE(stage);
  EXPECT_NE(c.name().find("zero1"), std::string::npos);
}

TEST(LayoutSearch, ComputeOnlyBoundIsTheFullBoundsBusiestCompute) {
  // Every micro-batch runs the same kernels: the cheap bound's busiest stage compute equals the one
  // the full replay sums op by op, for plain and interleaved pipelines and checkpointing.
  auto file = ScenarioFile::load(kScenario, {}, Presets(default_calibration_dir()));
  ASSERT_TRUE(file) << file.error().message;
  const CostModel cost = cost_model(file->scenario());
  using Edits = std::vector<ScenarioEdit>;
  for (const Edits& sets :
       {Edits{{"parallel.pp", 2L}, {"training.micro_batch", 1L}},
        Edits{{"parallel.pp", 2L}, {"parallel.virtual_stages", 2L}, {"training.micro_batch", 1L},
              {"training.activation_checkpointing", std::string("full")}},
        Edits{{"parallel.tp", 2L}, {"parallel.cp", 2L}, {"training.micro_batch", 2L}}}) {
    auto sc = file->unswept(sets, "test edit");
    ASSERT_TRUE(sc) << sc.error().message;
    const TrainingSpec& t = *sc->training;
    const IterationBound full = iteration_lower_bound(t, build_programs(t), cost, sc->cluster);
    const IterationBound cheap = compute_only_bound(t, cost);
    EXPECT_NEAR(cheap.busiest_compute_s, full.busiest_compute_s, 1e-9 * full.busiest_compute_s) << sets[0].key;
    EXPECT_NEAR(cheap.compute_s, full.compute_s, 1e-9 * full.compute_s) << sets[0].key;
    EXPECT_GE(full.iteration_s, full.busiest_compute_s);
    if (t.pp > 1) {
      EXPECT_GT(full.waits_s(), 0) << "a pipeline must wait at its ends";
    }
  }
}

TEST(LayoutSearch, TheBoundChargesTheCommunicationNoScheduleHides) {
  // DDP over the 16 GPUs of 2 nodes on 200G NICs, no pipeline: every gradient bucket is
  // all-reduced across both nodes, so all its bytes leave each node through the node's 8 NICs
  // (CollectiveFloor). The data-parallel stream alone takes at least the buckets' bytes over 8 NIC
  // rates, and the last bucket, reduced after the last backward kernel, cannot hide: the bound
  // waits beyond the compute, where with free communication it would not wait at all.
  auto file = ScenarioFile::load(kScenario, {"fabric.link=ib-hdr"}, Presets(default_calibration_dir()));
  ASSERT_TRUE(file) << file.error().message;
  const CostModel cost = cost_model(file->scenario());
  auto sc = file->unswept({{"parallel.strategy", std::string("ddp")}, {"training.micro_batch", 1L}}, "test edit");
  ASSERT_TRUE(sc) << sc.error().message;
  const TrainingSpec& t = *sc->training;
  ASSERT_EQ(t.dp, 16);
  const std::vector<Program> stages = build_programs(t);
  double reduced_bytes = 0;
  for (const Op& op : stages[0].ops) {
    if (op.kind == OpKind::collective && op.group == GroupKind::data_parallel) {
      ASSERT_EQ(op.collective, network::CollectiveOp::all_reduce);
      reduced_bytes += op.size_bytes;
    }
  }
  const double nics_bytes_per_s = 8 * sc->cluster.fabric.nic_bw_bytes_per_s();
  const IterationBound bound = iteration_lower_bound(t, stages, cost, sc->cluster);
  EXPECT_GE(bound.iteration_s, reduced_bytes / nics_bytes_per_s);
  EXPECT_GT(bound.waits_s(), 0);
  // And no simulation of it is faster.
  auto simulated = run_points({{"ddp", *sc}}, SweepOptions{});
  ASSERT_TRUE(simulated) << simulated.error().message;
  EXPECT_GE((*simulated)[0]->iteration_s, bound.iteration_s);
}

TEST(LayoutSearch, SiblingGroupsShareTheirNodesNics) {
  // The same 2 nodes with tp 8: each node holds one member of each of the 8 data-parallel groups
  // (pairs across the nodes). The engine simulates rank 0 and runs the other 7 groups' all-reduces
  // as copies started with its own, ending it when all have: the node's 8 NICs carry 8 x each
  // bucket's bytes, so a bucket takes at least its bytes over one NIC's rate (8x the floor of its
  // group alone). The last bucket, reduced after the last backward kernel, is waited for.
  auto file = ScenarioFile::load(kScenario, {"fabric.link=ib-hdr"}, Presets(default_calibration_dir()));
  ASSERT_TRUE(file) << file.error().message;
  const CostModel cost = cost_model(file->scenario());
  auto sc = file->unswept({{"parallel.strategy", std::string("ddp")},
                           {"parallel.tp", 8L},
                           {"training.global_batch", 2L},
                           {"training.seq_len", 256L}},
                          "test edit");
  ASSERT_TRUE(sc) << sc.error().message;
  const TrainingSpec& t = *sc->training;
  ASSERT_EQ(t.dp, 2);
  const std::vector<Program> stages = build_programs(t);
  double last_bucket_bytes = 0;
  for (const Op& op : stages[0].ops) {
    if (op.kind == OpKind::collective && op.group == GroupKind::data_parallel) last_bucket_bytes = op.size_bytes;
  }
  ASSERT_GT(last_bucket_bytes, 0);
  const double nic_bytes_per_s = sc->cluster.fabric.nic_bw_bytes_per_s();
  const IterationBound bound = iteration_lower_bound(t, stages, cost, sc->cluster);
  EXPECT_GE(bound.waits_s(), last_bucket_bytes / nic_bytes_per_s * (1 - 1e-9));
  auto simulated = run_points({{"ddp tp8", *sc}}, SweepOptions{});
  ASSERT_TRUE(simulated) << simulated.error().message;
  EXPECT_GE((*simulated)[0]->iteration_s, bound.iteration_s);
}

SearchOptions small_space(Objective objective, bool prune) {
  SearchOptions o;
  o.space.max_tp = 2;
  o.space.max_cp = 2;
  o.space.max_pp = 2;
  o.space.max_virtual_stages = 2;
  o.space.max_micro_batch = 2;
  o.space.strategies = {DataParallel::zero2, DataParallel::zero3, DataParallel::ddp};
  o.space.recompute = {Recompute::none, Recompute::selective, Recompute::full};
  o.objective = objective;
  o.top = 3;
  o.jobs = 2;
  o.prune = prune;
  return o;
}

// The exhaustive search simulates every layout once; its candidates, ranked by each objective,
// are what the pruned search of that objective must reproduce at the top (one exhaustive run
// serves both: the simulations do not depend on the objective, only the order does).
TEST(LayoutSearch, PruningKeepsTheExhaustiveTopAndTheBoundHoldsEverywhere) {
  auto file = ScenarioFile::load(kScenario, {}, Presets(default_calibration_dir()));
  ASSERT_TRUE(file) << file.error().message;
  auto exhaustive = search_layouts(*file, small_space(Objective::tokens_per_s, false));
  ASSERT_TRUE(exhaustive) << exhaustive.error().message;
  // No simulated iteration beats its bound, in time or in energy.
  for (const Candidate& c : exhaustive->candidates) {
    ASSERT_EQ(c.verdict, Verdict::simulated) << c.layout.name();
    ASSERT_TRUE(c.replayed);
    EXPECT_GE(c.metrics->iteration_s, c.bound.iteration_s) << c.layout.name();
    EXPECT_GE(c.metrics->power_w_per_gpu * c.metrics->iteration_s, c.bound.energy_j_per_gpu * (1 - 1e-12))
        << c.layout.name();
    EXPECT_LE(objective_of(*c.metrics, Objective::tokens_per_s), c.objective_bound * (1 + 1e-12)) << c.layout.name();
  }
  for (Objective objective : {Objective::tokens_per_s, Objective::tokens_per_joule}) {
    std::vector<Candidate> ranked = exhaustive->candidates;
    std::stable_sort(ranked.begin(), ranked.end(), [&](const Candidate& a, const Candidate& b) {
      return objective_of(*a.metrics, objective) > objective_of(*b.metrics, objective);
    });
    auto pruned = search_layouts(*file, small_space(objective, true));
    ASSERT_TRUE(pruned) << pruned.error().message;
    int simulated = 0, skipped = 0;
    for (const Candidate& c : pruned->candidates) {
      simulated += c.verdict == Verdict::simulated ? 1 : 0;
      skipped += c.verdict == Verdict::pruned ? 1 : 0;
      if (c.verdict == Verdict::simulated) {
        EXPECT_LE(objective_of(*c.metrics, objective), c.objective_bound * (1 + 1e-12)) << c.layout.name();
      }
    }
    // The test means something only if pruning skipped layouts (full recompute alone adds a third
    // of the compute: those can never win).
    EXPECT_GT(skipped, 0);
    EXPECT_GE(simulated, 3);
    for (std::size_t i = 0; i < 3; ++i) {
      const Candidate& e = ranked[i];
      const Candidate& p = pruned->candidates[i];
      ASSERT_EQ(p.verdict, Verdict::simulated);
      EXPECT_EQ(p.layout.name(), e.layout.name()) << "rank " << i + 1;
      EXPECT_DOUBLE_EQ(objective_of(*p.metrics, objective), objective_of(*e.metrics, objective));
    }
  }
}

TEST(LayoutSearch, OutOfMemoryLayoutsAreReportedAndNotSimulated) {
  // Llama-2 7B under DDP on one GPU's share: fp32 weights, gradients and two Adam moments are
  // 16 bytes per parameter, 16 x 6.7e9 = 108 GB > 80 GB, whatever the micro-batch.
  auto file = ScenarioFile::load(kScenario, {"model.name=llama2-7b"}, Presets(default_calibration_dir()));
  ASSERT_TRUE(file) << file.error().message;
  SearchOptions o;
  o.space.max_tp = 1;
  o.space.max_cp = 1;
  o.space.max_pp = 1;
  o.space.max_micro_batch = 2;
  o.space.strategies = {DataParallel::ddp};
  o.space.recompute = {Recompute::full};
  auto r = search_layouts(*file, o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->candidates.size(), 2u);  // tp1 cp1 pp1 dp16, micro-batch 1 and 2
  for (const Candidate& c : r->candidates) {
    EXPECT_EQ(c.verdict, Verdict::out_of_memory) << c.layout.name();
    EXPECT_FALSE(c.metrics);
    EXPECT_GT(c.memory.total_bytes, 16 * 6.7e9);
    // The H100 holds 85.0e9 bytes as CUDA reports it (calibration/gpus.toml, totalGlobalMem).
    EXPECT_NE(c.reason.find("of 85.0 GB"), std::string::npos) << c.reason;
  }
}

}  // namespace
}  // namespace commbound::sim
