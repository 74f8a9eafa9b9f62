#include "sim/report/perfetto_writer.hpp"

#include "core/units.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
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

// The trace's ids of `rank`'s `stream`: its process and its thread.
struct Track {
  int pid;
  int tid;
};
using TrackOf = std::function<Track(int rank, int stream)>;

const Program& program_of(const std::vector<Program>& stages, const std::vector<int>& stage_of, int rank) {
  return stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(rank)])];
}

// A stream's name: its program's stream label when it has one ("stream 7" for a replayed trace),
// else its StreamId.
std::string stream_name(const Program& program, int stream) {
  const auto label = program.stream_labels.find(static_cast<StreamId>(stream));
  return label != program.stream_labels.end() ? label->second : to_string(static_cast<StreamId>(stream));
}

// Every stream each rank of `timeline` used (an FSDP rank runs no pipeline or tensor-parallel
// stream: no empty tracks for them).
std::map<int, std::set<int>> streams_of(const IterationTimeline& timeline) {
  std::map<int, std::set<int>> streams;
  for (const Span& sp : timeline.spans) streams[sp.rank].insert(static_cast<int>(sp.stream));
  return streams;
}

// The spans of `timeline` as complete events on their tracks, timed in microseconds from
// `origin_s`, and an arrow from each pipeline send to the receive it feeds (ids from `flow` on).
void add_spans(nlohmann::json& events, const std::vector<Program>& stages, const std::vector<int>& stage_of,
               const IterationTimeline& timeline, double origin_s, const TrackOf& track_of, int& flow) {
  auto ts_us = [origin_s](double t_s) { return (t_s - origin_s) * kUsPerS; };
  for (const Span& sp : timeline.spans) {
    const Op& op = program_of(stages, stage_of, sp.rank).ops[static_cast<std::size_t>(sp.op)];
    const Track track = track_of(sp.rank, static_cast<int>(sp.stream));
    nlohmann::json e{{"name", op.name}, {"ph", "X"}, {"pid", track.pid}, {"tid", track.tid},
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
  // Both sides of a pipeline transfer are the one two-rank transfer the engine ran, so they end at
  // the same instant: a send pairs with the receive of the matching stream that ends when it does,
  // in the order they were recorded.
  std::map<std::pair<double, int>, std::vector<const Span*>> receives;  // (end, stream) -> spans
  for (const Span& sp : timeline.spans) {
    if (sp.stream == StreamId::pipeline_recv_activation || sp.stream == StreamId::pipeline_recv_gradient) {
      receives[{sp.end_s, static_cast<int>(sp.stream)}].push_back(&sp);
    }
  }
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
    const Track from = track_of(send.rank, static_cast<int>(send.stream));
    const Track to_track = track_of(recv.rank, static_cast<int>(recv.stream));
    events.push_back({{"name", "pipeline transfer"}, {"cat", "p2p"}, {"ph", "s"}, {"id", flow}, {"pid", from.pid},
                      {"tid", from.tid}, {"ts", ts_us((send.start_s + send.end_s) / 2)}});
    events.push_back({{"name", "pipeline transfer"}, {"cat", "p2p"}, {"ph", "f"}, {"bp", "e"}, {"id", flow},
                      {"pid", to_track.pid}, {"tid", to_track.tid}, {"ts", ts_us((recv.start_s + recv.end_s) / 2)}});
  }
}

void write_events(std::ostream& out, const nlohmann::json& events) {
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace

void write_perfetto_trace(std::ostream& out, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                          const IterationTimeline& timeline) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& [r, streams] : streams_of(timeline)) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                      {"args", {{"name", "rank " + std::to_string(r) + " (stage " +
                                             std::to_string(stage_of[static_cast<std::size_t>(r)]) + ")"}}}});
    for (int s : streams) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", s},
                        {"args", {{"name", stream_name(program_of(stages, stage_of, r), s)}}}});
    }
  }
  int flow = 0;
  add_spans(events, stages, stage_of, timeline, timeline.start_s, [](int rank, int stream) { return Track{rank, stream}; },
            flow);
  write_events(out, events);
}

void write_perfetto_trace(std::ostream& out, const std::vector<JobTrace>& jobs) {
  nlohmann::json events = nlohmann::json::array();
  double origin_s = jobs.empty() ? 0 : jobs.front().timeline->start_s;
  for (const JobTrace& job : jobs) origin_s = std::min(origin_s, job.timeline->start_s);
  int flow = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const JobTrace& job = jobs[j];
    const int pid = static_cast<int>(j);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", job.name}}}});
    auto track_of = [pid](int rank, int stream) { return Track{pid, rank * kStreams + stream}; };
    for (const auto& [r, streams] : streams_of(*job.timeline)) {
      for (int s : streams) {
        const std::string stage = std::to_string((*job.stage_of)[static_cast<std::size_t>(r)]);
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", track_of(r, s).tid},
                          {"args", {{"name", "rank " + std::to_string(r) + " (stage " + stage + ") " +
                                                 stream_name(program_of(*job.stages, *job.stage_of, r), s)}}}});
      }
    }
    add_spans(events, *job.stages, *job.stage_of, *job.timeline, origin_s, track_of, flow);
  }
  write_events(out, events);
}

}  // namespace commbound::sim
