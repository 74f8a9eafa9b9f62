#include "sim/report/output.hpp"

#include "core/atomic_write.hpp"
#include "core/file_type.hpp"
#include "core/one_line.hpp"
#include "network/cluster_spec.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace commbound::sim {

namespace {

namespace fs = std::filesystem;

// What a path names that is neither a regular file nor a folder (an entry not followed if a link).
const char* kind_of(fs::file_type type) {
  switch (type) {
    case fs::file_type::symlink: return "a symbolic link";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::block:
    case fs::file_type::character: return "a device";
    case fs::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

// Fails unless `dir` is an existing folder this process may create files in. `shown` names it.
Status check_existing_folder(const fs::path& dir, const std::string& shown) {
  auto type = file_type_at(dir);
  if (!type) return type.error();
  if (*type == fs::file_type::not_found) return Error{shown + ": no such folder"};
  if (*type != fs::file_type::directory) return Error{shown + ": not a folder"};
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return Error{shown + ": folder not writable"};
  return Ok{};
}

}  // namespace

Status check_writable(const std::string& path, bool force) {
  if (path.empty() || path == "-") return Ok{};
  if (has_control_character(path)) return one_line(Error{path + ": a file name with a control character"});
  if (path.back() == '/') return Error{path + ": names a folder; give a file name"};
  std::error_code ec;
  const fs::file_status entry = fs::symlink_status(path, ec);
  if (!fs::status_known(entry)) return Error{path + ": " + ec.message()};
  if (entry.type() == fs::file_type::directory) return Error{path + ": is a folder; give a file name"};
  const fs::path folder = fs::path(path).parent_path();
  const bool here = folder.empty();
  if (Status ok = check_existing_folder(here ? fs::path(".") : folder, here ? "the current folder" : folder.string()); !ok) {
    return Error{path + ": " + ok.error().message};
  }
  if (entry.type() == fs::file_type::not_found) return Ok{};
  if (!force) return Error{path + ": exists; not overwritten (pass --force to replace it)"};
  if (entry.type() != fs::file_type::regular) {
    return Error{path + ": " + kind_of(entry.type()) + "; --force replaces only regular files"};
  }
  return Ok{};
}

Status check_folder_writable(const std::string& dir) {
  if (dir.empty()) return Error{"an empty folder name"};
  if (has_control_character(dir)) return one_line(Error{dir + ": a folder name with a control character"});
  // The nearest part of `dir` that exists must be a writable folder: the rest is created there.
  fs::path existing = fs::path(dir).lexically_normal();
  for (;;) {
    auto type = file_type_at(existing);
    if (!type) return Error{dir + ": " + type.error().message};
    if (*type != fs::file_type::not_found) break;
    if (!existing.has_parent_path() || existing.parent_path() == existing) {
      existing = ".";
      break;
    }
    existing = existing.parent_path();
  }
  if (Status ok = check_existing_folder(existing, existing.string()); !ok) {
    return existing == fs::path(dir).lexically_normal() ? Error{ok.error().message}
                                                         : Error{dir + ": cannot be created: " + ok.error().message};
  }
  return Ok{};
}

Status check_plain_name(const std::string& flag, const std::string& name) {
  const std::string bad = flag + " \"" + name + "\": ";
  if (name.empty()) return Error{flag + ": empty; give a plain file name"};
  if (has_control_character(name)) return Error{flag + ": a name with a control character"};
  if (name.find('/') != std::string::npos) return Error{bad + "a name, not a path (no '/')"};
  if (name.front() == '.') return Error{bad + "a name may not start with '.' (hidden, or a folder)"};
  return Ok{};
}

Status check_distinct(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  // The file a path names: what exists resolved (symbolic links, "..", "."), the rest as written.
  auto identity = [](const std::string& path) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(path, ec);
    if (ec) return fs::path(path).lexically_normal();
    const fs::path resolved = fs::weakly_canonical(absolute, ec);
    return ec ? absolute.lexically_normal() : resolved;
  };
  auto named = [](const std::string& path) { return !path.empty() && path != "-"; };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!named(outputs[i].path)) continue;
    const fs::path mine = identity(outputs[i].path);
    auto same_as = [&](const NamedPath& other) -> Status {
      if (!named(other.path) || identity(other.path) != mine) return Ok{};
      return Error{outputs[i].flag + " " + outputs[i].path + ": the same file as " + other.flag + " " + other.path};
    };
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (Status ok = same_as(outputs[j]); !ok) return ok;
    }
    for (const NamedPath& input : inputs) {
      if (Status ok = same_as(input); !ok) return ok;
    }
  }
  return Ok{};
}

Status check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs, bool force) {
  for (const NamedPath& out : outputs) {
    if (Status ok = check_writable(out.path, force); !ok) return Error{out.flag + " " + ok.error().message};
  }
  return check_distinct(outputs, inputs);
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
    if (scale != 0 && (rest == "B" || rest == "b")) {  // "1GB": decimal to most readers, binary to nccl-tests
      return Error{bad + "\"" + suffix + "\" is ambiguous: write " + suffix.substr(0, 1) + " or " + suffix.substr(0, 1) +
                   "iB (binary multiples, as nccl-tests' -b and -e read them), or the number of bytes"};
    }
    if (scale == 0 || !(rest.empty() || rest == "iB")) {
      return Error{bad + "unknown suffix \"" + suffix + "\" (use K, M, G or T, or KiB, MiB, GiB or TiB: binary multiples)"};
    }
  }
  v *= scale;
  if (sizes) {
    if (v < 0) return Error{bad + "must be >= 0"};
    if (v != std::floor(v)) return Error{bad + "not a whole number of bytes"};
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
