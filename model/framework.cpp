#include "model/framework.hpp"

#include "core/enum_names.hpp"

#include <array>

namespace commbound::model {
namespace {

// The registry, in Framework's order (the file comment of framework.hpp gives each row's source).
constexpr std::array<FrameworkTraits, 4> kFrameworks = {{
    // id                        name               host   eager  foreach wrappers fp8    fp8 in llama  pipeline sends                              attention                      cross-entropy              MoE probs
    {Framework::fused,           "fused",           false, false, false,  false,   true,  false, false, PipelineSends::per_pair,                   FrameworkAttention::commbound, CrossEntropy::log_softmax,    MoeProbs::output},
    {Framework::pytorch_eager,   "pytorch-eager",   true,  true,  true,   true,    false, false, true,  PipelineSends::batched,                    FrameworkAttention::sdpa,      CrossEntropy::log_softmax,    MoeProbs::output},
    {Framework::pytorch_compile, "pytorch-compile", true,  false, false,  true,    true,  false, false, PipelineSends::batched,                    FrameworkAttention::sdpa,      CrossEntropy::log_softmax,    MoeProbs::output},
    {Framework::megatron_te,     "megatron-te",     true,  false, false,  false,   true,  true,  false, PipelineSends::batched_unless_interleaved, FrameworkAttention::cudnn,     CrossEntropy::vocab_parallel, MoeProbs::activation},
}};

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kFrameworks.size(); ++i) {
    if (static_cast<std::size_t>(kFrameworks[i].id) != i) return false;
  }
  return true;
}
static_assert(in_enum_order(), "kFrameworks must list the frameworks in Framework's order");

}  // namespace

const FrameworkTraits& traits(Framework f) { return kFrameworks[static_cast<std::size_t>(f)]; }

const char* to_string(Framework f) { return traits(f).name; }

const std::vector<std::string>& framework_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const FrameworkTraits& t : kFrameworks) out.emplace_back(t.name);
    return out;
  }();
  return names;
}

std::optional<Framework> parse_framework(std::string_view name) {
  for (const FrameworkTraits& t : kFrameworks) {
    if (name == t.name) return t.id;
  }
  return std::nullopt;
}

std::string frameworks_with(bool FrameworkTraits::*flag) {
  std::vector<std::string> names;
  for (const FrameworkTraits& t : kFrameworks) {
    if (t.*flag) names.push_back("\"" + std::string(t.name) + "\"");
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

const char* to_string(CrossEntropy c) {
  switch (c) {
    case CrossEntropy::log_softmax: return "log-softmax";
    case CrossEntropy::vocab_parallel: return "vocab-parallel";
    case CrossEntropy::te: return "te";
  }
  return "?";
}

std::optional<CrossEntropy> parse_cross_entropy(std::string_view name) {
  return parse_named(name, {CrossEntropy::log_softmax, CrossEntropy::vocab_parallel, CrossEntropy::te});
}

const char* to_string(MoeProbs p) {
  switch (p) {
    case MoeProbs::output: return "output";
    case MoeProbs::activation: return "activation";
  }
  return "?";
}

std::optional<MoeProbs> parse_moe_probs(std::string_view name) {
  return parse_named(name, {MoeProbs::output, MoeProbs::activation});
}

}  // namespace commbound::model
