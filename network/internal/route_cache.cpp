#include "network/internal/route_cache.hpp"

#include <cstdint>

namespace commbound::network::internal {

RouteCache::Routes::Routes(Groups groups) : groups_(std::move(groups)), links_(group_links(groups_.edges)) {}

std::vector<double> RouteCache::Routes::rates(const std::vector<double>& cap_bytes_per_s) {
  for (const auto& [caps, rates] : rates_) {
    if (caps == cap_bytes_per_s) return rates;
  }
  rates_.emplace_back(cap_bytes_per_s, coupled_group_rates(links_, cap_bytes_per_s));
  return rates_.back().second;
}

double RouteCache::Routes::value(const std::vector<double>& key, const std::function<double()>& compute) {
  for (const auto& [k, v] : values_) {
    if (k == key) return v;
  }
  values_.emplace_back(key, compute());
  return values_.back().second;
}

RouteCache::Routes& RouteCache::routes(const Key& key, const std::function<Groups()>& groups_of) {
  auto it = routes_.find(key);
  if (it == routes_.end()) it = routes_.emplace(key, std::make_unique<Routes>(groups_of())).first;
  return *it->second;
}

AllToAllPlan& RouteCache::all_to_all_plan(const AllToAllKey& key, const std::function<AllToAllPlan()>& make) {
  auto it = all_to_all_plans_.find(key);
  if (it == all_to_all_plans_.end()) it = all_to_all_plans_.emplace(key, std::make_unique<AllToAllPlan>(make())).first;
  return *it->second;
}

std::size_t RouteCache::KeyHash::operator()(const Key& k) const {
  // FNV-1a over the algorithm, the merge flag, the ranks and the part.
  std::uint64_t h = 14695981039346656037ULL;
  auto add = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ULL;
  };
  add(static_cast<std::uint64_t>(k.algorithm));
  add(k.merge ? 1 : 0);
  for (int r : k.ranks) add(static_cast<std::uint64_t>(static_cast<std::uint32_t>(r)));
  add(static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.part)));
  return static_cast<std::size_t>(h);
}

}  // namespace commbound::network::internal
