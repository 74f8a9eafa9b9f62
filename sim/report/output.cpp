#include "sim/report/output.hpp"

#include "calibration/base/atomic_write.hpp"
#include "calibration/base/file_type.hpp"
#include "network/cluster_spec.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace commbound::sim {

Status check_writable(const std::string& path, bool force) {
  if (path.empty() || path == "-") return Ok{};
  auto type = file_type_at(path);
  if (!type) return type.error();  // a symlink loop, a name too long: not writable either
  if (force || *type == std::filesystem::file_type::not_found) return Ok{};
  return Error{path + ": exists; not overwritten (pass --force to replace it)"};
}

Status write_output(const std::string& path, bool force, const std::function<void(std::ostream&)>& write) {
  if (path.empty() || path == "-") {
    write(std::cout);
    std::cout.flush();
    return Ok{};
  }
  if (Status ok = check_writable(path, force); !ok) return ok;
  return write_file_atomically(path, write);
}

namespace {

// `item` without the spaces around it ("1K, 2K" is a list of two).
std::string trimmed(const std::string& item) {
  const auto first = item.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return item.substr(first, item.find_last_not_of(" \t") - first + 1);
}

Expected<double> parse_one(const std::string& flag, const std::string& text, ListKind kind) {
  const std::string item = trimmed(text);
  const std::string bad = flag + " " + item + ": ";
  if (item.empty()) return Error{bad + "empty item"};
  const bool sizes = kind == ListKind::sizes_bytes;
  // The number, then (sizes only) a suffix: std::from_chars stops where the digits end.
  double v = 0;
  const auto [stop, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
  if (ec == std::errc::result_out_of_range) return Error{bad + "out of range of a double"};
  if (ec != std::errc() || !std::isfinite(v)) return Error{bad + "not a number"};
  const std::string suffix(stop, item.data() + item.size());
  double scale = 1;
  if (!suffix.empty()) {
    if (!sizes) return Error{bad + "expected an integer"};
    const char s = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    scale = s == 'K' ? 1024.0 : s == 'M' ? 1048576.0 : s == 'G' ? 1073741824.0 : s == 'T' ? 1099511627776.0 : 0;
    const std::string rest = suffix.substr(1);
    if (scale == 0 || !(rest.empty() || rest == "B" || rest == "iB")) {
      return Error{bad + "unknown suffix \"" + suffix + "\" (use K, M, G or T: binary multiples)"};
    }
  }
  v *= scale;
  if (sizes) {
    if (v < 0) return Error{bad + "must be >= 0"};
    if (v > kMaxListBytes) {
      return Error{fmt::format("{}more than 1T ({:.0f} bytes), the largest buffer taken: no GPU's memory holds one that "
                               "large (the largest hold a few hundred GB)",
                               bad, kMaxListBytes)};
    }
    return v;
  }
  if (v < 1 || v != std::floor(v)) return Error{bad + "must be a positive integer"};
  if (v > network::kMaxNodes) {
    return Error{fmt::format("{}more than {} nodes, the largest cluster a scenario describes (cluster.nodes)", bad,
                             network::kMaxNodes)};
  }
  return v;
}

}  // namespace

Expected<std::vector<double>> parse_list(const std::string& flag, const std::string& text, ListKind kind) {
  std::vector<double> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) {
      auto v = parse_one(flag, item, kind);
      if (!v) return v.error();
      out.push_back(*v);
      continue;
    }
    auto lo = parse_one(flag, item.substr(0, colon), kind);
    if (!lo) return lo.error();
    auto hi = parse_one(flag, item.substr(colon + 1), kind);
    if (!hi) return hi.error();
    if (*lo <= 0 || *hi < *lo) return Error{flag + " " + trimmed(item) + ": a range A:B needs 0 < A <= B"};
    for (double v = *lo; v <= *hi * (1 + 1e-12); v *= 2) out.push_back(v);
  }
  if (out.empty()) return Error{flag + ": empty list"};
  return out;
}

}  // namespace commbound::sim
