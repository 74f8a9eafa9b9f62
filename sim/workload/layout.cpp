#include "sim/workload/layout.hpp"

namespace commbound::sim {
namespace {

// Ranks `count` in all, `stride` apart, starting from `rank`'s place within runs of
// stride x count ranks (a stage's ranks are a multiple of every run).
std::vector<int> strided_group(int rank, int stride, int count) {
  const int run = stride * count;
  const int first = rank - rank % run + rank % stride;
  std::vector<int> g(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) g[static_cast<std::size_t>(i)] = first + i * stride;
  return g;
}

}  // namespace

Coords Layout::coords(int rank) const {
  Coords c;
  c.tp = rank % tp_;
  rank /= tp_;
  c.cp = rank % cp_;
  rank /= cp_;
  c.dp = rank % dp_;
  c.pp = rank / dp_;
  return c;
}

std::vector<int> Layout::dp_group(int rank) const {
  Coords c = coords(rank);
  std::vector<int> g;
  for (c.dp = 0; c.dp < dp_; ++c.dp) {
    for (c.cp = 0; c.cp < cp_; ++c.cp) g.push_back(this->rank(c));
  }
  return g;
}

std::vector<int> Layout::cp_group(int rank) const {
  Coords c = coords(rank);
  std::vector<int> g;
  for (c.cp = 0; c.cp < cp_; ++c.cp) g.push_back(this->rank(c));
  return g;
}

std::vector<int> Layout::cp_ring_pair(int rank) const {
  Coords c = coords(rank);
  if (cp_ == 1) return {rank};
  c.cp = (c.cp + 1) % cp_;
  return {rank, this->rank(c)};
}

std::vector<int> Layout::tp_group(int rank) const {
  Coords c = coords(rank);
  std::vector<int> g;
  for (c.tp = 0; c.tp < tp_; ++c.tp) g.push_back(this->rank(c));
  return g;
}

std::vector<int> Layout::shard_group(int rank, int shard) const {
  const std::vector<int> replicas = dp_group(rank);  // in replica-index order
  const Coords c = coords(rank);
  const int q = c.dp * cp_ + c.cp;
  const int first = q - q % shard;
  return std::vector<int>(replicas.begin() + first, replicas.begin() + first + shard);
}

std::vector<int> Layout::replica_group(int rank, int shard) const {
  const std::vector<int> replicas = dp_group(rank);
  const Coords c = coords(rank);
  std::vector<int> g;
  for (int q = (c.dp * cp_ + c.cp) % shard; q < static_cast<int>(replicas.size()); q += shard) g.push_back(replicas[q]);
  return g;
}

std::vector<int> Layout::pipeline_pair(int rank, bool next, bool wrap) const {
  Coords c = coords(rank);
  int peer_stage = c.pp + (next ? 1 : -1);
  if (wrap) peer_stage = (peer_stage + pp_) % pp_;
  if (peer_stage < 0 || peer_stage >= pp_ || pp_ == 1) return {rank};
  c.pp = peer_stage;
  const int peer = this->rank(c);
  return next ? std::vector<int>{rank, peer} : std::vector<int>{peer, rank};
}

std::vector<int> Layout::ep_group(int rank) const { return strided_group(rank, etp_, ep_); }

std::vector<int> Layout::etp_group(int rank) const { return strided_group(rank, 1, etp_); }

std::vector<int> Layout::expert_dp_group(int rank) const {
  const int stage_ranks = tp_ * cp_ * dp_;
  return strided_group(rank, ep_ * etp_, stage_ranks / (ep_ * etp_));
}

}  // namespace commbound::sim
