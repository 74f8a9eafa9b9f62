#include "network/tuner_plugin.hpp"

#include <algorithm>
#include <cmath>

namespace commbound::network {
namespace {

using Point = std::pair<double, double>;

// log2 of a coordinate, 0 taken as a small positive number as the plugin does.
Point log2_point(const Point& p) {
  constexpr double kZero = 1e-6;
  return {std::log2(p.first > 0 ? p.first : kZero), std::log2(p.second > 0 ? p.second : kZero)};
}

double distance_to_segment(const Point& p, const Point& a, const Point& b) {
  const double dx = b.first - a.first, dy = b.second - a.second;
  const double len2 = dx * dx + dy * dy;
  double t = len2 > 0 ? ((p.first - a.first) * dx + (p.second - a.second) * dy) / len2 : 0;
  t = std::clamp(t, 0.0, 1.0);
  return std::hypot(p.first - (a.first + t * dx), p.second - (a.second + t * dy));
}

}  // namespace

bool region_holds(const TunerRegion& region, double bytes, double ranks) {
  constexpr double kEdge = 1e-10;  // the plugin's eps
  const Point p = log2_point({bytes, ranks});
  std::vector<Point> v;
  for (const Point& q : region.vertices) v.push_back(log2_point(q));
  const std::size_t n = v.size();
  if (n < 2) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (distance_to_segment(p, v[i], v[(i + 1) % n]) < kEdge) return true;
  }
  // Even-odd ray casting toward larger sizes.
  bool inside = false;
  for (std::size_t i = 0; i < n; ++i) {
    const Point& a = v[i];
    const Point& b = v[(i + 1) % n];
    if ((a.second > p.second) != (b.second > p.second)) {
      const double x = a.first + (p.second - a.second) * (b.first - a.first) / (b.second - a.second);
      if (x > p.first) inside = !inside;
    }
  }
  return inside;
}

std::optional<CollectiveChoice> TunerPlugin::choose(const CallShape& shape,
                                                    const std::function<bool(const CollectiveChoice&)>& runs) const {
  if (shape.nodes < min_nodes || shape.nodes <= 0 || shape.ranks % shape.nodes != 0) return std::nullopt;
  const int per_node = shape.ranks / shape.nodes;
  for (const TunerRegion& r : regions) {
    if (r.op == shape.op && r.gpus_per_node == per_node && runs(r.choice) &&
        region_holds(r, shape.size_bytes, shape.ranks)) {
      return r.choice;
    }
  }
  return std::nullopt;
}

}  // namespace commbound::network
