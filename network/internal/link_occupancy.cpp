#include "network/internal/link_occupancy.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace commbound::network::internal {

bool LinkOccupancy::LinkState::contended() const {
  constexpr double kRoundingSlack = 1e-9;  // coupled_group_rates' saturation slack, as caps_feasible
  return users.size() > 1 && (uncapped > 0 || load_bytes_per_s > capacity_bytes_per_s * (1 + kRoundingSlack));
}

std::vector<LinkOccupancy::LinkState*> LinkOccupancy::user_lists(const std::vector<LinkId>& links) {
  std::vector<LinkState*> lists;
  lists.reserve(links.size());
  for (LinkId link : links) lists.push_back(&users_[link]);
  return lists;
}

std::vector<LinkOccupancy::Meeting> LinkOccupancy::add(Job& job, std::vector<int>& shared) {
  std::vector<Meeting> met;
  shared.clear();
  if (job.user_lists.size() != job.links->size()) job.user_lists = user_lists(*job.links);
  for (std::size_t k = 0; k < job.user_lists.size(); ++k) {
    LinkState& state = *job.user_lists[k];
    if (state.users.empty() && job.capacities_bytes_per_s != nullptr) {
      state.capacity_bytes_per_s = (*job.capacities_bytes_per_s)[k];
    }
    if (job.loads_bytes_per_s != nullptr) {
      state.load_bytes_per_s += (*job.loads_bytes_per_s)[k];
    } else {
      ++state.uncapped;
    }
    state.users.push_back({&job, static_cast<int>(k)});
    if (!state.contended()) continue;
    shared.push_back(static_cast<int>(k));
    for (const Use& u : state.users) {
      if (u.job == &job) continue;
      auto it = std::find_if(met.begin(), met.end(), [&u](const Meeting& m) { return m.job == u.job; });
      if (it == met.end()) it = met.insert(met.end(), Meeting{u.job, {}});
      it->links.push_back(u.link);
    }
  }
  jobs_.push_back(&job);
  return met;
}

void LinkOccupancy::remove(Job& job) {
  // A link's entry stays when it empties: the next job on it reuses it without allocating.
  for (std::size_t k = 0; k < job.user_lists.size(); ++k) {
    LinkState& state = *job.user_lists[k];
    state.users.erase(std::find_if(state.users.begin(), state.users.end(), [&job](const Use& u) { return u.job == &job; }));
    if (job.loads_bytes_per_s != nullptr) {
      state.load_bytes_per_s -= (*job.loads_bytes_per_s)[k];
    } else {
      --state.uncapped;
    }
    if (state.users.empty()) state.load_bytes_per_s = 0;  // no rounding residue carried to the next
  }
  job.user_lists.clear();
  jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
}

void LinkOccupancy::disable() {
  if (!enabled_) return;
  enabled_ = false;
  // Mark every job's segments before the first simcall: starting flows lets other actors run. A job
  // that marked some cannot end before they are started (it waits for them).
  std::vector<Job*> marked;
  for (Job* job : jobs_) {
    std::vector<int> all(job->links->size());
    std::iota(all.begin(), all.end(), 0);
    if (job->mark && job->mark(all)) marked.push_back(job);
  }
  for (Job* job : marked) job->start_marked();
}

}  // namespace commbound::network::internal
