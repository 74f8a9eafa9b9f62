// MoE routing: how many tokens each expert and each expert-parallel rank computes in one
// mixture-of-experts layer, and what the busiest rank expects, deterministically and without
// simulating every token.
//
// Why: an MoE layer's step waits for its busiest expert-parallel (EP) rank, whose expert GEMMs hold
// the most tokens and whose all-to-all receives the most bytes. Under a skewed router that rank
// carries far more than the mean, and even under a perfectly uniform router the largest of `ep`
// random loads lies some standard deviations above it. The engine asks once per MoE layer.
//
// The model.
// 1. Shares. Expert e receives a share p_e of the routed (token, expert) assignments, sum p_e = 1:
//    uniform 1/E; Zipf(s): the i-th most popular expert (i = 1..E) gets p proportional to 1/i^s,
//    the experts put in popularity order by a permutation drawn from (seed, layer), so layers
//    differ but every run agrees; histogram: the user's measured loads, normalised.
// 2. Distinct top-k. A token picks top_k distinct experts, so it picks expert e with probability
//    q_e = top_k p_e (sum q_e = top_k), and q_e cannot exceed 1 (an expert sees a token at most
//    once). Shares with top_k p_e > 1 are water-filled: those experts take every token (q_e = 1)
//    and their excess goes to the others in proportion to their shares,
//    q_e = min(1, c p_e) with the one c that makes sum q_e = top_k (sum min(1, c p_e) rises
//    continuously in c from 0 to the number of experts with p_e > 0, which must be >= top_k).
// 3. Slots. With ep <= E (ep divides E) rank r holds experts [r E/ep, (r+1) E/ep). With ep > E
//    (E divides ep) each expert is replicated on R = ep/E consecutive ranks, rank r holding a
//    replica of expert r / R, and a token sent to the expert goes to one replica uniformly at
//    random (the simplest balancing of redundant experts, as DeepSeek-V3 deploys them). Either way
//    the layer has S = max(E, ep) expert slots, slot s taking a token with probability
//    q_s = q_e / R.
// 4. Counts. A source rank's t = tokens_per_rank tokens make n_i = t top_k assignments; its count
//    per slot is taken as multinomial(n_i, q_s / top_k): exact for top_k = 1, and for top_k > 1 the
//    "close to multinomial" approximation of a router drawing distinct experts. (Drawing without
//    replacement lowers a rank's variance by about the factor (1 - q_e) E / (E - 1), the
//    hypergeometric's finite-population correction when uniform: the model is conservative, its
//    busiest rank's excess over the mean, by that estimate, about 6% too high at E = 64,
//    top_k = 8 and 1.4% at E = 256, top_k = 8; sampling distinct picks token by token, 400 trials
//    at ep = 8 and 4096 tokens a rank, gave 5.5% and 1.6%, each +-2%; not in the test suite,
//    which samples the multinomial.)
// 5. Capacity. With capacity_factor cf > 0, each source rank keeps at most
//    C = ceil(cf t top_k / S) of its assignments per slot and drops the rest before the dispatch
//    (Megatron-core's drop policy: capacity from the local tokens, dropped on the sending rank;
//    S = E when ep <= E, as in Megatron). A slot's count is approximated by a normal of mean t q_s
//    and variance t q_s (the Poisson variance, see 6), and min(X, C) of a normal has closed forms:
//    with a = (C - m) / sd, Q(a) = 1 - Phi(a), E[min] = m + sd (a Q(a) - phi(a)),
//    E[(X - C)+] = sd (phi(a) - a Q(a)) dropped, Var[min] = sd^2 (Phi(a) - a phi(a) + a^2 Q(a)
//    - (a Q(a) - phi(a))^2). A rank's load sums the kept counts over the ep source ranks
//    (independent: different tokens) and its slots, means and variances. (The Poisson variance
//    overstates the multinomial count's, t q_s (1 - q_s / top_k), by 1 / (1 - q_s / top_k): 1.6%
//    for a 1/64 share, so the drops by about 0.8%; the test's cf = 1 cases meet the Monte Carlo
//    within 3%.) Padded to the capacity (Megatron-Core's moe_pad_expert_input_to_capacity), every
//    source rank fills every slot to C with padding rows: each slot then moves and computes
//    exactly C per source rank, ep C an expert slot, with no spread; the drops stay as above.
// 6. The busiest rank. A rank's load is a sum of many counts, so normal; the rank loads of a
//    multinomial are exactly independent normals N(m_r, m_r) (the Poisson variance) conditioned on
//    their sum, and conditioning shifts rank r by p_r times one common deviation (p_r its share),
//    which moves the maximum not at all when the competing ranks have equal shares and by a
//    second-order term otherwise. So the ranks are taken as independent normals N(m_r, v_r), v_r
//    the sum of the Poisson (then clipped) variances, and
//        E[max] = L + integral_L^U (1 - prod_r Phi((x - m_r) / sd_r)) dx
//    (exact for independent normals; for equal means it is sd times the Gaussian order statistic
//    of ep, Harter 1961), integrated numerically (expected_max_of_normals). The rank loads'
//    own standard deviation is sqrt(m_r (1 - p_r)); with equal shares the maximum lies
//    e_ep sqrt(ep / (ep - 1)) of those above the mean (1.5219 for ep = 8: the negative covariance
//    of a fixed total raises it by sqrt(8/7) over the independent e_8 = 1.4236).
// 7. Dispatch. Every source rank's tokens are statistically alike, so rank i sends rank j its
//    share of j's load: peer_tokens(i, j) = m_j / ep (the diagonal stays on the rank, no link).
//
// Determinism: the permutation comes from std::mt19937_64 (its output sequence is fixed by the C++
// standard) with our own unbiased bounded draw and Fisher-Yates shuffle (std::uniform_int_distribution
// and std::shuffle differ between standard libraries); everything else is arithmetic. The Monte
// Carlo check uses GSL's MT19937 and gsl_ran_multinomial (the same code on every platform).
#pragma once

#include "sim/scenario/moe_spec.hpp"

#include <cstdint>
#include <vector>

namespace commbound::sim::moe {

// Each expert's share p_e of the routed assignments in `layer` (model, 1): E entries summing to 1.
// Precondition: check_routing(routing, shape) succeeds (only the shape's experts is read).
std::vector<double> expert_shares(const Routing& routing, const LayerShape& shape, int layer);

// The probability q_e that a token picks expert e (model, 2): E entries in [0, 1] summing to
// top_k. Precondition: check_routing(routing, shape) succeeds.
std::vector<double> expert_pick_probabilities(const Routing& routing, const LayerShape& shape, int layer);

// The expected tokens of one MoE layer, all in tokens (one token-expert assignment counts one).
struct LayerRouting {
  std::vector<double> expert_tokens_mean;  // E: tokens each expert computes (after drops), all ranks' together
  std::vector<double> rank_tokens_mean;    // ep: tokens each rank's experts compute
  std::vector<double> rank_tokens_stddev;  // ep: the standard deviation of each rank's load as the order statistic uses it (model, 6)
  double busiest_rank_tokens = 0;          // E[max over the ep ranks of a rank's tokens] (model, 6)
  int busiest_rank = 0;                    // the rank whose mean load is largest (the lowest such index)
  // ep: tokens each source rank sends rank j in the dispatch (the combine returns them), the same
  // for every source rank (model, 7), so the ep x ep matrix is kept as this one row (at ep = 1024 the
  // full matrix would be 8 MB per layer); rank j's own share stays on the rank.
  std::vector<double> tokens_to_rank;
  double dropped_fraction = 0;  // of the ep t top_k assignments, the expected fraction over capacity

  // Tokens rank `from` sends rank `to` (from == to: kept local), 0 <= from, to < ep.
  double peer_tokens(int from, int to) const;
};

// One MoE layer routed by `routing` (the model above). `layer` with routing.seed picks which
// experts are popular. Costs O(S log S) plus the integral of model 6, about 140 evaluations of a
// product over the distinct (mean, stddev) ranks that can be the maximum: at ep = 1024, E = 256,
// top-8 0.03 ms uniform, 0.1-0.3 ms Zipf, 0.4-1.2 ms for a histogram of 101 distinct loads (test
// MoeRouting.RouteLayerIsFastAtThousandRanks, Release, a shared 2-core machine). A pure function of
// its arguments, bit-identical across runs: an iteration repeats, so compute each layer's once per
// run and keep it (by layer index). Precondition: check_routing(routing, shape) succeeds (an
// always-on check).
LayerRouting route_layer(const Routing& routing, const LayerShape& shape, int layer);

// E[max(X_1..X_n)] for independent X_i ~ N(means[i], stddevs[i]^2) (stddev 0: the constant), by
// integrating 1 - prod Phi over where the product is neither 0 nor 1 to double precision
// (adaptive Simpson, absolute tolerance 1e-7 of the largest stddev). Ranks with equal (mean,
// stddev) are integrated as one power. Precondition: same sizes, at least one, stddevs >= 0.
double expected_max_of_normals(const std::vector<double>& means, const std::vector<double>& stddevs);

// The Monte Carlo check of route_layer: means over seeded trials of whole-layer draws.
struct MonteCarloRouting {
  double busiest_rank_tokens = 0;         // mean over trials of the largest rank load
  double busiest_rank_tokens_stderr = 0;  // its standard error (sample stddev / sqrt(trials))
  double dropped_fraction = 0;            // mean over trials of the dropped fraction
};

// `trials` draws of the layer (model 1-5 sampled, not approximated): dropless, one
// multinomial(ep t top_k, q_s / top_k) over the ranks per trial (a multinomial summed over each
// rank's slots and over source ranks is the multinomial of the ranks' shares, exactly); with
// capacity, one multinomial(t top_k, q_s / top_k) over the slots per source rank, clipped at C per
// slot. tokens_per_rank is rounded to the nearest integer. GSL's MT19937 seeded with `seed`.
// Precondition: check_routing(routing, shape) succeeds, trials >= 2, ep t top_k < 2^32.
MonteCarloRouting monte_carlo_route_layer(const Routing& routing, const LayerShape& shape, int layer, int trials,
                                          std::uint64_t seed);

}  // namespace commbound::sim::moe
