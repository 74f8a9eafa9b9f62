// NcclTestsLog: the output of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, ...) as
// printed, read back into numbers.
//
// Real measurements arrive as these logs: from a user's own 2-4 nodes, from issues and vendor
// pages, from commbound-nccl-bench. One reader for all of them: any op, out-of-place and in-place
// columns or only one of them, the layouts with and without the redop/root columns (nccl-tests
// before and after 2.10), with or without the '#' header lines, and NCCL_DEBUG=INFO lines mixed in.
// What the header says (op, ranks, hosts, NCCL version) is kept; what it does not say the caller
// supplies (LogFacts), on the command line or in a manifest of logs (read_nccl_tests_logs). A row
// that looks like data but does not parse, or whose numbers contradict each other (algbw != size /
// time), is an error naming the file and line: such a log was edited or truncated, and fitting to
// it would fit to noise.
#pragma once

#include "core/expected.hpp"
#include "network/cluster_spec.hpp"
#include "network/collective.hpp"

#include <optional>
#include <string>
#include <vector>

namespace commbound::network {

// One nccl-tests row: one buffer size, out-of-place then (when printed) in-place.
struct NcclTestsRow {
  struct Timing {
    double time_s = 0;
    double alg_bw_bytes_per_s = 0;
    double bus_bw_bytes_per_s = 0;
    long wrong = 0;  // '#wrong' (or the old 'error' column > 0); -1 when printed as N/A
  };
  double size_bytes = 0;  // nccl-tests' 'size': the whole buffer
  long count = 0;
  std::string type;       // float, half, bfloat16, ...
  Timing out_of_place;
  std::optional<Timing> in_place;
  int line = 0;           // 1-based line in its file
};

// What a log does not always say about itself; given on the command line or in a manifest.
struct LogFacts {
  std::optional<CollectiveOp> op{};
  std::optional<int> nodes{};
  std::optional<int> gpus_per_node{};
  std::string nccl_version{};
  std::optional<Algorithm> algorithm{};  // NCCL_ALGO when the run forced one
};

// One collective's section of a log (a file may hold several, one per *_perf run).
struct NcclTestsLog {
  std::string path;
  std::string op_name;                 // as printed ("all_gather_perf") or from LogFacts
  std::optional<CollectiveOp> op;      // nullopt: an op commbound does not model (broadcast, ...)
  int ranks = 0;                       // from the '#  Rank' lines, or nodes x gpus_per_node
  int nodes = 0;                       // distinct hosts of the '#  Rank' lines, or LogFacts
  std::string nccl_version;            // "2.26.2" when printed or given; "" when unknown
  std::string gpu_name;                // from the first '#  Rank' line, "" when not printed
  std::optional<Algorithm> algorithm;  // NCCL_ALGO as given in LogFacts; nullopt: NCCL chose
  std::vector<NcclTestsRow> rows;

  int gpus_per_node() const { return nodes > 0 ? ranks / nodes : 0; }
};

// Reads nccl-tests output `text` (the contents of `path`, named in errors). `facts` fill what the
// header does not print and must agree with what it does. Errors: "path:line: why".
Expected<std::vector<NcclTestsLog>> parse_nccl_tests_log(const std::string& path, const std::string& text,
                                                          const LogFacts& facts);
// The same, reading the file at `path` (plain text).
Expected<std::vector<NcclTestsLog>> read_nccl_tests_log(const std::string& path, const LogFacts& facts);
// Every log of `paths`, in order: each an nccl-tests log read as above (`facts` fill what it does
// not print), or a manifest (*.toml with [[log]] tables: file, op, nodes, gpus_per_node,
// nccl_version, algorithm, source, trust; files relative to the manifest, as
// calibration/fabric/logs/logs.toml) whose tables give each file's facts. Errors: a log's, as
// above; a manifest's naming the file, the [[log]] table and the key; none read at all.
Expected<std::vector<NcclTestsLog>> read_nccl_tests_logs(const std::vector<std::string>& paths,
                                                         const LogFacts& facts);

// The op named by an nccl-tests binary or a file name: "all_gather_perf", "allgather",
// "s4_vp_4node_ag.txt" (parse_nccl_tests_op, core/nccl_tests_op.hpp). nullopt when
// none is named.
std::optional<CollectiveOp> op_from_name(const std::string& name);

// Why one measurement cannot come from a healthy fabric of `cluster`'s hardware (node type, NICs,
// link), or nullopt: busbw above what the NVLink or the NICs can move, or, at >= 1 GiB, below half
// of the links (a misconfigured or faulty fabric: NVIDIA/nccl-tests issue 290's kind). Used by
// fit-fabric to refuse a log and by validate to keep such points out of its error summary.
std::optional<std::string> measurement_issue(const ClusterSpec& cluster, CollectiveOp op, int nodes, int ranks,
                                             double size_bytes, double bus_bw_bytes_per_s);

}  // namespace commbound::network
