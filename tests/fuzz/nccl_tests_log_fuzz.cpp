// Fuzzes the nccl-tests log reader (network/nccl_tests_log.hpp) on any text, read twice: with no
// facts, and with facts a user could give on the command line (the op, nodes and GPUs per node,
// picked by the input's size). Contract: an error names the file; a log has rows whose numbers are positive and finite,
// ranks that are a whole number of GPUs per node, lines inside the text.
#include "network/nccl_tests_log.hpp"
#include "tests/fuzz/fuzz_input.hpp"

#include <algorithm>
#include <cmath>

namespace commbound::fuzz {
namespace {

network::LogFacts facts_of(std::size_t choice) {
  network::LogFacts facts;
  switch (choice % 4) {
    case 1: facts.op = network::CollectiveOp::all_gather; break;
    case 2: facts.nodes = 2; facts.gpus_per_node = 8; break;
    case 3: facts.op = network::CollectiveOp::all_reduce; facts.nodes = 1; facts.gpus_per_node = 4; facts.nccl_version = "2.21.5"; break;
    default: break;
  }
  return facts;
}

void check_timing(const network::NcclTestsRow::Timing& t, const std::string& at) {
  require(std::isfinite(t.time_s) && t.time_s > 0, at + ": time_s not positive and finite");
  require(std::isfinite(t.alg_bw_bytes_per_s) && t.alg_bw_bytes_per_s >= 0, at + ": algbw not finite and >= 0");
  require(std::isfinite(t.bus_bw_bytes_per_s) && t.bus_bw_bytes_per_s >= 0, at + ": busbw not finite and >= 0");
  require(t.wrong >= -1, at + ": #wrong below -1");
}

void check(const std::string& path, const std::string& text, const network::LogFacts& facts) {
  auto logs = network::parse_nccl_tests_log(path, text, facts);
  if (!logs) {
    require_error_names(logs.error(), {path + ":"});
    return;
  }
  const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  require(!logs->empty(), "a log read with no section");
  for (const network::NcclTestsLog& log : *logs) {
    require(log.path == path, "a section that forgot its path");
    require(!log.op_name.empty(), "a section without an op name");
    require(!log.rows.empty(), "a section without rows");
    require(log.nodes >= 1 && log.ranks >= log.nodes && log.ranks % log.nodes == 0,
            "ranks not a whole number of GPUs per node: " + std::to_string(log.ranks) + " on " + std::to_string(log.nodes));
    for (const network::NcclTestsRow& row : log.rows) {
      const std::string at = path + ":" + std::to_string(row.line);
      require(row.line >= 1 && row.line <= lines, at + ": line outside the text");
      require(std::isfinite(row.size_bytes) && row.size_bytes > 0, at + ": size not positive");
      require(row.count >= 0, at + ": negative count");
      check_timing(row.out_of_place, at);
      if (row.in_place) check_timing(*row.in_place, at);
    }
  }
}

}  // namespace
}  // namespace commbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace commbound::fuzz;
  // The file name names an op, as the shipped logs' names do ("_ag"): used when the log names none.
  const std::string path = "fuzz/s4_vp_4node_ag.txt";
  const std::string text = text_of(data, size);
  check(path, text, {});
  check(path, text, facts_of(size));
  return 0;
}
