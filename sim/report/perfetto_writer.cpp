#include "sim/report/perfetto_writer.hpp"

#include "core/units.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace commbound::sim {
namespace {


// The receiving stream of a pipeline send's stream; nullopt for every other stream.
std::optional<StreamId> receiving_stream(StreamId s) {
  if (s == StreamId::pipeline_send_activation) return StreamId::pipeline_recv_activation;
  if (s == StreamId::pipeline_send_gradient) return StreamId::pipeline_recv_gradient;
  return std::nullopt;
}

}  // namespace

void write_perfetto_trace(std::ostream& out, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                          const IterationTimeline& timeline) {
  nlohmann::json events = nlohmann::json::array();
  // A process per rank and a track per stream the rank used (an FSDP rank runs no pipeline or
  // tensor-parallel stream: no empty tracks for them).
  std::map<int, std::set<int>> streams_of;
  for (const Span& sp : timeline.spans) streams_of[sp.rank].insert(static_cast<int>(sp.stream));
  for (const auto& [r, streams] : streams_of) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                      {"args", {{"name", "rank " + std::to_string(r) + " (stage " +
                                             std::to_string(stage_of[static_cast<std::size_t>(r)]) + ")"}}}});
    const auto& labels = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(r)])].stream_labels;
    for (int s : streams) {
      const auto label = labels.find(static_cast<StreamId>(s));
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", s},
                        {"args", {{"name", label != labels.end() ? label->second : to_string(static_cast<StreamId>(s))}}}});
    }
  }
  auto ts_us = [&timeline](double t_s) { return (t_s - timeline.start_s) * kUsPerS; };
  for (const Span& sp : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(sp.rank)])];
    const Op& op = program.ops[static_cast<std::size_t>(sp.op)];
    nlohmann::json e{{"name", op.name}, {"ph", "X"}, {"pid", sp.rank}, {"tid", static_cast<int>(sp.stream)},
                     {"ts", ts_us(sp.start_s)}, {"dur", (sp.end_s - sp.start_s) * kUsPerS}};
    if (op.fixed_s) {
      e["args"] = {{"measured", true}};
    } else if (op.kind == OpKind::collective) {
      e["args"] = {{"bytes", op.size_bytes},
                   {"algorithm", network::to_string(sp.choice.algorithm)},
                   {"protocol", network::to_string(sp.choice.protocol)}};
    } else {
      e["args"] = {{"flops", op.flops}, {"bytes", op.bytes}};
    }
    events.push_back(e);
  }
  // An arrow from each pipeline send to the receive it feeds, on another rank. Both sides are the
  // one two-rank transfer the engine ran, so they end at the same instant: a send pairs with the
  // receive of the matching stream that ends when it does, in the order they were recorded.
  std::map<std::pair<double, int>, std::vector<const Span*>> receives;  // (end, stream) -> spans
  for (const Span& sp : timeline.spans) {
    if (sp.stream == StreamId::pipeline_recv_activation || sp.stream == StreamId::pipeline_recv_gradient) {
      receives[{sp.end_s, static_cast<int>(sp.stream)}].push_back(&sp);
    }
  }
  int flow = 0;
  for (const Span& send : timeline.spans) {
    const std::optional<StreamId> to = receiving_stream(send.stream);
    if (!to) continue;
    auto found = receives.find({send.end_s, static_cast<int>(*to)});
    if (found == receives.end()) continue;
    std::vector<const Span*>& candidates = found->second;
    auto peer = std::find_if(candidates.begin(), candidates.end(), [&](const Span* r) { return r->rank != send.rank; });
    if (peer == candidates.end()) continue;
    const Span& recv = **peer;
    candidates.erase(peer);
    ++flow;
    // The arrow leaves the send's slice and lands in the receive's ("bp": "e": the slice that
    // encloses the timestamp), both at the transfer's middle.
    events.push_back({{"name", "pipeline transfer"}, {"cat", "p2p"}, {"ph", "s"}, {"id", flow}, {"pid", send.rank},
                      {"tid", static_cast<int>(send.stream)}, {"ts", ts_us((send.start_s + send.end_s) / 2)}});
    events.push_back({{"name", "pipeline transfer"}, {"cat", "p2p"}, {"ph", "f"}, {"bp", "e"}, {"id", flow},
                      {"pid", recv.rank}, {"tid", static_cast<int>(recv.stream)},
                      {"ts", ts_us((recv.start_s + recv.end_s) / 2)}});
  }
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace commbound::sim
