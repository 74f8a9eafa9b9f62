#include "sim/workload/moe_routing.hpp"

#include "core/check.hpp"
#include "core/enum_names.hpp"
#include "core/number_text.hpp"
#include "core/one_line.hpp"
#include "core/splitmix64.hpp"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <tuple>
#include <utility>

namespace commbound::sim::moe {
namespace {

// An unbiased integer in [0, n) from the engine's 64-bit outputs: reject the top
// 2^64 mod n values, so every residue has the same number of preimages.
std::uint64_t bounded(std::mt19937_64& engine, std::uint64_t n) {
  const std::uint64_t rejected = (0 - n) % n;  // 2^64 mod n
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - rejected;  // accept x <= limit
  std::uint64_t x = engine();
  while (x > limit) x = engine();
  return x % n;
}

// The experts in popularity order for `layer`: a Fisher-Yates shuffle of 0..E-1.
std::vector<int> popularity_order(std::uint64_t seed, int layer, int experts) {
  // splitmix64 mixes (seed, layer) into one engine seed, so that neighbouring layers and seeds
  // start far apart in mt19937_64's sequence.
  std::mt19937_64 engine(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(static_cast<std::int64_t>(layer)))));
  std::vector<int> order(static_cast<std::size_t>(experts));
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = order.size(); i > 1; --i) {
    const std::size_t j = bounded(engine, i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

// Replicas per expert (R of the model's 3) and slots S = max(E, ep).
int replicas_per_expert(const LayerShape& shape) { return shape.ep_ranks > shape.experts ? shape.ep_ranks / shape.experts : 1; }
int slot_count(const LayerShape& shape) { return std::max(shape.experts, shape.ep_ranks); }

// q_s: the probability that a token takes slot s (model, 3).
std::vector<double> slot_pick_probabilities(const Routing& routing, const LayerShape& shape, int layer) {
  const std::vector<double> q = expert_pick_probabilities(routing, shape, layer);
  const int replicas = replicas_per_expert(shape);
  std::vector<double> slots(static_cast<std::size_t>(slot_count(shape)));
  for (std::size_t s = 0; s < slots.size(); ++s) slots[s] = q[s / static_cast<std::size_t>(replicas)] / replicas;
  return slots;
}

// C of the model's 5: assignments a source rank keeps per slot; infinity when dropless.
double slot_capacity(const Routing& routing, const LayerShape& shape) {
  if (routing.capacity_factor <= 0) return std::numeric_limits<double>::infinity();
  return std::ceil(routing.capacity_factor * shape.tokens_per_rank * shape.top_k / slot_count(shape));
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }
double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * std::acos(-1.0)); }

// Kept and dropped counts of one source rank for one slot when its count is X ~ N(mean, variance)
// and it keeps min(X, capacity) (model, 5). With a = (capacity - mean) / sd, Q(a) = 1 - Phi(a) and
// Y = min(Z, a) for a standard normal Z: E[Y] = a Q(a) - phi(a), E[Y^2] = Phi(a) - a phi(a) + a^2 Q(a),
// so kept = mean + sd E[Y], its variance variance Var(Y), dropped = sd (phi(a) - a Q(a)). Written in
// the tails (Q, phi) so that a capacity far above the count gives back mean and variance exactly.
struct ClippedCount {
  double kept_mean = 0, kept_variance = 0, dropped_mean = 0;
};

ClippedCount clip_count(double mean, double variance, double capacity) {
  if (!std::isfinite(capacity)) return {mean, variance, 0.0};
  if (variance <= 0) return {std::min(mean, capacity), 0.0, std::max(0.0, mean - capacity)};
  const double sd = std::sqrt(variance);
  const double a = (capacity - mean) / sd;
  const double tail = 0.5 * std::erfc(a / std::sqrt(2.0)), pdf = normal_pdf(a);
  const double y_mean = a * tail - pdf;
  const double y_square = (1 - tail) - a * pdf + a * a * tail;
  return {mean + sd * y_mean, variance * std::max(0.0, y_square - y_mean * y_mean), std::max(0.0, sd * (pdf - a * tail))};
}

// 1 - prod_g Phi((x - mean_g) / sd_g)^count_g over the groups of equal normals.
struct NormalGroup {
  double mean = 0, sd = 0;
  int count = 0;
};

double above_maximum(const std::vector<NormalGroup>& groups, double x) {
  double below = 1;  // P(every X_i <= x)
  for (const NormalGroup& g : groups) {
    const double cdf = g.sd > 0 ? normal_cdf((x - g.mean) / g.sd) : (x >= g.mean ? 1.0 : 0.0);
    below *= g.count == 1 ? cdf : std::pow(cdf, g.count);
    if (below == 0) break;
  }
  return 1 - below;
}

// Adaptive Simpson (Lyness 1969): split until the two halves agree with the whole within 15 eps,
// then add the Richardson correction.
template <class F>
double adaptive_simpson(const F& f, double a, double b, double fa, double fm, double fb, double whole, double eps, int depth) {
  const double m = 0.5 * (a + b);
  const double lm = 0.5 * (a + m), rm = 0.5 * (m + b);
  const double flm = f(lm), frm = f(rm);
  const double left = (m - a) / 6 * (fa + 4 * flm + fm);
  const double right = (b - m) / 6 * (fm + 4 * frm + fb);
  const double delta = left + right - whole;
  if (depth <= 0 || std::abs(delta) <= 15 * eps) return left + right + delta / 15;
  return adaptive_simpson(f, a, m, fa, flm, fm, left, eps / 2, depth - 1) +
         adaptive_simpson(f, m, b, fm, frm, fb, right, eps / 2, depth - 1);
}

}  // namespace

std::vector<double> expert_shares(const Routing& routing, const LayerShape& shape, int layer) {
  const auto experts = static_cast<std::size_t>(shape.experts);
  std::vector<double> weight(experts, 1.0);
  if (routing.kind == RoutingKind::zipf) {
    const std::vector<int> order = popularity_order(routing.seed, layer, shape.experts);
    // Normalised in popularity order, so that every layer's shares are the same numbers rearranged.
    double total = 0;
    for (std::size_t i = 0; i < experts; ++i) total += std::pow(static_cast<double>(i + 1), -routing.zipf_s);
    for (std::size_t i = 0; i < experts; ++i) weight[static_cast<std::size_t>(order[i])] = std::pow(static_cast<double>(i + 1), -routing.zipf_s) / total;
    return weight;
  } else if (routing.kind == RoutingKind::histogram) {
    COMMBOUND_CHECK(routing.histogram.size() == experts, "a histogram of one load per expert");
    weight = routing.histogram;
  }
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  COMMBOUND_CHECK(total > 0, "some expert has a share");
  for (double& w : weight) w /= total;
  return weight;
}

std::vector<double> expert_pick_probabilities(const Routing& routing, const LayerShape& shape, int layer) {
  const std::vector<double> share = expert_shares(routing, shape, layer);
  const double k = shape.top_k;
  // Water-filling (model, 2): with the experts by share, largest first, cap the first `capped` at
  // 1 and give the rest (k - capped) in proportion to their shares; the smallest `capped` for which
  // the largest uncapped one stays <= 1 is the c of q_e = min(1, c p_e).
  std::vector<std::size_t> by_share(share.size());
  std::iota(by_share.begin(), by_share.end(), std::size_t{0});
  std::stable_sort(by_share.begin(), by_share.end(), [&](std::size_t a, std::size_t b) { return share[a] > share[b]; });
  double rest = 1.0;  // the shares of the uncapped experts
  std::size_t capped = 0;
  while (capped < by_share.size() && (k - capped) * share[by_share[capped]] > rest) {
    rest -= share[by_share[capped]];
    ++capped;
  }
  COMMBOUND_CHECK(capped <= static_cast<std::size_t>(shape.top_k), "at least top_k experts with a share");
  std::vector<double> q(share.size());
  for (std::size_t i = 0; i < by_share.size(); ++i) {
    const std::size_t e = by_share[i];
    q[e] = i < capped ? 1.0 : (rest > 0 ? (k - capped) * share[e] / rest : 0.0);
  }
  return q;
}

double expected_max_of_normals(const std::vector<double>& means, const std::vector<double>& stddevs) {
  COMMBOUND_CHECK(!means.empty() && means.size() == stddevs.size(), "one stddev per mean, at least one");
  std::vector<std::pair<double, double>> normals(means.size());
  for (std::size_t i = 0; i < means.size(); ++i) {
    COMMBOUND_CHECK(stddevs[i] >= 0, "a stddev >= 0");
    normals[i] = {means[i], stddevs[i]};
  }
  std::sort(normals.begin(), normals.end());
  // Below `low` the product is below Phi(-9) ~ 1e-19 (one factor alone is); the integral of what
  // is left out is below 1e-20 sd.
  double low = -std::numeric_limits<double>::infinity(), sd_max = 0;
  for (const auto& [mean, sd] : normals) {
    low = std::max(low, mean - 9 * sd);
    sd_max = std::max(sd_max, sd);
  }
  if (sd_max == 0) return normals.back().first;
  // A normal 10 sd below `low` has Phi >= 1 - 8e-24 wherever the integral looks: left out.
  // Above `high` every factor is within 8e-24 of 1.
  std::vector<NormalGroup> groups;
  double high = low;
  for (const auto& [mean, sd] : normals) {
    if (mean + 10 * sd <= low) continue;
    high = std::max(high, mean + 10 * sd);
    if (!groups.empty() && groups.back().mean == mean && groups.back().sd == sd) {
      ++groups.back().count;
    } else {
      groups.push_back({mean, sd, 1});
    }
  }
  const auto f = [&](double x) { return above_maximum(groups, x); };
  // E[max] = low + integral_low^high (1 - G) - integral_-inf^low G, the last below 1e-20 sd.
  // Panels one smallest-sd wide at most (16 at least), so that no step of G hides between the first
  // samples.
  double sd_min = sd_max;
  for (const NormalGroup& g : groups) {
    if (g.sd > 0) sd_min = std::min(sd_min, g.sd);
  }
  const int panels = static_cast<int>(std::clamp(std::ceil((high - low) / sd_min), 16.0, 4096.0));
  const double eps = 1e-5 * sd_max / panels;
  const double width = (high - low) / panels;
  constexpr int kMaxDepth = 40;  // 2^40 subintervals per panel: never reached by smooth integrands
  double integral = 0;
  double fa = f(low);
  for (int p = 0; p < panels; ++p) {
    const double a = low + p * width, b = p + 1 == panels ? high : a + width;
    const double fm = f(0.5 * (a + b)), fb = f(b);
    integral += adaptive_simpson(f, a, b, fa, fm, fb, (b - a) / 6 * (fa + 4 * fm + fb), eps, kMaxDepth);
    fa = fb;
  }
  return low + integral;
}

double LayerRouting::peer_tokens(int from, int to) const {
  const auto ep = static_cast<int>(tokens_to_rank.size());
  COMMBOUND_CHECK(from >= 0 && from < ep && to >= 0 && to < ep, "ranks of the EP group");
  return tokens_to_rank[static_cast<std::size_t>(to)];
}

LayerRouting route_layer(const Routing& routing, const LayerShape& shape, int layer) {
  const Status ok = check_routing(routing, shape);
  COMMBOUND_CHECK(ok.has_value(), "route_layer of a routing its shape cannot use (check_routing first)");
  const int ep = shape.ep_ranks;
  const std::vector<double> q = slot_pick_probabilities(routing, shape, layer);
  const std::size_t slots_per_rank = q.size() / static_cast<std::size_t>(ep);
  const int replicas = replicas_per_expert(shape);
  const double t = shape.tokens_per_rank;
  const double capacity = slot_capacity(routing, shape);

  LayerRouting out;
  out.expert_tokens_mean.assign(static_cast<std::size_t>(shape.experts), 0.0);
  out.rank_tokens_mean.assign(static_cast<std::size_t>(ep), 0.0);
  std::vector<double> rank_variance(static_cast<std::size_t>(ep), 0.0);
  double dropped = 0;
  for (std::size_t s = 0; s < q.size(); ++s) {
    // One source rank's count for slot s: mean = Poisson variance = t q_s (model, 5 and 6); the
    // ep source ranks route different tokens, so their kept counts add independently.
    const auto [kept_mean, kept_variance, dropped_mean] = clip_count(t * q[s], t * q[s], capacity);
    // Padded: every slot moves and computes exactly its capacity, whatever it kept.
    const double computed = routing.pad_to_capacity ? capacity : kept_mean;
    dropped += ep * dropped_mean;
    out.expert_tokens_mean[s / static_cast<std::size_t>(replicas)] += ep * computed;
    out.rank_tokens_mean[s / slots_per_rank] += ep * computed;
    rank_variance[s / slots_per_rank] += routing.pad_to_capacity ? 0 : ep * kept_variance;
  }
  out.rank_tokens_stddev.resize(rank_variance.size());
  for (std::size_t r = 0; r < rank_variance.size(); ++r) out.rank_tokens_stddev[r] = std::sqrt(rank_variance[r]);
  out.busiest_rank = static_cast<int>(std::max_element(out.rank_tokens_mean.begin(), out.rank_tokens_mean.end()) -
                                      out.rank_tokens_mean.begin());
  out.busiest_rank_tokens = expected_max_of_normals(out.rank_tokens_mean, out.rank_tokens_stddev);
  out.tokens_to_rank.resize(out.rank_tokens_mean.size());
  for (std::size_t j = 0; j < out.rank_tokens_mean.size(); ++j) out.tokens_to_rank[j] = out.rank_tokens_mean[j] / ep;
  const double routed = ep * t * shape.top_k;
  out.dropped_fraction = routed > 0 ? dropped / routed : 0.0;
  return out;
}

MonteCarloRouting monte_carlo_route_layer(const Routing& routing, const LayerShape& shape, int layer, int trials,
                                          std::uint64_t seed) {
  const Status ok = check_routing(routing, shape);
  COMMBOUND_CHECK(ok.has_value(), "monte_carlo_route_layer of a routing its shape cannot use (check_routing first)");
  COMMBOUND_CHECK(trials >= 2, "two trials at least (a standard error needs two)");
  const auto ep = static_cast<std::size_t>(shape.ep_ranks);
  const std::vector<double> q = slot_pick_probabilities(routing, shape, layer);
  const std::size_t slots_per_rank = q.size() / ep;
  const double tokens = std::round(shape.tokens_per_rank);
  const double per_rank_draws = tokens * shape.top_k;
  COMMBOUND_CHECK(per_rank_draws * static_cast<double>(ep) < 4294967296.0, "assignments fit gsl_ran_multinomial's unsigned int");
  const bool dropless = routing.capacity_factor <= 0;
  const double capacity = slot_capacity(routing, LayerShape{shape.experts, shape.top_k, shape.ep_ranks, tokens});

  std::unique_ptr<gsl_rng, decltype(&gsl_rng_free)> rng(gsl_rng_alloc(gsl_rng_mt19937), gsl_rng_free);
  gsl_rng_set(rng.get(), static_cast<unsigned long>(seed));
  // Shares of one draw: per rank (dropless) or per slot; gsl_ran_multinomial normalises them.
  std::vector<double> rank_share(ep, 0.0);
  for (std::size_t s = 0; s < q.size(); ++s) rank_share[s / slots_per_rank] += q[s];
  std::vector<unsigned int> counts(dropless ? ep : q.size());
  std::vector<double> load(ep);
  double sum = 0, sum_square = 0, dropped_sum = 0;
  for (int trial = 0; trial < trials; ++trial) {
    double dropped = 0;
    if (dropless) {
      gsl_ran_multinomial(rng.get(), ep, static_cast<unsigned int>(per_rank_draws * static_cast<double>(ep)), rank_share.data(),
                          counts.data());
      for (std::size_t r = 0; r < ep; ++r) load[r] = counts[r];
    } else {
      std::fill(load.begin(), load.end(), 0.0);
      for (std::size_t source = 0; source < ep; ++source) {
        gsl_ran_multinomial(rng.get(), q.size(), static_cast<unsigned int>(per_rank_draws), q.data(), counts.data());
        for (std::size_t s = 0; s < q.size(); ++s) {
          const double kept = std::min(static_cast<double>(counts[s]), capacity);
          load[s / slots_per_rank] += routing.pad_to_capacity ? capacity : kept;
          dropped += counts[s] - kept;
        }
      }
    }
    const double busiest = *std::max_element(load.begin(), load.end());
    sum += busiest;
    sum_square += busiest * busiest;
    const double routed = per_rank_draws * static_cast<double>(ep);
    dropped_sum += routed > 0 ? dropped / routed : 0.0;
  }
  MonteCarloRouting out;
  out.busiest_rank_tokens = sum / trials;
  const double variance = std::max(0.0, (sum_square - sum * sum / trials) / (trials - 1));
  out.busiest_rank_tokens_stderr = std::sqrt(variance / trials);
  out.dropped_fraction = dropped_sum / trials;
  return out;
}

}  // namespace commbound::sim::moe
