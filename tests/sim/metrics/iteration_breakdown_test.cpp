// IterationBreakdown (sim/metrics/iteration_breakdown.hpp), the data of `commbound run --explain`:
// a hand-made timeline split by hand; the tensor-parallel rows of Llama-2 7B with tp 2 on one DGX
// H100 node against a count from the model's dimensions; the rows' exposed time against the
// metrics' total; and a pipeline's bubble against the 1F1B formula.
#include "sim/metrics/iteration_breakdown.hpp"
#include "sim/report/explain_report.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/sweep/sweep_runner.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace commbound::sim {
namespace {

using network::CollectiveOp;

// The one point of `path` with `overrides`, simulated with its breakdown (in a child process).
PointResult explained(const std::string& path, const std::vector<std::string>& overrides) {
  auto file = ScenarioFile::load(path, overrides, Presets(default_calibration_dir()));
  EXPECT_TRUE(file) << file.error().message;
  if (!file) return {};
  SweepOptions options;
  options.breakdown = true;
  auto rows = run_sweep(*file, options);
  EXPECT_TRUE(rows) << rows.error().message;
  if (!rows) return {};
  EXPECT_EQ(rows->size(), 1u);
  EXPECT_TRUE(rows->front().breakdown.has_value());
  return rows->front();
}

const BreakdownRow* find_row(const RankBreakdown& r, CommGroup g, CollectiveOp op) {
  for (const BreakdownRow& row : r.rows) {
    if (row.group == g && row.collective == op) return &row;
  }
  return nullptr;
}

double parts_sum_s(const RankBreakdown& r) {
  return r.compute_s + r.exposed_comm_s + r.wait_s + r.host_s + r.tail_s + r.other_s;
}

// A timeline written by hand (seconds), one rank of a tp 2 x dp 2 layout:
//   op 0 compute a          [0, 2]
//   op 2 DP AllGather       [1, 2.5]   no dependencies
//   op 1 TP AllReduce       [3, 5]     after a (ready at 2): the gap [2.5, 3] is its wait
//   op 4 DP ReduceScatter   [4, 5]     beside the AllReduce: [4, 5] is shared half and half
//   op 3 compute b          [6, 8]     after the AllReduce (5), issued by the host at 6: [5, 6] host
//   iteration end 10: [8, 10] is the tail.
// Compute 4; exposed [2, 2.5] (AllGather 0.5) + [3, 4] (AllReduce 1) + [4, 5] (0.5 each) = 2.5;
// wait 0.5; host 1; tail 2: 4 + 2.5 + 0.5 + 1 + 2 = 10.
TEST(IterationBreakdown, SplitsAHandMadeTimelineAsWorkedOut) {
  TrainingSpec t;
  t.tp = 2;
  t.dp = 2;
  Program p;
  auto collective = [](StreamId stream, CollectiveOp c, GroupKind g, double bytes, std::vector<int> deps) {
    Op op;
    op.kind = OpKind::collective;
    op.stream = stream;
    op.collective = c;
    op.group = g;
    op.size_bytes = bytes;
    op.deps = std::move(deps);
    return op;
  };
  Op a;
  a.name = "a";
  p.ops.push_back(a);
  p.ops.push_back(collective(StreamId::tensor_parallel, CollectiveOp::all_reduce, GroupKind::tensor_parallel, 64, {0}));
  p.ops.push_back(collective(StreamId::all_gather, CollectiveOp::all_gather, GroupKind::data_parallel, 32, {}));
  Op b;
  b.name = "b";
  b.deps = {1};
  b.issue_s = 6;
  p.ops.push_back(b);
  p.ops.push_back(collective(StreamId::reduce_scatter, CollectiveOp::reduce_scatter, GroupKind::data_parallel, 16, {}));
  const network::CollectiveChoice nvls{network::Algorithm::nvls, network::Protocol::simple};
  IterationTimeline timeline;
  timeline.start_s = 0;
  timeline.end_s = 10;
  timeline.spans = {{0, 0, StreamId::compute, 0, 2, {}},     {0, 2, StreamId::all_gather, 1, 2.5, {}},
                    {0, 1, StreamId::tensor_parallel, 3, 5, nvls}, {0, 4, StreamId::reduce_scatter, 4, 5, {}},
                    {0, 3, StreamId::compute, 6, 8, {}}};
  const IterationBreakdown br = break_down_iteration(t, {p}, {0, 0, 0, 0}, timeline);
  ASSERT_EQ(br.ranks.size(), 1u);
  const RankBreakdown& r = br.ranks.front();
  EXPECT_DOUBLE_EQ(br.iteration_s, 10);
  EXPECT_DOUBLE_EQ(r.compute_s, 4);
  EXPECT_DOUBLE_EQ(r.exposed_comm_s, 2.5);
  EXPECT_DOUBLE_EQ(r.wait_s, 0.5);
  EXPECT_DOUBLE_EQ(r.host_s, 1);
  EXPECT_DOUBLE_EQ(r.tail_s, 2);
  EXPECT_DOUBLE_EQ(r.other_s, 0);
  EXPECT_DOUBLE_EQ(r.bubble_s, 0);  // no pipeline: the tail is not a bubble
  const BreakdownRow* tp = find_row(r, CommGroup::tp, CollectiveOp::all_reduce);
  const BreakdownRow* ag = find_row(r, CommGroup::dp, CollectiveOp::all_gather);
  const BreakdownRow* rs = find_row(r, CommGroup::dp, CollectiveOp::reduce_scatter);
  ASSERT_TRUE(tp && ag && rs);
  EXPECT_DOUBLE_EQ(tp->exposed_s, 1.5);
  EXPECT_DOUBLE_EQ(tp->wait_s, 0.5);
  EXPECT_DOUBLE_EQ(tp->time_s, 2);
  EXPECT_EQ(tp->group_ranks, 2);
  EXPECT_DOUBLE_EQ(tp->bytes, 64);
  ASSERT_EQ(tp->choices.size(), 1u);
  EXPECT_EQ(tp->choices.front().choice.algorithm, network::Algorithm::nvls);
  // AllReduce bus bandwidth: 64 bytes x 2(n-1)/n = 64 over 2 s.
  EXPECT_DOUBLE_EQ(tp->bus_bw_bytes_per_s(), 32);
  EXPECT_DOUBLE_EQ(ag->exposed_s, 0.5);
  EXPECT_DOUBLE_EQ(rs->exposed_s, 0.5);
  // Rows in group order (TP before DP), then collective kind.
  EXPECT_EQ(r.rows.front().group, CommGroup::tp);
  // One rank: the mean is that rank.
  EXPECT_DOUBLE_EQ(br.mean.exposed_comm_s, 2.5);
  EXPECT_EQ(br.mean.rows.size(), 3u);

  // The JSON a child sends back reads back as it was.
  const IterationBreakdown back = nlohmann::json(br).get<IterationBreakdown>();
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(br));

  // The CSV: the rank's exposed and wait (collective lines) and time (other parts) make its iteration.
  std::ostringstream csv;
  write_explain_report(csv, {{"hand", br, {}}}, Format::csv, "test");
  std::istringstream lines(csv.str());
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "scenario,rank,stage,part,group,collective,group_ranks,calls,bytes,nccl,time_s,busbw_GBps,exposed_s,wait_s");
  std::ostringstream table;
  write_explain_report(table, {{"hand", br, {}}}, Format::table, "test");
  EXPECT_NE(table.str().find("AllReduce"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("nvls/Simple"), std::string::npos) << table.str();
}

// The acceptance case: Llama-2 7B on one DGX H100 node (8 GPUs), tp 2, micro-batch 2, seq 4096,
// global batch 512, FSDP ZeRO-2 over the other factor (scenarios/paper/model_parallel_7b_256gpu.toml
// with cluster.nodes = 1): dp = 8 / 2 = 4, so 512 / (2 x 4) = 64 micro-batches per iteration.
// Megatron tensor parallelism without sequence parallelism all-reduces the partial sums after the
// attention output projection and after the MLP down projection in forward, and the input
// gradients before the MLP's and the attention's input projections in backward (the recipe's
// tp_reduction on o_proj / down forward and gate_up / qkv backward, ProgramWriter::tp_sync):
// 4 AllReduces per layer per micro-batch, none for the embedding or the LM head, no recompute.
//   calls = 4 x 32 layers x 64 micro-batches = 8192
//   bytes = micro_batch x seq x hidden x 2 (bf16) = 2 x 4096 x 4096 x 2 = 67108864 (64 MiB) each,
//           8192 x 64 MiB = 512 GiB = 549755813888 per iteration,
// over groups of 2 GPUs.
TEST(IterationBreakdown, TensorParallelRowsOfLlama7bTp2MatchTheCountByHand) {
  const PointResult p = explained("scenarios/paper/model_parallel_7b_256gpu.toml",
                                  {"cluster.nodes=1", "sweep.values=[[2, 1]]"});
  ASSERT_TRUE(p.breakdown);
  const IterationBreakdown& b = *p.breakdown;
  EXPECT_EQ(b.micro_batches, 64);
  ASSERT_EQ(b.ranks.size(), 1u);  // one pipeline stage: one simulated rank
  const double calls = 4.0 * 32 * 64;
  const double bytes_per_call = 2.0 * 4096 * 4096 * 2;
  const BreakdownRow* tp = find_row(b.mean, CommGroup::tp, CollectiveOp::all_reduce);
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->count, calls);
  EXPECT_EQ(tp->bytes, calls * bytes_per_call);
  EXPECT_EQ(tp->bytes, 549755813888.0);
  EXPECT_EQ(tp->group_ranks, 2);
  // No other tensor-parallel collective, and none labelled sequence-parallel.
  for (const BreakdownRow& r : b.mean.rows) {
    EXPECT_TRUE(r.group != CommGroup::sp) << to_string(r.group);
    if (r.group == CommGroup::tp) {
      EXPECT_EQ(r.collective, CollectiveOp::all_reduce);
    }
  }
  EXPECT_GT(tp->time_s, 0);
  EXPECT_LE(tp->exposed_s, tp->time_s);
  EXPECT_NEAR(parts_sum_s(b.mean), b.iteration_s, 1e-9 * b.iteration_s);
}

// The rows' exposed times add up to the metrics' exposed communication, and compute and the
// iteration are the metrics' own, on a layout with every kind of row: tp 2 with sequence
// parallelism (SP AllGather / ReduceScatter), pp 2 (PP SendRecv), dp 2 (FSDP AllGather /
// ReduceScatter); 16 sequences: 4 micro-batches.
TEST(IterationBreakdown, ExposedRowsAddUpToTheMetricsExposedCommunication) {
  const PointResult p = explained(
      "scenarios/paper/model_parallel_7b_256gpu.toml",
      {"cluster.nodes=1", "sweep.values=[[2, 2]]", "parallel.sequence_parallel=true", "training.global_batch=16"});
  ASSERT_TRUE(p.breakdown);
  const IterationBreakdown& b = *p.breakdown;
  const Metrics& m = p.metrics;
  ASSERT_EQ(b.ranks.size(), 2u);  // one per stage
  double exposed_s = 0;
  for (const BreakdownRow& r : b.mean.rows) exposed_s += r.exposed_s;
  EXPECT_GT(m.exposed_comm_s, 0);
  EXPECT_NEAR(exposed_s, m.exposed_comm_s, 1e-9 * m.exposed_comm_s);
  EXPECT_NEAR(b.mean.exposed_comm_s, m.exposed_comm_s, 1e-12 * m.exposed_comm_s);
  EXPECT_NEAR(b.mean.compute_s, m.compute_s, 1e-12 * m.compute_s);
  EXPECT_NEAR(b.iteration_s, m.iteration_s, 1e-12 * m.iteration_s);
  for (const RankBreakdown& r : b.ranks) {
    EXPECT_NEAR(parts_sum_s(r), b.iteration_s, 1e-9 * b.iteration_s) << "rank " << r.rank;
  }
  EXPECT_NE(find_row(b.mean, CommGroup::sp, CollectiveOp::all_gather), nullptr);
  EXPECT_NE(find_row(b.mean, CommGroup::sp, CollectiveOp::reduce_scatter), nullptr);
  EXPECT_EQ(find_row(b.mean, CommGroup::tp, CollectiveOp::all_reduce), nullptr);
  EXPECT_NE(find_row(b.mean, CommGroup::pp, CollectiveOp::send_recv), nullptr);
  EXPECT_NE(find_row(b.mean, CommGroup::dp, CollectiveOp::all_gather), nullptr);
}

// 1F1B with p uniform stages and m micro-batches, communication negligible: every stage idles
// for p - 1 forward+backward slots of the m + p - 1 the pipeline takes, so the bubble is
// (p - 1) / (m + p - 1) of the pipelined iteration on every stage (Narayanan et al. 2021, sec. 2.2).
// tests/sim/data/pipeline_1f1b.toml: p = 8, m = 16: 7 / 23 = 0.304. What the formula leaves out
// (the optimizer step after the last backward, the SendRecv transfers on the critical path) is
// below 2% of the iteration here.
TEST(IterationBreakdown, PipelineBubbleMatchesTheOneFOneBFormula) {
  const PointResult p = explained("tests/sim/data/pipeline_1f1b.toml", {});
  ASSERT_TRUE(p.breakdown);
  const IterationBreakdown& b = *p.breakdown;
  ASSERT_EQ(b.pipeline_stages, 8);
  ASSERT_EQ(b.micro_batches, 16);
  const double expected = 7.0 / 23.0;
  EXPECT_NEAR(b.mean.bubble_s / b.iteration_s, expected, 0.02);
  ASSERT_EQ(b.ranks.size(), 8u);
  for (const RankBreakdown& r : b.ranks) {
    EXPECT_NEAR(r.bubble_s / b.iteration_s, expected, 0.02) << "stage " << r.stage;
    EXPECT_NEAR(parts_sum_s(r), b.iteration_s, 1e-9 * b.iteration_s) << "stage " << r.stage;
  }
  EXPECT_LT(b.mean.exposed_comm_s, 0.02 * b.iteration_s);
}

}  // namespace
}  // namespace commbound::sim
