#include "network/internal/link_occupancy.hpp"

#include <algorithm>
#include <utility>

namespace commbound::network::internal {

std::vector<std::vector<LinkOccupancy::Job*>*> LinkOccupancy::user_lists(const std::vector<LinkId>& links) {
  std::vector<std::vector<Job*>*> lists;
  lists.reserve(links.size());
  for (LinkId link : links) lists.push_back(&users_[link]);
  return lists;
}

std::vector<LinkOccupancy::Job*> LinkOccupancy::add(Job& job) {
  std::vector<Job*> met;
  if (job.user_lists.size() != job.links->size()) job.user_lists = user_lists(*job.links);
  for (std::vector<Job*>* users : job.user_lists) {
    for (Job* other : *users) {
      if (std::find(met.begin(), met.end(), other) == met.end()) met.push_back(other);
    }
    users->push_back(&job);
  }
  for (Job* other : met) other->shared = true;
  if (!met.empty()) job.shared = true;
  jobs_.push_back(&job);
  return met;
}

void LinkOccupancy::remove(Job& job) {
  // A link's entry stays when it empties: the next job on it reuses it without allocating.
  for (std::vector<Job*>* users : job.user_lists) users->erase(std::find(users->begin(), users->end(), &job));
  job.user_lists.clear();
  jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
}

std::function<void()> LinkOccupancy::take_materialize(Job& job) {
  std::function<void()> m = std::move(job.materialize);
  job.materialize = nullptr;
  return m;
}

void LinkOccupancy::disable() {
  if (!enabled_) return;
  enabled_ = false;
  // Take every replay before the first simcall: materializing one lets other actors run.
  std::vector<std::function<void()>> replays;
  for (Job* job : jobs_) {
    job->shared = true;
    if (std::function<void()> m = take_materialize(*job)) replays.push_back(std::move(m));
  }
  for (auto& m : replays) m();
}

}  // namespace commbound::network::internal
