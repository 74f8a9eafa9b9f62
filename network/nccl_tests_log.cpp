#include "network/nccl_tests_log.hpp"

#include "core/file_type.hpp"
#include "core/number_text.hpp"
#include "core/one_line.hpp"
#include "core/table_reader.hpp"
#include "core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace commbound::network {
namespace {

// A log larger than this is not nccl-tests output (a full 8 B - 16 GiB sweep is ~10 KiB).
constexpr std::size_t kMaxLogBytes = 64u << 20;
// Beyond the rounding of what is printed (half a unit in each number's last digit: nccl-tests
// prints two decimals, commbound-nccl-bench fewer or an exponent where a number outgrows its
// column), algbw and busbw must agree with size / time within this fraction (nccl-tests computes
// all three from one measured time).
constexpr double kBandwidthTolerance = 0.02;
// The regexes below see at most this much of a line. std::regex (libstdc++) recurses once per
// character it matches, so a long run of letters or digits overflows the stack; the lines they
// look for (header, '#  Rank', NCCL version) are under 200 characters.
constexpr std::size_t kMatchedChars = 1024;
// '#wrong' beyond this is as wrong as a long says (a double past a long cannot be converted).
constexpr double kMaxWrong = 1e18;

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

std::optional<double> number(const std::string& t) {
  auto v = parse_number<double>(t);
  return v ? std::optional<double>(*v) : std::nullopt;
}

// Half a unit in the last digit of a number as printed: "3.25" 0.005, "12" 0.5, "1e+06" 5e5,
// "1.2e+06" 5e4.
double half_unit(const std::string& text) {
  const std::size_t e = text.find_first_of("eE");
  const std::string mantissa = text.substr(0, e);
  const std::size_t dot = mantissa.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  const int exponent = e == std::string::npos ? 0 : static_cast<int>(std::strtol(text.c_str() + e + 1, nullptr, 10));
  return 0.5 * std::pow(10.0, exponent - decimals);
}

std::optional<long> integer(const std::string& t) {
  auto v = parse_number<long>(t);
  return v ? std::optional<long>(*v) : std::nullopt;
}

bool is_word(const std::string& t) { return !t.empty() && std::isalpha(static_cast<unsigned char>(t[0])) && t != "N/A"; }

// "2.26.2" from "NCCL version 2.26.2+cuda12.2" or from nccl-tests' "nccl-library=22602" ("" when the
// line says neither). A library code too large for a long is an error naming it (`at`: "file:line").
Expected<std::string> version_in(const std::string& line, const std::string& at) {
  static const std::regex printed(R"(NCCL version (\d+\.\d+\.\d+))");
  static const std::regex library(R"(nccl-library=(\d+))");
  std::smatch m;
  if (std::regex_search(line, m, printed)) return std::string(m[1]);
  if (std::regex_search(line, m, library)) {
    auto code = parse_number<long>(m.str(1));
    if (!code) return Error{at + ": nccl-library=" + m.str(1) + ": " + code.error().message};
    return fmt::format("{}.{}.{}", *code / 10000, *code / 100 % 100, *code % 100);
  }
  return std::string();
}

// A row's timing `i`: 0 out-of-place, 1 in-place (nullptr where the row has none).
const NcclTestsRow::Timing* timing_at(const NcclTestsRow& r, int i) {
  return i == 0 ? &r.out_of_place : r.in_place ? &*r.in_place : nullptr;
}

// How coarsely one timing group was printed: half a unit in the last digit of each number.
struct Rounding {
  double time_s = 0, alg_bytes_per_s = 0, bus_bytes_per_s = 0;
};
using RowRounding = std::array<Rounding, 2>;  // out-of-place, in-place

Rounding rounding_of(const std::vector<std::string>& t, std::size_t at) {
  return {half_unit(t[at]) * kSecondsPerUs, half_unit(t[at + 1]) * kBytesPerGB, half_unit(t[at + 2]) * kBytesPerGB};
}

// Whether `printed` (printed to within `printed_rounding`) is `expected`, itself known to within
// `expected_rounding`, beyond the tolerance.
bool agrees(double printed, double printed_rounding, double expected, double expected_rounding) {
  return std::abs(printed - expected) <= printed_rounding + expected_rounding + kBandwidthTolerance * expected;
}

// Parses one timing group (time, algbw, busbw, #wrong). Times are printed in microseconds and
// bandwidths in GB/s (1e9 bytes/s).
std::optional<NcclTestsRow::Timing> timing(const std::vector<std::string>& t, std::size_t at) {
  const auto time_us = number(t[at]);
  const auto alg = number(t[at + 1]);
  const auto bus = number(t[at + 2]);
  if (!time_us || !alg || !bus || *time_us <= 0 || *alg < 0 || *bus < 0) return std::nullopt;
  NcclTestsRow::Timing out{*time_us * kSecondsPerUs, *alg * kBytesPerGB, *bus * kBytesPerGB, 0};
  if (t[at + 3] == "N/A") {
    out.wrong = -1;
  } else if (auto w = number(t[at + 3]); w && *w >= 0) {
    out.wrong = *w > 0 ? std::max(1L, static_cast<long>(std::min(*w, kMaxWrong))) : 0;  // old layouts print an error value
  } else {
    return std::nullopt;
  }
  return out;
}

// size count type [redop] [root] (time algbw busbw wrong){1,2}; `rounding` gets how coarsely each
// timing was printed.
std::optional<NcclTestsRow> row(const std::vector<std::string>& t, RowRounding& rounding) {
  if (t.size() < 7) return std::nullopt;
  const auto size = integer(t[0]);
  const auto count = integer(t[1]);
  if (!size || !count || *size <= 0 || *count < 0 || !is_word(t[2])) return std::nullopt;
  std::size_t at = 3;
  if (at < t.size() && is_word(t[at])) ++at;                         // redop
  if ((t.size() - at) % 4 == 1 && integer(t[at])) ++at;              // root
  const std::size_t groups = (t.size() - at) / 4;
  if ((t.size() - at) % 4 != 0 || groups < 1 || groups > 2) return std::nullopt;
  NcclTestsRow r;
  r.size_bytes = static_cast<double>(*size);
  r.count = *count;
  r.type = t[2];
  auto oop = timing(t, at);
  if (!oop) return std::nullopt;
  r.out_of_place = *oop;
  rounding[0] = rounding_of(t, at);
  if (groups == 2) {
    r.in_place = timing(t, at + 4);
    if (!r.in_place) return std::nullopt;
    rounding[1] = rounding_of(t, at + 4);
  }
  return r;
}

struct Section {
  NcclTestsLog log;
  std::vector<RowRounding> rounding;  // one per row of `log`
  std::map<int, std::string> host_of_rank;
  int first_line = 0;
};

}  // namespace

std::optional<CollectiveOp> op_from_name(const std::string& name) {
  const std::optional<NcclTestsOp> op = parse_nccl_tests_op(name);
  return op ? std::optional<CollectiveOp>(collective_op(*op)) : std::nullopt;
}

namespace {

Expected<std::vector<NcclTestsLog>> parse_log(const std::string& path, const std::string& text, const LogFacts& facts) {
  static const std::regex perf(R"(\b([a-z_]+)_perf\b)");
  static const std::regex rank_line(R"(^#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)$)");
  if (text.size() > kMaxLogBytes) return Error{path + ": " + std::to_string(text.size()) + " bytes: too large to be nccl-tests output"};
  if (text.find('\0') != std::string::npos) return Error{path + ": binary data, not nccl-tests output"};

  std::vector<Section> sections(1);
  std::string version = facts.nccl_version;
  std::istringstream in(text);
  std::string line;
  int number_of_line = 0;
  while (std::getline(in, line)) {
    ++number_of_line;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string at = fmt::format("{}:{}", path, number_of_line);
    const std::string head = line.substr(0, kMatchedChars);
    auto line_version = version_in(head, at);
    if (!line_version) return line_version.error();
    if (!line_version->empty() && facts.nccl_version.empty()) version = *line_version;
    std::smatch m;
    const std::vector<std::string> tokens = split(line);
    if (tokens.empty()) continue;
    const bool data_like = !tokens[0].empty() && std::isdigit(static_cast<unsigned char>(tokens[0][0])) && integer(tokens[0]);
    if (!data_like) {
      if (std::regex_search(head, m, perf) && head.find("Collective test starting") != std::string::npos) {
        if (!sections.back().log.rows.empty() || !sections.back().log.op_name.empty()) sections.emplace_back();
        sections.back().log.op_name = std::string(m[1]) + "_perf";
        sections.back().first_line = number_of_line;
      } else if (std::regex_search(head, m, rank_line)) {
        Section& s = sections.back();
        auto rank = parse_number<int>(m.str(1));
        if (!rank) return Error{at + ": '#  Rank " + m.str(1) + "': the rank is " + rank.error().message};
        s.host_of_rank[*rank] = m[2];
        if (s.log.gpu_name.empty()) s.log.gpu_name = m[3];
      } else if (sections.back().log.op_name.empty() && std::regex_search(head, m, perf)) {
        sections.back().log.op_name = std::string(m[1]) + "_perf";  // the command line
      }
      continue;
    }
    RowRounding rounding;
    auto r = row(tokens, rounding);
    if (!r) {
      return Error{fmt::format("{}:{}: not an nccl-tests row: '{}' (expected: size count type [redop root] time algbw "
                               "busbw #wrong, out-of-place and optionally in-place)",
                               path, number_of_line, line.substr(0, 120))};
    }
    r->line = number_of_line;
    for (int i : {0, 1}) {
      const NcclTestsRow::Timing* t = timing_at(*r, i);
      // size / time, and how far the time's rounding moves it (to first order).
      const double alg = t ? r->size_bytes / t->time_s : 0;
      if (t && !agrees(t->alg_bw_bytes_per_s, rounding[i].alg_bytes_per_s, alg, alg * rounding[i].time_s / t->time_s)) {
        return Error{fmt::format("{}:{}: algbw {:.2f} GB/s is not size / time = {:.2f} GB/s: the row was edited or "
                                 "the log is corrupt",
                                 path, number_of_line, t->alg_bw_bytes_per_s / kBytesPerGB, r->size_bytes / t->time_s / kBytesPerGB)};
      }
    }
    sections.back().log.rows.push_back(*r);
    sections.back().rounding.push_back(rounding);
  }

  std::vector<NcclTestsLog> out;
  for (Section& s : sections) {
    NcclTestsLog& log = s.log;
    if (log.rows.empty()) continue;
    log.path = path;
    log.nccl_version = version;
    log.algorithm = facts.algorithm;
    log.op = log.op_name.empty() ? std::nullopt : op_from_name(log.op_name);
    if (log.op_name.empty()) log.op = facts.op ? facts.op : op_from_name(path);
    if (log.op_name.empty() && log.op) log.op_name = std::string(to_string(*log.op));
    if (facts.op && log.op && *facts.op != *log.op) {
      return Error{fmt::format("{}: the log runs {} but {} was given", path, log.op_name, to_string(*facts.op))};
    }
    if (log.op_name.empty()) {
      return Error{path + ": which collective? the log names no *_perf binary and the file name no op; give the op"};
    }
    if (!s.host_of_rank.empty()) {
      std::set<std::string> hosts;
      for (const auto& [rank, host] : s.host_of_rank) hosts.insert(host);
      log.ranks = static_cast<int>(s.host_of_rank.size());
      log.nodes = static_cast<int>(hosts.size());
      if ((facts.nodes && *facts.nodes != log.nodes) ||
          (facts.gpus_per_node && *facts.gpus_per_node * log.nodes != log.ranks)) {
        return Error{fmt::format("{}: the log's '#  Rank' lines show {} ranks on {} hosts, not what was given", path,
                                 log.ranks, log.nodes)};
      }
    } else if (facts.nodes && facts.gpus_per_node) {
      log.nodes = *facts.nodes;
      log.ranks = *facts.nodes * *facts.gpus_per_node;
    } else {
      return Error{path + ": how many nodes and GPUs per node? the log has no '#  Rank' lines; give them"};
    }
    if (log.nodes < 1 || log.ranks < log.nodes || log.ranks % log.nodes != 0) {
      return Error{fmt::format("{}: {} ranks on {} nodes is not a whole number of GPUs per node", path, log.ranks,
                               log.nodes)};
    }
    if (log.op) {
      const double factor = bus_bw_factor(*log.op, log.ranks);
      for (std::size_t k = 0; k < log.rows.size(); ++k) {
        const NcclTestsRow& r = log.rows[k];
        for (int i : {0, 1}) {
          const NcclTestsRow::Timing* t = timing_at(r, i);
          const Rounding& printed = s.rounding[k][i];
          if (t && !agrees(t->bus_bw_bytes_per_s, printed.bus_bytes_per_s, t->alg_bw_bytes_per_s * factor,
                           printed.alg_bytes_per_s * factor)) {
            return Error{fmt::format("{}:{}: busbw {:.2f} GB/s is not algbw x {:.3f} ({} on {} ranks): the log is not "
                                     "what its header says, or was edited",
                                     path, r.line, t->bus_bw_bytes_per_s / kBytesPerGB, factor, log.op_name, log.ranks)};
          }
        }
      }
    }
    out.push_back(std::move(log));
  }
  if (out.empty()) return Error{path + ": no nccl-tests rows (size count type [redop root] time algbw busbw #wrong)"};
  return out;
}

}  // namespace

Expected<std::vector<NcclTestsLog>> parse_nccl_tests_log(const std::string& path, const std::string& text,
                                                          const LogFacts& facts) {
  auto logs = parse_log(path, text, facts);
  if (!logs) return one_line(logs.error());  // an error may quote a line of the log
  return logs;
}

Expected<std::vector<NcclTestsLog>> read_nccl_tests_log(const std::string& path, const LogFacts& facts) {
  if (Status ok = check_readable_file(path); !ok) return ok.error();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot be read"};
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxLogBytes) return Error{path + ": too large to be nccl-tests output"};
  }
  return parse_nccl_tests_log(path, text, facts);
}

Expected<std::vector<NcclTestsLog>> read_nccl_tests_logs(const std::vector<std::string>& paths,
                                                         const LogFacts& facts) {
  std::vector<NcclTestsLog> out;
  auto append = [&](const std::string& path, const LogFacts& f) -> Status {
    auto logs = read_nccl_tests_log(path, f);
    if (!logs) return logs.error();
    for (auto& l : *logs) out.push_back(std::move(l));
    return Ok{};
  };
  for (const std::string& path : paths) {
    if (std::filesystem::path(path).extension() != ".toml") {
      if (Status s = append(path, facts); !s) return s.error();
      continue;
    }
    auto doc = parse_toml_file(path);
    if (!doc) return doc.error();
    TableReader top(*doc, "");
    const toml::array* entries = top.required_array("log");
    if (Status s = top.finish(); !s) return s.error();
    for (std::size_t i = 0; i < entries->size(); ++i) {
      const toml::table* t = entries->get(i)->as_table();
      const std::string prefix = "log[" + std::to_string(i) + "]";
      if (t == nullptr) return Error{path + ": " + prefix + " is not a table"};
      TableReader r(*t, prefix);
      LogFacts f;
      const std::string file = r.required_string("file");
      const std::string op = r.required_string("op");
      f.nodes = static_cast<int>(r.required_integer("nodes", 1, 1 << 20));
      f.gpus_per_node = static_cast<int>(r.required_integer("gpus_per_node", 1, 1024));
      f.nccl_version = r.string("nccl_version", "");
      std::vector<std::string> algorithms = algorithm_names();
      algorithms.insert(algorithms.begin(), "auto");
      const std::string algo = r.choice("algorithm", "auto", algorithms);
      r.string("source", "");
      r.string("trust", "");
      f.op = op_from_name(op);
      if (!r.failed() && !f.op) r.fail("op", "expected all_reduce, all_gather, reduce_scatter, sendrecv or alltoall");
      if (Status s = r.finish(); !s) return s.error();  // the reader names the file and line
      if (algo != "auto") f.algorithm = parse_algorithm(algo);
      const std::string at = (std::filesystem::path(path).parent_path() / file).string();
      if (Status s = append(at, f); !s) return s.error();
    }
  }
  if (out.empty()) return Error{"no nccl-tests log given"};
  return out;
}

namespace {

// A measurement whose busbw is below this fraction of its links' ring bound where each rank holds
// at least 64 MiB (1 GiB on 2 nodes of 8 GPUs) is broken, not a fabric: the shipped healthy 1-4-node
// logs reach 81-98% there; NVIDIA/nccl-tests issue 290 (155 and 90 GB/s on 2 x 8 H100 with 8x400G,
// "do not calibrate") is the kind this refuses. Per rank, because a ring's latency grows with its
// ranks: 1 GiB over 1024 ranks (1 MiB each) is latency-bound on a healthy fabric (110 GB/s,
// NVIDIA/nccl-tests issue 322).
constexpr double kHealthyFraction = 0.5;
constexpr double kHealthCheckedBytesPerRank = 64.0 * (1 << 20);
// Measured busbw may exceed the hardware bound by rounding and clock drift, not more.
constexpr double kBoundTolerance = 1.02;

}  // namespace

std::optional<std::string> measurement_issue(const ClusterSpec& cluster, CollectiveOp op, int nodes, int ranks,
                                             double size_bytes, double bus_bw_bytes_per_s) {
  const NodeType& node = cluster.node;
  // Bus bandwidth no hardware of this kind can exceed: inside a node the GPU's NVLink (x2 for an
  // AllReduce, which NVLink SHARP halves); across nodes each node must move S (nodes-1)/nodes of
  // the data through the NICs its GPUs reach per direction and per phase, so busbw <= NIC line rate
  // x those NICs x (n-1)/n x nodes/(nodes-1) (nccl-tests' busbw factors; in-network reduction aside).
  const bool ar = op == CollectiveOp::all_reduce;
  const double nvlink_bound = node.nvlink.bw_bytes_per_s * (ar ? 2 : 1);
  const double nic_line = cluster.fabric.link.bw_bytes_per_s * node.nics_reached(ranks / std::max(1, nodes));
  const double net_bound = nodes > 1 ? nic_line * (ranks - 1.0) / ranks * nodes / (nodes - 1.0) : nvlink_bound;
  const double bound = std::min(nvlink_bound, net_bound);
  const double ring_bound = nodes > 1 ? nic_line : node.nvlink.bw_bytes_per_s;
  if (op == CollectiveOp::send_recv) return std::nullopt;  // one pair: neither bound applies as written
  if (op == CollectiveOp::all_to_all) {
    // With p ranks per node a GPU's NVLink carries (p-1)/p S and a node's NICs p(n-p)/n S in all
    // (internal/all_to_all.hpp), so busbw = S/t x (n-1)/n is at most NVLink x p/(p-1) x (n-1)/n and
    // NICs x n/(p(n-p)) x (n-1)/n. No health floor: across nodes an alltoall reaches about one
    // NIC's rate per GPU, not what the ring's floor expects.
    const double p = static_cast<double>(ranks) / nodes;
    const double per_link = node.nvlink.bw_bytes_per_s / ((p - 1) / p) * (ranks - 1.0) / ranks;
    const double per_nic = nodes > 1 ? nic_line / (p * (ranks - p) / ranks) * (ranks - 1.0) / ranks : per_link;
    const double a2a_bound = std::min(per_link, per_nic);
    if (bus_bw_bytes_per_s > a2a_bound * kBoundTolerance) {
      return fmt::format("alltoall busbw {:.1f} GB/s exceeds what {} x {} with {} can move ({:.1f} GB/s): not this "
                         "hardware, or not {} nodes",
                         bus_bw_bytes_per_s / kBytesPerGB, nodes, node.name, cluster.fabric.link.name, a2a_bound / kBytesPerGB, nodes);
    }
    return std::nullopt;
  }
  if (bus_bw_bytes_per_s > bound * kBoundTolerance) {
    return fmt::format("busbw {:.1f} GB/s exceeds what {} x {} with {} can move ({:.1f} GB/s): not this hardware, "
                       "or not {} nodes",
                       bus_bw_bytes_per_s / kBytesPerGB, nodes, node.name, cluster.fabric.link.name, bound / kBytesPerGB, nodes);
  }
  if (size_bytes / ranks >= kHealthCheckedBytesPerRank && bus_bw_bytes_per_s < kHealthyFraction * ring_bound) {
    return fmt::format("busbw {:.1f} GB/s at {:.0f} MiB is below half of the links' {:.0f} GB/s: a misconfigured or "
                       "faulty fabric (check ib_write_bw, GPUDirect RDMA, PCIe ACS)",
                       bus_bw_bytes_per_s / kBytesPerGB, size_bytes / (1 << 20), ring_bound / kBytesPerGB);
  }
  return std::nullopt;
}

}  // namespace commbound::network
