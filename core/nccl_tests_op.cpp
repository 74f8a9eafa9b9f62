// NcclTestsOp (nccl_tests_op.hpp): nccl-tests' binary names, the names read back, the busbw factors.
#include "core/nccl_tests_op.hpp"

#include <cctype>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace commbound {

const char* nccl_tests_binary(NcclTestsOp op) {
  switch (op) {
    case NcclTestsOp::all_gather: return "all_gather_perf";
    case NcclTestsOp::reduce_scatter: return "reduce_scatter_perf";
    case NcclTestsOp::all_reduce: return "all_reduce_perf";
    case NcclTestsOp::send_recv: return "sendrecv_perf";
    case NcclTestsOp::all_to_all: return "alltoall_perf";
  }
  return "?";
}

std::optional<NcclTestsOp> parse_nccl_tests_op(std::string_view name) {
  const std::size_t slash = name.find_last_of('/');
  std::string s(name.substr(slash == std::string_view::npos ? 0 : slash + 1));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Tried in this order; a name is one op's word between non-letters.
  static const std::vector<std::pair<std::regex, NcclTestsOp>> patterns = {
      {std::regex(R"((^|[^a-z])(all_?reduce|ar)([^a-z]|$))"), NcclTestsOp::all_reduce},
      {std::regex(R"((^|[^a-z])(all_?gather|ag)([^a-z]|$))"), NcclTestsOp::all_gather},
      {std::regex(R"((^|[^a-z])(reduce_?scatter|rs)([^a-z]|$))"), NcclTestsOp::reduce_scatter},
      {std::regex(R"((^|[^a-z])(send_?recv)([^a-z]|$))"), NcclTestsOp::send_recv},
      {std::regex(R"((^|[^a-z])(all_?to_?all|a2a)([^a-z]|$))"), NcclTestsOp::all_to_all},
  };
  for (const auto& [re, op] : patterns) {
    if (std::regex_search(s, re)) return op;
  }
  return std::nullopt;
}

double bus_bw_factor(NcclTestsOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case NcclTestsOp::all_reduce: return 2 * (n - 1) / n;  // src/all_reduce.cu, AllReduceGetBw
    case NcclTestsOp::all_gather:                          // src/all_gather.cu, AllGatherGetBw
    case NcclTestsOp::reduce_scatter:                      // src/reduce_scatter.cu, ReduceScatterGetBw
    case NcclTestsOp::all_to_all:                          // src/alltoall.cu, AlltoAllGetBw
      return (n - 1) / n;
    case NcclTestsOp::send_recv: return 1;  // src/sendrecv.cu, SendRecvGetBw
  }
  return 1;
}

}  // namespace commbound
