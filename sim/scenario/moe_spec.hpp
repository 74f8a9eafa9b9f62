// The router of a mixture-of-experts model as a scenario gives it ([moe]): how its load spreads
// over the routed experts, token dropping, and the shape of one MoE layer's routing. The routing
// model that turns these into tokens per expert and rank is sim/workload/moe_routing.hpp.
#pragma once

#include "core/expected.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commbound::sim::moe {

// How the router spreads tokens over the routed experts.
enum class RoutingKind { uniform, zipf, histogram };

// "uniform", "zipf", "histogram".
const char* to_string(RoutingKind kind);
// The kind named `name` (one of to_string's names); nullopt for any other text.
std::optional<RoutingKind> parse_routing_kind(std::string_view name);

// The router's load distribution, as a scenario gives it.
struct Routing {
  RoutingKind kind = RoutingKind::uniform;
  double zipf_s = 1.0;            // zipf: the i-th most popular expert's share is proportional to 1 / i^s (s >= 0)
  std::vector<double> histogram;  // histogram: each routed expert's relative load (E entries, >= 0, at least top_k > 0)
  double capacity_factor = 0;     // 0: dropless; > 0: a source rank keeps at most ceil(cf t top_k / S) per slot (model, 5)
  // With a capacity: every slot padded to it (Megatron-Core's moe_pad_expert_input_to_capacity),
  // so each source rank sends and each expert computes exactly C tokens a slot (model, 5).
  bool pad_to_capacity = false;
  std::uint64_t seed = 0;         // with the layer index, which experts are popular in which layer (zipf)
};

// One MoE layer's shape: `tokens_per_rank` tokens on each of `ep_ranks` ranks, each token routed
// to `top_k` distinct experts of `experts`.
struct LayerShape {
  int experts = 0;             // routed experts E (shared experts are not routed)
  int top_k = 0;               // experts per token, 1..E
  int ep_ranks = 0;            // the expert-parallel group; divides E, or E divides it
  double tokens_per_rank = 0;  // tokens each rank routes in this layer (micro-batch x sequence / CP / TP as the caller counts them)
};

// A routing that `shape` can use, or an Error naming the field and value: E, top_k, ep positive,
// top_k <= E, ep divides E or E divides ep, tokens >= 0; zipf_s finite >= 0; a histogram of exactly
// E finite entries >= 0 of which at least top_k are positive; capacity_factor finite >= 0, and > 0
// when padding to it.
Status check_routing(const Routing& routing, const LayerShape& shape);

// A histogram of expert loads as a real router logged it, for Routing::histogram. The file holds
// one load per line (tokens or any relative measure, a decimal or scientific number >= 0), the
// k-th load being expert k - 1's; blank lines and everything from a '#' to the end of its line
// are skipped. Fails with one Error, "PATH:LINE: expert I load = "TEXT": reason", for a line that is
// not a number or is negative, for more or fewer than `experts` loads (naming the line of the extra
// load, or of the last one) and for loads that are all 0; "PATH: cannot be read" if it cannot be
// opened.
Expected<std::vector<double>> read_expert_histogram(const std::string& path, int experts);


}  // namespace commbound::sim::moe
