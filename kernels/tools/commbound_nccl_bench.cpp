// commbound-nccl-bench: runs real NCCL collectives on this node's GPUs and prints nccl-tests'
// output (kernels/host/nccl_bench.hpp), which `commbound fit-fabric` reads like any nccl-tests log.
// main only parses, dispatches and turns errors into exit codes: 2 bad input, 1 the machine or
// NCCL failed (or returned wrong data). Never links SimGrid.
#include "core/atomic_write.hpp"
#include "core/file_type.hpp"
#include "kernels/host/nccl_bench.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#ifndef COMMBOUND_GIT_COMMIT
#define COMMBOUND_GIT_COMMIT "unknown"
#endif

using namespace commbound;
using namespace commbound::kernels;

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

constexpr const char* kDescription =
    "commbound-nccl-bench: real NCCL collectives on this node's GPUs, printed as nccl-tests prints them";

constexpr const char* kFooter = R"(
What it measures: one process drives the first --gpus visible GPUs (CUDA_VISIBLE_DEVICES picks
which) as one NCCL communicator (ncclCommInitAll): NVLink / NVSwitch or PCIe inside this node, no
network. For each size, --warmup untimed launches, then --iters back-to-back launches timed on the
host from the first launch until every GPU is done; the mean per launch is printed, out-of-place
then in-place, as nccl-tests' all_reduce_perf, all_gather_perf, reduce_scatter_perf and
sendrecv_perf print it (NVIDIA/nccl-tests, src/common.cu). NCCL_* environment variables
(NCCL_ALGO, NCCL_PROTO, NCCL_DEBUG=INFO, ...) apply as usual.

nccl-tests' conventions:
  size    the whole buffer in bytes: allreduce and sendrecv the buffer each rank sends, allgather
          the gathered output, reducescatter the input. Sizes go from -b to -e, x -f each step
          (K M G are binary: 1K = 1024).
  count   the elements each rank passes to NCCL; allgather and reducescatter: per rank, rounded
          down to 16 bytes, so size = count x ranks x element size (sizes below that are skipped).
  time    microseconds per launch; algbw = size / time in GB/s (1e9 bytes/s); busbw = algbw x
          2(n-1)/n for allreduce, x (n-1)/n for allgather and reducescatter, x 1 for sendrecv
          (rank i sends to i+1 and receives from i-1; one rank sends to itself).
  #wrong  elements of one extra launch, on a known integer pattern, that differ from the exact
          result; N/A with -c 0, and for in-place sendrecv (nccl-tests does not check it either).

Feeding commbound: save the output and fit a fabric to it. fit-fabric needs the node's GPU count
to be the scenario's (8 for a DGX H100) and fits sizes from 32M to 16G; a single node's logs
inform the NVLink side only, the network needs multi-node nccl-tests logs (mpirun) beside them.
  commbound-nccl-bench --op allreduce -b 32M -e 8G --out ar_1node.txt
  commbound-nccl-bench --op allgather -b 32M -e 8G --out ag_1node.txt
  commbound fit-fabric ar_1node.txt ag_1node.txt --name my-h100 \
      --scenario scenarios/examples/dgx-h100-ib-ndr.toml      (writes calibration/fabric/my-h100.toml)
  commbound collective scenarios/examples/dgx-h100-ib-ndr.toml --set nccl.fit=my-h100 \
      --op allreduce --nodes 1 --bytes 32M:8G                  (the fitted model, beside your log)
  commbound validate scenarios/examples/dgx-h100-ib-ndr.toml --set nccl.fit=my-h100
                                                               (the fitted model vs published runs)

Exit status: 0 success; 2 bad arguments, or --out exists without --force; 1 no GPU, fewer GPUs
than --gpus, a CUDA or NCCL failure, or wrong data (#wrong > 0; the output is still written).)";

// One line on stderr; bad input points at --help.
int fail(int code, const std::string& message) {
  std::fprintf(stderr, "commbound-nccl-bench: %s%s\n", message.c_str(),
               code == kExitBadInput ? " (see commbound-nccl-bench --help)" : "");
  return code;
}

std::string now_utc() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(kDescription, "commbound-nccl-bench");
  app.footer(kFooter);
  std::string op = "allreduce", dtype = "float", min_text = "32M", max_text = "32M", out;
  int check = 1;
  bool force = false;
  NcclBenchOptions options;
  app.add_option("--op", op, "allreduce | allgather | reducescatter | sendrecv")
      ->type_name("OP")->capture_default_str();
  app.add_option("-g,--gpus", options.gpus, "GPUs in the communicator, the first visible ones (0: all)")
      ->type_name("N")->check(CLI::Range(0, 1024))->capture_default_str();
  app.add_option("-b,--min-bytes", min_text, "smallest size (K M G suffixes)")->type_name("SIZE")->capture_default_str();
  app.add_option("-e,--max-bytes", max_text, "largest size")->type_name("SIZE")->capture_default_str();
  app.add_option("-f,--step-factor", options.step_factor, "each size is the previous one x this")
      ->type_name("F")->check(CLI::Range(2, 1 << 20))->capture_default_str();
  app.add_option("-d,--dtype", dtype, "float | half | bfloat16")
      ->type_name("TYPE")->capture_default_str();
  app.add_option("-w,--warmup", options.warmup_iters, "untimed launches before each timing")
      ->type_name("N")->check(CLI::Range(0, 1 << 20))->capture_default_str();
  app.add_option("-n,--iters", options.iters, "timed launches per timing")
      ->type_name("N")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("-c,--check", check, "1: count wrong elements; 0: print N/A")
      ->type_name("0|1")->check(CLI::Range(0, 1))->capture_default_str();
  app.add_option("--out", out, "also write the output there (never over an existing file without --force)")
      ->type_name("FILE");
  app.add_flag("--force", force, "allow --out to replace an existing file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(kExitBadInput, e.what());
  }

  auto parsed_op = parse_nccl_bench_op(op);
  auto parsed_type = parse_nccl_bench_type(dtype);
  auto min_bytes = parse_size_bytes(min_text);
  auto max_bytes = parse_size_bytes(max_text);
  if (!min_bytes) return fail(kExitBadInput, "-b/--min-bytes " + min_bytes.error().message);
  if (!max_bytes) return fail(kExitBadInput, "-e/--max-bytes " + max_bytes.error().message);
  for (const Status& s : {parsed_op.status(), parsed_type.status()}) {
    if (!s) return fail(kExitBadInput, s.error().message);
  }
  options.op = *parsed_op;
  options.type = *parsed_type;
  options.min_bytes = *min_bytes;
  options.max_bytes = *max_bytes;
  options.check = check == 1;
  if (Status s = check_options(options); !s) return fail(kExitBadInput, s.error().message);
  if (!out.empty() && !force) {
    auto type = file_type_at(out);  // a symlink loop or a name too long: an error, not an exception
    if (!type) return fail(kExitBadInput, type.error().message);
    if (*type != std::filesystem::file_type::not_found) return fail(kExitBadInput, out + " exists; pass --force to overwrite it");
  }

  auto bench = NcclBench::create(options);
  if (!bench) return fail(kExitFailure, bench.error().message);
  NcclBenchSetup setup = bench->setup();
  setup.tool_commit = COMMBOUND_GIT_COMMIT;
  setup.date_utc = now_utc();
  std::string text;
  auto emit = [&](const std::string& lines) {
    std::fputs(lines.c_str(), stdout);
    std::fflush(stdout);
    text += lines;
  };
  emit(format_header(options, setup));
  std::vector<NcclBenchRow> rows;
  for (const NcclBenchSize& size : bench->sizes()) {
    auto row = bench->measure(size);
    if (!row) return fail(kExitFailure, std::to_string(size.size_bytes) + " bytes: " + row.error().message);
    emit(format_row(options, *row));
    rows.push_back(*row);
  }
  emit(format_footer(options, rows));
  if (!out.empty()) {
    if (Status s = write_file_atomically(out, text); !s) return fail(kExitFailure, s.error().message);
  }
  int wrong_timings = 0;
  for (const NcclBenchRow& r : rows) wrong_timings += (r.out_of_place.wrong > 0) + (r.in_place.wrong > 0);
  if (wrong_timings > 0) {
    return fail(kExitFailure, std::to_string(wrong_timings) + " timings returned wrong data (#wrong > 0): NCCL, the "
                              "GPUs or their links are faulty; do not fit to this log");
  }
  return 0;
}
