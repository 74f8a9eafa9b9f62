#include "sim/scenario/pp_layout.hpp"

#include <fmt/format.h>

#include <cctype>
#include <string>

namespace commbound::sim {
namespace {

// Bounds on what a layout may expand to, checked before anything is built: a million symbols
// (a 1024-stage pipeline of 1024 chunks, one layer each, is about two million: far past any run)
// and groups nested 32 deep.
constexpr std::size_t kMaxLayoutSymbols = std::size_t{1} << 20;
constexpr int kMaxLayoutDepth = 32;
constexpr int kMaxChunks = 1024;  // as [parallel] virtual_stages allows

// Expands repeats and drops the cosmetic characters: "E(t|)*2L" -> "Et|t|L".
class Expander {
public:
  explicit Expander(std::string_view text) : text_(text) {}

  Expected<std::string> run() {
    Expected<std::string> out = sequence(0);
    if (!out) return out;
    if (pos_ < text_.size()) return error("')' without its '('");
    return out;
  }

private:
  Error error(const std::string& what) const { return Error{fmt::format("{} at character {}", what, pos_ + 1)}; }

  Expected<std::string> sequence(int depth) {
    if (depth > kMaxLayoutDepth) return error(fmt::format("groups nested more than {} deep", kMaxLayoutDepth));
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != ')') {
      const char c = text_[pos_];
      std::string item;
      if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
        continue;
      } else if (c == '(') {
        ++pos_;
        Expected<std::string> inner = sequence(depth + 1);
        if (!inner) return inner;
        if (pos_ >= text_.size()) return error("'(' without its ')'");
        ++pos_;
        item = std::move(*inner);
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        ++pos_;
        item = std::string(1, c);
      } else {
        return error(fmt::format("'{}' is not a layout symbol (E, t, m, L, |, (...)*N)", c));
      }
      Expected<long> times = repeat();
      if (!times) return times.error();
      if (item.size() * static_cast<std::size_t>(*times) > kMaxLayoutSymbols - out.size()) {
        return error(fmt::format("expands to more than {} symbols", kMaxLayoutSymbols));
      }
      for (long k = 0; k < *times; ++k) out += item;
    }
    return out;
  }

  // An optional "*N" after an item: N, else 1.
  Expected<long> repeat() {
    if (pos_ >= text_.size() || text_[pos_] != '*') return 1L;
    ++pos_;
    long n = 0;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) && n <= long{kMaxLayoutSymbols}) {
      n = n * 10 + (text_[pos_++] - '0');
    }
    if (pos_ == start) return error("'*' needs a count");
    if (n > long{kMaxLayoutSymbols}) return error(fmt::format("expands to more than {} symbols", kMaxLayoutSymbols));
    return n;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

struct StageSymbols {
  int layers = 0, embedding = 0, mtp = 0, loss = 0;
};

}  // namespace

Expected<PipelineLayout> parse_pp_layout(std::string_view text, int pp, int layers, int mtp_layers) {
  Expected<std::string> flat = Expander(text).run();
  if (!flat) return flat.error();
  std::vector<StageSymbols> stages(1);
  for (char c : *flat) {
    if (c == '|') {
      stages.emplace_back();
      continue;
    }
    StageSymbols& s = stages.back();
    (c == 't' ? s.layers : c == 'E' ? s.embedding : c == 'm' ? s.mtp : s.loss) += 1;
  }
  const int count = static_cast<int>(stages.size());
  if (count % pp != 0) return Error{fmt::format("has {} stages, not a multiple of pp = {}", count, pp)};
  if (count / pp > kMaxChunks) return Error{fmt::format("has {} chunks per pipeline stage, more than {}", count / pp, kMaxChunks)};
  PipelineLayout out;
  out.chunks = count / pp;
  int embedding = 0, loss = 0, mtp = 0;
  for (int k = 0; k < count; ++k) {
    const StageSymbols& s = stages[static_cast<std::size_t>(k)];
    if (s.embedding > 0 && k != 0) return Error{fmt::format("'E' is in virtual stage {}: the embedding starts the first", k)};
    if (s.loss > 0 && k != count - 1) return Error{fmt::format("'L' is in virtual stage {}: the loss ends the last ({})", k, count - 1)};
    if (s.mtp > 0 && k != count - 1) {
      return Error{fmt::format("'m' is in virtual stage {}: commbound runs the multi-token prediction modules after "
                               "the loss head, in the last virtual stage ({})", k, count - 1)};
    }
    embedding += s.embedding;
    loss += s.loss;
    mtp += s.mtp;
    out.layers.push_back(s.layers);
  }
  int decoder = 0;
  for (int n : out.layers) decoder += n;
  if (embedding != 1) return Error{fmt::format("has {} 'E': the embedding is one, in the first stage", embedding)};
  if (loss != 1) return Error{fmt::format("has {} 'L': the loss is one, in the last stage", loss)};
  if (decoder != layers) return Error{fmt::format("has {} decoder layers ('t'); the model has {}", decoder, layers)};
  if (mtp != mtp_layers) return Error{fmt::format("has {} 'm'; the model has {} multi-token prediction modules", mtp, mtp_layers)};
  return out;
}

}  // namespace commbound::sim
