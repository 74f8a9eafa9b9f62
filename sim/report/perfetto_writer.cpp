#include "sim/report/perfetto_writer.hpp"

#include <nlohmann/json.hpp>

#include <set>
#include <string>

namespace commbound::sim {

void write_perfetto_trace(std::ostream& out, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                          const IterationTimeline& timeline) {
  nlohmann::json events = nlohmann::json::array();
  std::set<int> ranks;
  for (const Span& sp : timeline.spans) ranks.insert(sp.rank);
  for (int r : ranks) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                      {"args", {{"name", "rank " + std::to_string(r) + " (stage " +
                                             std::to_string(stage_of[static_cast<std::size_t>(r)]) + ")"}}}});
    for (int s = 0; s < kStreams; ++s) {
      const auto& labels = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(r)])].stream_labels;
      const auto label = labels.find(static_cast<StreamId>(s));
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", s},
                        {"args", {{"name", label != labels.end() ? label->second : to_string(static_cast<StreamId>(s))}}}});
    }
  }
  for (const Span& sp : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(sp.rank)])];
    const Op& op = program.ops[static_cast<std::size_t>(sp.op)];
    nlohmann::json e{{"name", op.name}, {"ph", "X"}, {"pid", sp.rank}, {"tid", static_cast<int>(sp.stream)},
                     {"ts", (sp.start_s - timeline.start_s) * 1e6}, {"dur", (sp.end_s - sp.start_s) * 1e6}};
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
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace commbound::sim
