#include "network/internal/link_occupancy.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace commbound::network::internal {

bool LinkOccupancy::LinkState::contended() const {
  return users.size() > 1 && (uncapped > 0 || exceeds(load_bytes_per_s, capacity_bytes_per_s));
}

std::vector<LinkOccupancy::LinkState*> LinkOccupancy::link_states(const std::vector<LinkId>& links) {
  std::vector<LinkState*> lists;
  lists.reserve(links.size());
  for (LinkId link : links) lists.push_back(&states_[link]);
  return lists;
}

std::vector<LinkOccupancy::Meeting> LinkOccupancy::add(Job& job, std::vector<int>& shared) {
  std::vector<Meeting> met;
  shared.clear();
  if (job.link_states.size() != job.links->size()) job.link_states = link_states(*job.links);
  for (std::size_t k = 0; k < job.link_states.size(); ++k) {
    LinkState& state = *job.link_states[k];
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
  for (std::size_t k = 0; k < job.link_states.size(); ++k) {
    LinkState& state = *job.link_states[k];
    state.users.erase(std::find_if(state.users.begin(), state.users.end(), [&job](const Use& u) { return u.job == &job; }));
    if (job.loads_bytes_per_s != nullptr) {
      state.load_bytes_per_s -= (*job.loads_bytes_per_s)[k];
    } else {
      --state.uncapped;
    }
    if (state.users.empty()) state.load_bytes_per_s = 0;  // no rounding residue carried to the next
  }
  job.link_states.clear();
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
