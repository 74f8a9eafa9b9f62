#include "sim/metrics/iteration_breakdown.hpp"

#include "core/check.hpp"
#include "sim/metrics/internal/timeline_intervals.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace commbound::sim {
namespace {

using internal::Interval;

using RowKey = std::pair<CommGroup, network::CollectiveOp>;
using ChoiceKey = std::pair<network::Algorithm, network::Protocol>;

// A row while it is being summed: its choices keyed for merging.
struct RowSum {
  BreakdownRow row;
  std::map<ChoiceKey, double> choices;
};

std::vector<BreakdownRow> finished(std::map<RowKey, RowSum>& sums, double scale) {
  std::vector<BreakdownRow> rows;
  for (auto& [key, sum] : sums) {
    BreakdownRow row = sum.row;
    row.count *= scale;
    row.bytes *= scale;
    row.time_s *= scale;
    row.exposed_s *= scale;
    row.wait_s *= scale;
    for (const auto& [choice, count] : sum.choices) {
      row.choices.push_back({{choice.first, choice.second}, count * scale});
    }
    std::stable_sort(row.choices.begin(), row.choices.end(),
                     [](const ChoiceCount& a, const ChoiceCount& b) { return a.count > b.count; });
    rows.push_back(std::move(row));
  }
  return rows;
}

// A row's key: rows sort by it, in kCommGroups order, then by collective kind (the enums' order).
RowKey key_of(const BreakdownRow& r) { return {r.group, r.collective}; }

// The preference among ops starting together at the end of an idle gap: the one charged with it.
int preference(const Op& op) {
  if (op.kind != OpKind::collective) return 0;
  const bool pipeline = op.group == GroupKind::pipeline_next || op.group == GroupKind::pipeline_prev;
  return pipeline ? 2 : 1;
}

class RankAccount {
public:
  RankAccount(const TrainingSpec& t, const Program& program, int rank, int stage, const IterationTimeline& raw,
              const internal::OuterStepWarp& warp)
      : t_(t), program_(program), rank_(rank), stage_(stage), raw_(raw), warp_(warp) {}

  // Adds span `s` of the raw timeline (this rank's).
  void add(const Span& s) {
    raw_end_s_.resize(program_.ops.size(), raw_.start_s);
    raw_end_s_[static_cast<std::size_t>(s.op)] = s.end_s;
    spans_.push_back(s);
  }

  RankBreakdown finish(double iteration_start_s, double iteration_end_s) {
    RankBreakdown out;
    out.rank = rank_;
    out.stage = stage_;
    std::vector<Interval> compute, comm;
    struct Comm {
      double start_s, end_s;
      RowKey key;
    };
    std::vector<Comm> comms;
    std::map<double, std::vector<std::size_t>> starting;  // positive-length busy spans by start
    for (std::size_t k = 0; k < spans_.size(); ++k) {
      const Span& s = spans_[k];
      const Op& op = program_.ops[static_cast<std::size_t>(s.op)];
      if (op.kind == OpKind::host) continue;  // neither compute nor communication (as the metrics)
      const double start_s = warp_(s.start_s), end_s = warp_(s.end_s);
      if (end_s > start_s) starting[start_s].push_back(k);
      if (op.kind != OpKind::collective) {
        compute.emplace_back(start_s, end_s);
        continue;
      }
      comm.emplace_back(start_s, end_s);
      const RowKey key{comm_group_of(t_, op), op.collective};
      RowSum& sum = row(key, op);
      const double weight = outer_step(s.op) ? 1.0 / t_.diloco_sync_every : 1.0;
      sum.row.count += weight;
      sum.row.bytes += weight * op.size_bytes;
      sum.row.time_s += end_s - start_s;
      if (!op.fixed_s && sum.row.group_ranks > 1) {
        sum.choices[{s.choice.algorithm, s.choice.protocol}] += weight;
      }
      comms.push_back({start_s, end_s, key});
    }
    const auto compute_m = internal::merged(compute);
    const auto comm_m = internal::merged(comm);
    out.compute_s = internal::length(compute_m);
    split_exposed(comms, compute_m);

    // Idle gaps: neither compute nor communication; each charged to the op that ends it.
    std::vector<Interval> busy = compute_m;
    busy.insert(busy.end(), comm_m.begin(), comm_m.end());
    busy = internal::merged(busy);
    double cursor_s = iteration_start_s;
    for (const Interval& b : busy) {
      if (b.first > cursor_s) charge_gap(cursor_s, b.first, starting.at(b.first), out);
      cursor_s = std::max(cursor_s, b.second);
    }
    out.tail_s = std::max(0.0, iteration_end_s - cursor_s);

    out.rows = finished(rows_, 1.0);
    for (const BreakdownRow& r : out.rows) {
      out.exposed_comm_s += r.exposed_s;
      out.wait_s += r.wait_s;
      if (r.group == CommGroup::pp) out.pipeline_wait_s += r.wait_s;
    }
    out.bubble_s = out.pipeline_wait_s + (t_.pp > 1 ? out.tail_s : 0.0);
    return out;
  }

private:
  bool outer_step(int op) const { return program_.outer_step_begin >= 0 && op >= program_.outer_step_begin; }

  RowSum& row(const RowKey& key, const Op& op) {
    auto [it, fresh] = rows_.try_emplace(key);
    if (fresh) {
      it->second.row.group = key.first;
      it->second.row.collective = key.second;
      it->second.row.group_ranks = static_cast<int>(group_members(t_, rank_, op.group).size());
    }
    return it->second;
  }

  // Exposed communication (collectives running, no compute), split at each instant equally among
  // the collectives then running: a sweep over the boundaries of every span.
  template <typename Comm>
  void split_exposed(const std::vector<Comm>& comms, const std::vector<Interval>& compute_m) {
    std::vector<std::tuple<double, int, std::size_t>> events;  // time, +1 start / -1 end, comm index
    for (std::size_t k = 0; k < comms.size(); ++k) {
      if (comms[k].end_s <= comms[k].start_s) continue;
      events.emplace_back(comms[k].start_s, +1, k);
      events.emplace_back(comms[k].end_s, -1, k);
    }
    std::sort(events.begin(), events.end());  // at one time, ends (-1) before starts
    std::vector<std::size_t> active;
    std::size_t next_compute = 0;
    for (std::size_t e = 0; e < events.size(); ++e) {
      const auto [time_s, delta, k] = events[e];
      if (delta > 0) {
        active.push_back(k);
      } else {
        active.erase(std::find(active.begin(), active.end(), k));
      }
      if (active.empty() || e + 1 == events.size()) continue;
      // [time_s, until_s) runs `active`; charge what compute does not cover.
      const double until_s = std::get<0>(events[e + 1]);
      if (until_s <= time_s) continue;
      while (next_compute < compute_m.size() && compute_m[next_compute].second <= time_s) ++next_compute;
      double covered_s = 0;
      for (std::size_t c = next_compute; c < compute_m.size() && compute_m[c].first < until_s; ++c) {
        covered_s += std::min(until_s, compute_m[c].second) - std::max(time_s, compute_m[c].first);
      }
      const double exposed_s = (until_s - time_s) - covered_s;
      if (exposed_s <= 0) continue;
      for (std::size_t a : active) rows_.at(comms[a].key).row.exposed_s += exposed_s / static_cast<double>(active.size());
    }
  }

  // The gap [from_s, to_s): nothing ran; `enders` (spans_ indices) start at to_s.
  void charge_gap(double from_s, double to_s, const std::vector<std::size_t>& enders, RankBreakdown& out) {
    const Span& s = spans_[*std::max_element(enders.begin(), enders.end(), [this](std::size_t a, std::size_t b) {
      return preference(op_of(spans_[a])) < preference(op_of(spans_[b]));
    })];
    const Op& op = op_of(s);
    // When the op was ready to start on this rank: issued by the host, its dependencies and its
    // stream's previous op done; `host_bound`: the host issue (or a host span) decided it.
    double ready_raw_s = raw_.start_s + op.issue_s;
    bool host_bound = true;
    auto after = [&](int d) {
      const double end_s = raw_end_s_[static_cast<std::size_t>(d)];
      if (end_s > ready_raw_s) {
        ready_raw_s = end_s;
        host_bound = program_.ops[static_cast<std::size_t>(d)].kind == OpKind::host;
      }
    };
    for (int d : op.deps) after(d);
    for (int p = s.op - 1; p >= 0; --p) {
      if (program_.ops[static_cast<std::size_t>(p)].stream == op.stream) {
        after(p);
        break;
      }
    }
    const double ready_s = std::clamp(warp_(ready_raw_s), from_s, to_s);
    (host_bound ? out.host_s : out.other_s) += ready_s - from_s;
    if (op.kind == OpKind::collective) {
      rows_.at({comm_group_of(t_, op), op.collective}).row.wait_s += to_s - ready_s;
    } else {
      out.other_s += to_s - ready_s;
    }
  }

  const Op& op_of(const Span& s) const { return program_.ops[static_cast<std::size_t>(s.op)]; }

  const TrainingSpec& t_;
  const Program& program_;
  int rank_;
  int stage_;
  const IterationTimeline& raw_;
  const internal::OuterStepWarp& warp_;
  std::vector<Span> spans_;
  std::vector<double> raw_end_s_;  // by op: its span's end in the raw timeline
  std::map<RowKey, RowSum> rows_;
};

}  // namespace

const char* to_string(CommGroup g) {
  switch (g) {
    case CommGroup::tp: return "TP";
    case CommGroup::sp: return "SP";
    case CommGroup::cp: return "CP";
    case CommGroup::pp: return "PP";
    case CommGroup::dp: return "DP";
    case CommGroup::dp_shard: return "DP-shard";
    case CommGroup::dp_replica: return "DP-replica";
    case CommGroup::ep: return "EP";
    case CommGroup::etp: return "ETP";
    case CommGroup::edp: return "EDP";
  }
  return "?";
}

std::optional<CommGroup> parse_comm_group(const std::string& name) {
  for (CommGroup g : kCommGroups) {
    if (name == to_string(g)) return g;
  }
  return std::nullopt;
}

CommGroup comm_group_of(const TrainingSpec& t, const Op& op) {
  switch (op.group) {
    case GroupKind::tensor_parallel:
      return t.sequence_parallel && (op.collective == network::CollectiveOp::all_gather ||
                                     op.collective == network::CollectiveOp::reduce_scatter)
                 ? CommGroup::sp
                 : CommGroup::tp;
    case GroupKind::pipeline_next:
    case GroupKind::pipeline_prev: return CommGroup::pp;
    case GroupKind::context_next:
    case GroupKind::context_parallel: return CommGroup::cp;
    case GroupKind::data_parallel: return CommGroup::dp;
    case GroupKind::shard: return CommGroup::dp_shard;
    case GroupKind::replica: return CommGroup::dp_replica;
    case GroupKind::expert_parallel: return CommGroup::ep;
    case GroupKind::expert_tensor_parallel: return CommGroup::etp;
    case GroupKind::expert_data_parallel: return CommGroup::edp;
  }
  return CommGroup::dp;
}

double BreakdownRow::bus_bw_bytes_per_s() const {
  if (time_s <= 0) return 0;
  return bytes * network::bus_bw_factor(collective, std::max(2, group_ranks)) / time_s;
}

IterationBreakdown break_down_iteration(const TrainingSpec& t, const std::vector<Program>& stages,
                                        const std::vector<int>& stage_of, const IterationTimeline& timeline) {
  const internal::OuterStepWarp warp = internal::outer_step_warp(t, timeline, stages, stage_of);
  std::map<int, RankAccount> accounts;
  for (const Span& s : timeline.spans) {
    const int stage = stage_of[static_cast<std::size_t>(s.rank)];
    auto it = accounts.find(s.rank);
    if (it == accounts.end()) {
      it = accounts
               .try_emplace(s.rank, t, stages[static_cast<std::size_t>(stage)], s.rank, stage, timeline, warp)
               .first;
    }
    it->second.add(s);
  }
  IterationBreakdown out;
  out.iteration_s = warp(timeline.end_s) - timeline.start_s;
  out.pipeline_stages = t.pp;
  out.micro_batches = t.micro_batches;
  out.sequence_parallel = t.sequence_parallel;
  for (auto& [rank, account] : accounts) out.ranks.push_back(account.finish(timeline.start_s, warp(timeline.end_s)));

  // The mean over the simulated ranks, summed in rank order (as the metrics sum).
  RankBreakdown& mean = out.mean;
  mean.rank = -1;
  mean.stage = -1;
  std::map<RowKey, RowSum> sums;
  for (const RankBreakdown& r : out.ranks) {
    mean.compute_s += r.compute_s;
    mean.host_s += r.host_s;
    mean.tail_s += r.tail_s;
    mean.other_s += r.other_s;
    for (const BreakdownRow& row : r.rows) {
      auto [it, fresh] = sums.try_emplace(key_of(row));
      RowSum& sum = it->second;
      if (fresh) {
        sum.row.group = row.group;
        sum.row.collective = row.collective;
        sum.row.group_ranks = row.group_ranks;
      }
      sum.row.group_ranks = std::max(sum.row.group_ranks, row.group_ranks);
      sum.row.count += row.count;
      sum.row.bytes += row.bytes;
      sum.row.time_s += row.time_s;
      sum.row.exposed_s += row.exposed_s;
      sum.row.wait_s += row.wait_s;
      for (const ChoiceCount& c : row.choices) sum.choices[{c.choice.algorithm, c.choice.protocol}] += c.count;
    }
  }
  const double ranks = static_cast<double>(std::max<std::size_t>(1, out.ranks.size()));
  mean.compute_s /= ranks;
  mean.host_s /= ranks;
  mean.tail_s /= ranks;
  mean.other_s /= ranks;
  mean.rows = finished(sums, 1.0 / ranks);
  for (const BreakdownRow& r : mean.rows) {
    mean.wait_s += r.wait_s;
    if (r.group == CommGroup::pp) mean.pipeline_wait_s += r.wait_s;
  }
  // The mean exposed time as the metrics compute it: the ranks' totals summed, then divided.
  for (const RankBreakdown& r : out.ranks) mean.exposed_comm_s += r.exposed_comm_s;
  mean.exposed_comm_s /= ranks;
  mean.bubble_s = mean.pipeline_wait_s + (t.pp > 1 ? mean.tail_s : 0.0);
  return out;
}

void to_json(nlohmann::json& j, const ChoiceCount& c) {
  j = nlohmann::json{{"algorithm", network::to_string(c.choice.algorithm)},
                     {"protocol", network::to_string(c.choice.protocol)},
                     {"count", c.count}};
}

void from_json(const nlohmann::json& j, ChoiceCount& c) {
  const auto algorithm = network::parse_algorithm(j.at("algorithm").get<std::string>());
  const auto protocol = network::parse_protocol(j.at("protocol").get<std::string>());
  COMMBOUND_CHECK(algorithm && protocol, "a breakdown's NCCL choice names no algorithm or protocol");
  c.choice = {*algorithm, *protocol};
  c.count = j.at("count").get<double>();
}

void to_json(nlohmann::json& j, const BreakdownRow& r) {
  j = nlohmann::json{{"group", to_string(r.group)},
                     {"collective", network::to_string(r.collective)},
                     {"group_ranks", r.group_ranks},
                     {"count", r.count},
                     {"bytes", r.bytes},
                     {"time_s", r.time_s},
                     {"exposed_s", r.exposed_s},
                     {"wait_s", r.wait_s},
                     {"bus_bw_bytes_per_s", r.bus_bw_bytes_per_s()},
                     {"choices", r.choices}};
}

void from_json(const nlohmann::json& j, BreakdownRow& r) {
  const auto group = parse_comm_group(j.at("group").get<std::string>());
  const auto collective = network::parse_collective_op(j.at("collective").get<std::string>());
  COMMBOUND_CHECK(group && collective, "a breakdown row names no group or collective");
  r.group = *group;
  r.collective = *collective;
  r.group_ranks = j.at("group_ranks").get<int>();
  r.count = j.at("count").get<double>();
  r.bytes = j.at("bytes").get<double>();
  r.time_s = j.at("time_s").get<double>();
  r.exposed_s = j.at("exposed_s").get<double>();
  r.wait_s = j.at("wait_s").get<double>();
  r.choices = j.at("choices").get<std::vector<ChoiceCount>>();
}

}  // namespace commbound::sim
