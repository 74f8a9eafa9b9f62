#include "sim/scenario/moe_spec.hpp"

#include "core/file_type.hpp"
#include "core/enum_names.hpp"
#include "core/number_text.hpp"
#include "core/one_line.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace commbound::sim::moe {
namespace {

// A double as the user wrote it, to the digit: "-1", "0.5", "nan".
std::string number_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

}  // namespace

const char* to_string(RoutingKind kind) {
  switch (kind) {
    case RoutingKind::uniform: return "uniform";
    case RoutingKind::zipf: return "zipf";
    case RoutingKind::histogram: return "histogram";
  }
  return "?";
}

std::optional<RoutingKind> parse_routing_kind(std::string_view name) {
  return parse_named(name, {RoutingKind::uniform, RoutingKind::zipf, RoutingKind::histogram});
}

Status check_routing(const Routing& routing, const LayerShape& shape) {
  const int e = shape.experts, ep = shape.ep_ranks;
  if (e < 1) return Error{"experts = " + std::to_string(e) + ": must be at least 1"};
  if (shape.top_k < 1 || shape.top_k > e) {
    return Error{"top_k = " + std::to_string(shape.top_k) + ": must be from 1 to the " + std::to_string(e) + " experts"};
  }
  if (ep < 1) return Error{"ep = " + std::to_string(ep) + ": must be at least 1"};
  if (e % ep != 0 && ep % e != 0) {
    return Error{"ep = " + std::to_string(ep) + ": must divide the " + std::to_string(e) +
                 " experts or be a multiple of them (each rank holds whole experts, or a replica of one)"};
  }
  if (!(shape.tokens_per_rank >= 0) || !std::isfinite(shape.tokens_per_rank)) {
    return Error{"tokens_per_rank = " + number_text(shape.tokens_per_rank) + ": must be finite and >= 0"};
  }
  if (!(routing.capacity_factor >= 0) || !std::isfinite(routing.capacity_factor)) {
    return Error{"capacity_factor = " + number_text(routing.capacity_factor) + ": must be finite and >= 0 (0: dropless)"};
  }
  if (routing.pad_to_capacity && routing.capacity_factor <= 0) {
    return Error{"pad_to_capacity = true: pads every expert slot to its capacity, which needs capacity_factor > 0"};
  }
  if (routing.kind == RoutingKind::zipf && (!(routing.zipf_s >= 0) || !std::isfinite(routing.zipf_s))) {
    return Error{"zipf_s = " + number_text(routing.zipf_s) + ": must be finite and >= 0"};
  }
  if (routing.kind == RoutingKind::histogram) {
    if (routing.histogram.size() != static_cast<std::size_t>(e)) {
      return Error{"histogram: " + std::to_string(routing.histogram.size()) + " loads, the model has " + std::to_string(e) + " experts"};
    }
    int positive = 0;
    for (std::size_t i = 0; i < routing.histogram.size(); ++i) {
      const double load = routing.histogram[i];
      if (!(load >= 0) || !std::isfinite(load)) {
        return Error{"histogram expert " + std::to_string(i) + " load = " + number_text(load) + ": must be finite and >= 0"};
      }
      positive += load > 0;
    }
    if (positive < shape.top_k) {
      return Error{"histogram: " + std::to_string(positive) + " of the " + std::to_string(e) + " experts " +
                   (positive == 1 ? "has" : "have") + " a load > 0, fewer than top_k = " + std::to_string(shape.top_k) +
                   " (a token picks top_k distinct experts)"};
    }
  }
  return Ok{};
}

Expected<std::vector<double>> read_expert_histogram(const std::string& path, int experts) {
  if (Status ok = check_readable_file(path); !ok) return ok.error();
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot be read"};
  std::vector<double> loads;
  std::string line, last_text;
  int number = 0, last_line = 0;
  const auto at = [&](int line_number, std::size_t expert, const std::string& text, const std::string& reason) {
    return one_line(Error{path + ":" + std::to_string(line_number) + ": expert " + std::to_string(expert) + " load = \"" + text +
                          "\": " + reason});
  };
  while (std::getline(in, line)) {
    ++number;
    if (const std::size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const std::string text = line.substr(first, line.find_last_not_of(" \t\r") + 1 - first);
    const std::size_t expert = loads.size();
    if (expert == static_cast<std::size_t>(experts)) {
      return at(number, expert, text, "one load more than the model's " + std::to_string(experts) + " experts");
    }
    const Expected<double> load = parse_number<double>(text);
    if (!load) return at(number, expert, text, load.error().message);
    if (*load < 0) return at(number, expert, text, "negative (a load counts tokens, >= 0)");
    loads.push_back(*load);
    last_text = text;
    last_line = number;
  }
  if (loads.empty()) return Error{path + ": no expert loads, the model has " + std::to_string(experts) + " experts"};
  if (loads.size() != static_cast<std::size_t>(experts)) {
    return at(last_line, loads.size() - 1, last_text,
              "the last of " + std::to_string(loads.size()) + " loads, the model has " + std::to_string(experts) + " experts");
  }
  if (std::all_of(loads.begin(), loads.end(), [](double x) { return x == 0; })) {
    return at(last_line, loads.size() - 1, last_text, "every load is 0 (the router sent no token to any expert)");
  }
  return loads;
}

}  // namespace commbound::sim::moe
