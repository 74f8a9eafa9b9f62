// The Perfetto writer (sim/report/perfetto_writer.hpp): a hand-made timeline of one rank, a GEMM
// and an all-gather, read back as JSON. Times are microseconds from the iteration's start: a span
// from 1.25 s to 1.375 s of an iteration that starts at 1 s is ts 250000, dur 125000 (binary
// fractions, exact in a double).
#include "sim/report/perfetto_writer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

namespace commbound::sim {
namespace {

TEST(PerfettoWriter, WritesAProcessPerRankATrackPerStreamAndAnEventPerOp) {
  Program program;
  Op gemm;
  gemm.name = "fwd gemm";
  gemm.kind = OpKind::gemm;
  gemm.flops = 1e12;
  gemm.bytes = 3e9;
  Op gather;
  gather.name = "all-gather";
  gather.kind = OpKind::collective;
  gather.stream = StreamId::all_gather;
  gather.size_bytes = 1 << 20;
  program.ops = {gemm, gather};
  program.stream_labels[StreamId::compute] = "stream 7";
  IterationTimeline timeline;
  timeline.start_s = 1.0;
  timeline.end_s = 1.5;
  timeline.spans = {{0, 0, StreamId::compute, 1.0, 1.5, {}}, {0, 1, StreamId::all_gather, 1.25, 1.375, {}}};

  std::ostringstream out;
  write_perfetto_trace(out, {program}, {0}, timeline);
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  const auto& events = doc["traceEvents"];
  // One process name, a thread name per stream the rank used (compute, all-gather: no empty
  // tracks for the eight others), then the two ops.
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0]["name"], "process_name");
  EXPECT_EQ(events[0]["args"]["name"], "rank 0 (stage 0)");
  EXPECT_EQ(events[1]["args"]["name"], "stream 7");  // the label the program gives its compute stream
  EXPECT_EQ(events[2]["args"]["name"], to_string(StreamId::all_gather));
  const auto& g = events[3];
  EXPECT_EQ(g["name"], "fwd gemm");
  EXPECT_EQ(g["ph"], "X");
  EXPECT_EQ(g["ts"].get<double>(), 0.0);
  EXPECT_EQ(g["dur"].get<double>(), 500000.0);
  EXPECT_EQ(g["args"]["flops"].get<double>(), 1e12);
  const auto& c = events[4];
  EXPECT_EQ(c["tid"], static_cast<int>(StreamId::all_gather));
  EXPECT_EQ(c["ts"].get<double>(), 250000.0);
  EXPECT_EQ(c["dur"].get<double>(), 125000.0);
  EXPECT_EQ(c["args"]["bytes"].get<double>(), 1 << 20);
}

// A pipeline send on stage 0 and the receive it feeds on stage 1 end together (one two-rank
// transfer): one arrow, leaving the send's slice and landing in the receive's, each at its middle.
// A receive that ends at another instant gets none.
TEST(PerfettoWriter, AnArrowFromEachPipelineSendToItsReceive) {
  Op send;
  send.name = "send activation";
  send.kind = OpKind::collective;
  send.stream = StreamId::pipeline_send_activation;
  Op recv = send;
  recv.name = "recv activation";
  recv.stream = StreamId::pipeline_recv_activation;
  Program first, second;
  first.ops = {send};
  second.ops = {recv, recv};
  IterationTimeline timeline;
  timeline.start_s = 0;
  timeline.end_s = 1;
  timeline.spans = {{0, 0, StreamId::pipeline_send_activation, 0.25, 0.5, {}},
                    {1, 0, StreamId::pipeline_recv_activation, 0.0, 0.5, {}},
                    {1, 1, StreamId::pipeline_recv_activation, 0.5, 0.75, {}}};
  std::ostringstream out;
  write_perfetto_trace(out, {first, second}, {0, 1}, timeline);
  const auto doc = nlohmann::json::parse(out.str());
  std::vector<nlohmann::json> flows;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "s" || e["ph"] == "f") flows.push_back(e);
  }
  ASSERT_EQ(flows.size(), 2u);
  EXPECT_EQ(flows[0]["ph"], "s");
  EXPECT_EQ(flows[0]["pid"], 0);
  EXPECT_EQ(flows[0]["ts"].get<double>(), 375000.0);  // the send's middle, 0.375 s
  EXPECT_EQ(flows[1]["ph"], "f");
  EXPECT_EQ(flows[1]["pid"], 1);
  EXPECT_EQ(flows[1]["ts"].get<double>(), 250000.0);  // the first receive's middle, 0.25 s
  EXPECT_EQ(flows[0]["id"], flows[1]["id"]);
}

}  // namespace
}  // namespace commbound::sim
