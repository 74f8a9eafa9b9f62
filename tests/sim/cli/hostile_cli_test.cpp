// The CLI against hostile or careless input, one case each, as a new user or an attacker would
// type it: a shell command through a plot title or a file name, writes outside where asked or over
// what is not a regular file, and values that imply more than the machine holds. Each must end in
// one line naming the argument, key or file, exit 2 (or, for a title, a figure and nothing run),
// nothing written, and little memory: the most any child of a test took is checked against 1 GB.
#include "tests/support/run_command.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;
using commbound::testing::CommandRun;

CommandRun run(const std::string& args) { return commbound::testing::run_command(std::string(COMMBOUND_BIN) + " " + args); }

// A fresh, empty folder for one test.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("hostile_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void expect_one_line_refusal(const CommandRun& r, const std::string& says) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(r.out.rfind("commbound: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(says), std::string::npos) << r.out;
}

// The largest resident set of any child this test process has waited for.
long peak_child_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_maxrss;
}
constexpr long kMemoryCapKib = 1L << 20;  // 1 GiB

const std::string kOneGpu = "scenarios/examples/workstation-1gpu.toml";
const std::string kDgx = "scenarios/examples/dgx-h100-ib-ndr.toml";

// A title that ends gnuplot's string and line, and a results file whose name does the same (the
// default title is the file's name): the figures are drawn, and the command they carry never runs.
TEST(HostileCli, PlotTitleAndFileNameRunNothing) {
  const fs::path dir = scratch("plot");
  // commbound itself writes no such name (an output path with a control character is refused): the
  // results are renamed after. The plots run in `dir`, where the payload would leave its mark.
  const std::string csv = "weak\nsystem \"touch PWNED\"\n#.csv";
  ASSERT_EQ(run("run " + kOneGpu + " --format csv --out " + (dir / "plain.csv").string()).exit_code, 0);
  fs::rename(dir / "plain.csv", dir / csv);
  expect_one_line_refusal(run("run " + kOneGpu + " --out '" + (dir / "x\ny.csv").string() + "'"),
                          "a file name with a control character");
  const auto plot_in_dir = [&dir](const std::string& args) {
    return commbound::testing::run_command("cd " + dir.string() + " && " + COMMBOUND_BIN + " plot " + args);
  };
  const CommandRun titled = plot_in_dir("'" + csv + "' --out-dir a --title 'x\"\nsystem \"touch PWNED\"\n#'");
  EXPECT_EQ(titled.exit_code, 0) << titled.out;
  const CommandRun named = plot_in_dir("'" + csv + "' --out-dir b");
  EXPECT_EQ(named.exit_code, 0) << named.out;
  EXPECT_TRUE(fs::exists(dir / "a" / "breakdown.png"));
  EXPECT_TRUE(fs::exists(dir / "b" / "breakdown.png"));
  EXPECT_FALSE(fs::exists(dir / "PWNED")) << "a plot ran a command";
}

// fit-fabric --name is a file name inside calibration/fabric/, never a path out of it nor a hidden
// file in it; refused before any log is fitted.
TEST(HostileCli, FitFabricNameIsAPlainName) {
  const auto listing = [] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator("calibration/fabric")) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> before = listing();
  for (const std::string name : {"../../../../outside", "a/b", ".hidden", ".."}) {
    SCOPED_TRACE(name);
    expect_one_line_refusal(run("fit-fabric calibration/fabric/logs/logs.toml --name '" + name + "'"), "--name \"" + name);
  }
  expect_one_line_refusal(run("fit-fabric calibration/fabric/logs/logs.toml --name ''"), "--name: empty");
  EXPECT_EQ(listing(), before);
}

// --force replaces a regular file only: a symbolic link, a FIFO and a device are refused and left
// as they were (the link still a link, its target untouched).
TEST(HostileCli, ForceReplacesOnlyRegularFiles) {
  const fs::path dir = scratch("force");
  std::ofstream(dir / "target") << "kept\n";
  fs::create_symlink(dir / "target", dir / "link");
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  expect_one_line_refusal(run("run " + kOneGpu + " --out " + (dir / "link").string() + " --force"),
                          "a symbolic link; --force replaces only regular files");
  expect_one_line_refusal(run("run " + kOneGpu + " --out " + (dir / "fifo").string() + " --force"),
                          "a FIFO; --force replaces only regular files");
  expect_one_line_refusal(run("run " + kOneGpu + " --out /dev/full --force"),
                          "a device; --force replaces only regular files");
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(commbound::testing::file_text(dir / "target"), "kept\n");
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
}

// Two outputs on one file, or an output on the input: refused before anything is written.
TEST(HostileCli, AnOutputOnAnotherOutputOrTheInputIsRefused) {
  const fs::path dir = scratch("same");
  const std::string same = (dir / "same.json").string();
  expect_one_line_refusal(run("run " + kOneGpu + " --trace " + same + " --out " + same), "the same file as --trace");
  EXPECT_FALSE(fs::exists(same));
  const fs::path copy = dir / "scenario.toml";
  fs::copy_file(kOneGpu, copy);
  const std::string text = commbound::testing::file_text(copy);
  expect_one_line_refusal(run("run " + copy.string() + " --out " + (dir / "." / "scenario.toml").string() + " --force"),
                          "the same file as scenario");
  EXPECT_EQ(commbound::testing::file_text(copy), text);
}

// An output in a folder that does not exist is refused at once, not after the simulation.
TEST(HostileCli, AMissingFolderIsRefusedBeforeAnyWork) {
  const auto t0 = std::chrono::steady_clock::now();
  expect_one_line_refusal(run("run scenarios/paper/weak_scaling_7b.toml --out missing_dir/x.csv"),
                          "--out missing_dir/x.csv: missing_dir: no such folder");
  expect_one_line_refusal(run("fit-fabric calibration/fabric/logs/logs.toml --name x --out missing_dir/x.toml"),
                          "missing_dir: no such folder");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 5.0);  // the weak-scaling sweep alone takes 10-20 s, a fit 10-16 s
  EXPECT_FALSE(fs::exists("missing_dir"));
}

// A global batch past an int, or as many micro-batches as that: one line naming the key, where
// they used to wrap to 0 tokens/s and negative memory, abort, crash or take all the memory.
TEST(HostileCli, HugeBatchesAreRefusedByArithmetic) {
  for (const char* batch : {"4294967296", "2147483648", "8589934592"}) {
    SCOPED_TRACE(batch);
    expect_one_line_refusal(run("run " + kOneGpu + " --set training.global_batch=" + batch),
                            std::string("training.global_batch = ") + batch + ": must be between 1 and 2147483647");
  }
  // 2^16 + 2 sequences in micro-batches of 2: 32769 micro-batches, of 24 layers of at least 26 ops
  // (fused recipe, forward and backward): past 2^20 ops per GPU.
  expect_one_line_refusal(run("run " + kOneGpu + " --set training.global_batch=65538"), "ops per GPU, more than 1048576");
  // 2^20 sequences in micro-batches of 2: 2^19 micro-batches, past 2^16.
  expect_one_line_refusal(run("run " + kOneGpu + " --set training.global_batch=1048576"),
                          "are 524288 micro-batches, more than 65536");
  EXPECT_LT(peak_child_rss_kib(), kMemoryCapKib);
}

TEST(HostileCli, SearchOfAHugeBatchIsRefused) {
  for (const char* batch : {"1099511627776", "4294967808"}) {
    expect_one_line_refusal(run("search scenarios/studies/search_7b_256gpu.toml --set training.global_batch=" + std::string(batch)),
                            "must be between 1 and 2147483647");
  }
  EXPECT_LT(peak_child_rss_kib(), kMemoryCapKib);
}

// A [sweep] grid of 4 keys x 100 values (10^8 points) is refused from its size, before it is built;
// 20,000 points need --force-large.
TEST(HostileCli, SweepGridsAreBoundedBeforeTheyAreBuilt) {
  const fs::path dir = scratch("grid");
  std::string axis = "[";
  for (int v = 1; v <= 100; ++v) axis += std::to_string(v) + (v < 100 ? ", " : "]");
  const fs::path huge = dir / "huge.toml";
  std::ofstream(huge) << "[cluster]\nnode_type = \"dgx-h100\"\n[model]\nname = \"llama2-1b\"\n[sweep]\n"
                      << "key = [\"cluster.nodes\", \"training.seq_len\", \"training.local_batch\", \"training.micro_batch\"]\n"
                      << "grid = \"cartesian\"\nvalues = [" << axis << ", " << axis << ", " << axis << ", " << axis << "]\n";
  for (const std::string& command : {"run " + huge.string(), "sweep " + huge.string() + " --out-dir " + (dir / "out").string(),
                                     "sweep " + huge.string() + " --emit slurm " + (dir / "job").string()}) {
    SCOPED_TRACE(command);
    expect_one_line_refusal(run(command), "a cartesian grid of 100000000 points, more than 1000000");
  }
  const fs::path large = dir / "large.toml";
  std::ofstream(large) << "[cluster]\nnode_type = \"dgx-h100\"\n[model]\nname = \"llama2-1b\"\n[sweep]\n"
                       << "key = [\"cluster.nodes\", \"training.seq_len\", \"training.local_batch\"]\n"
                       << "grid = \"cartesian\"\nvalues = [" << axis << ", " << axis << ", [1, 2]]\n";
  expect_one_line_refusal(run("run " + large.string()), "20000 points, more than 10000 (docs/limits.md); pass --force-large");
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_FALSE(fs::exists(dir / "job"));
  EXPECT_LT(peak_child_rss_kib(), kMemoryCapKib);
}

// A million nodes on one switch: refused from the GPU count before SimGrid is started.
TEST(HostileCli, AClusterPastTheGpuLimitIsRefused) {
  const std::string sets = " --set fabric.topology=single-switch --set cluster.nodes=1048576";
  for (const std::string& command : {"platform " + kDgx + sets, "collective " + kDgx + sets + " --op allgather --nodes 2 --bytes 1M",
                                     "run " + kDgx + sets}) {
    SCOPED_TRACE(command);
    expect_one_line_refusal(run(command), "1048576 nodes of 8 GPUs are 8388608 GPUs, more than 262144");
  }
  expect_one_line_refusal(run("collective " + kDgx + " --op allgather --nodes 1:65536 --bytes 1M"),
                          "--nodes 1:65536: 65536 nodes of 8 GPUs are more than 262144 GPUs (docs/limits.md)");
  EXPECT_LT(peak_child_rss_kib(), kMemoryCapKib);
}

// 100,000 layers: a layout that does not fit is reported by its memory without building its
// program (12M ops before); a tiny model of that depth, which fits, is refused by the ops limit.
TEST(HostileCli, AHundredThousandLayers) {
  const fs::path dir = scratch("layers");
  const fs::path deep = dir / "deep.toml";
  std::ofstream(deep) << "[cluster]\nnode_type = \"workstation-1gpu\"\n[fabric]\ntopology = \"single-switch\"\n"
                      << "[model]\nlayers = 100000\nhidden = 4096\nheads = 32\nkv_heads = 32\nffn = 11008\nvocab = 32000\n"
                      << "[training]\nseq_len = 4096\nmicro_batch = 1\nglobal_batch = 1\n";
  const CommandRun oom = run("run " + deep.string());
  EXPECT_EQ(oom.exit_code, 0) << oom.out;
  EXPECT_NE(oom.out.find("OUT OF MEMORY"), std::string::npos) << oom.out;
  EXPECT_NE(oom.out.find("no op priced: the layout does not fit, and its program, past the size limits"), std::string::npos)
      << oom.out;
  expect_one_line_refusal(run("run " + deep.string() +
                              " --set model.hidden=64 --set model.heads=1 --set model.kv_heads=1 --set model.ffn=64 "
                              "--set model.vocab=64 --set training.seq_len=8"),
                          "1 micro-batches x 100000 layers on the busiest pipeline stage");
  EXPECT_LT(peak_child_rss_kib(), kMemoryCapKib);
}

TEST(HostileCli, AFractionOfAByteIsRefused) {
  expect_one_line_refusal(run("collective " + kDgx + " --op allgather --nodes 1 --bytes 0.5"),
                          "--bytes 0.5: not a whole number of bytes");
}

// The frictions a newcomer meets: both spellings of an op, an unclosed array, a folder where a
// file is expected, a point-to-point on one GPU, a mistyped command.
TEST(HostileCli, NewcomerMistakesAreSaidAsSuch) {
  const CommandRun nccl_spelling = run("collective " + kDgx + " --op all_reduce --nodes 1 --bytes 1M");
  EXPECT_EQ(nccl_spelling.exit_code, 0) << nccl_spelling.out;
  // validate takes the same spellings: the refusal is about the missing log, not the op.
  expect_one_line_refusal(run("validate " + kDgx + " --op allreduce --nccl-tests absent.log"), "absent.log: cannot be read");
  expect_one_line_refusal(run("run scenarios/paper/weak_scaling_7b.toml --set 'sweep.values=[1,2'"),
                          "sweep.values = [1,2: an unclosed array (a ']' is missing)");
  expect_one_line_refusal(run("plot scenarios --out-dir " + (scratch("folder") / "f").string()),
                          "scenarios: is a folder, not a file");
  expect_one_line_refusal(run("run " + kOneGpu + " --out scenarios"), "--out scenarios: is a folder; give a file name");
  expect_one_line_refusal(run("collective " + kOneGpu + " --op sendrecv --nodes 1 --bytes 1M"),
                          "sendrecv needs at least 2 ranks");
  expect_one_line_refusal(run("rn " + kOneGpu), "unknown command 'rn' (did you mean 'run'?)");
  expect_one_line_refusal(run("colective"), "(did you mean 'collective'?)");
}

}  // namespace

// Jobs that cannot be placed, each one line naming the [[job]] key and its line, nothing written:
// node ranges that overlap another job's, a job larger than the cluster, jobs that together need
// more nodes than it has, and ranges that do not hold the job's nodes.
TEST(HostileCli, JobsThatDoNotFitTheClusterAreRefused) {
  const fs::path dir = scratch("jobs");
  std::ifstream in("tests/sim/data/two_jobs.toml");
  const std::string two_jobs((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // `two_jobs` with the first `from` of each pair after the previous one replaced by its `to`.
  auto edited = [&](const std::vector<std::pair<std::string, std::string>>& edits) {
    std::string text = two_jobs;
    std::size_t at = 0;
    for (const auto& [from, to] : edits) {
      at = text.find(from, at);
      text.replace(at, from.size(), to);
      at += to.size();
    }
    return text;
  };
  const std::string spread = "placement = \"spread\"";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {edited({{spread, "node_ranges = [[0, 3]]"}, {spread, "node_ranges = [[3, 6]]"}}),
       ":33: job[1].node_ranges = [ [ 3, 6 ] ]: [3, 6]: node 3 runs another job"},
      {edited({{"nodes = 4", "nodes = 9"}}), ":17: job[0].nodes = 9: must be between 1 and 8"},
      {edited({{"nodes = 4", "nodes = 5"}}), ":32: job[1].nodes = 4: needs 4 nodes; 3 of the cluster's are free"},
      {edited({{spread, "node_ranges = [[0, 2]]"}}), ":18: job[0].node_ranges = [ [ 0, 2 ] ]: hold 3 nodes; the job has nodes = 4"},
  };
  for (const auto& [text, says] : cases) {
    const fs::path file = dir / "jobs.toml";
    std::ofstream(file) << text;
    SCOPED_TRACE(says);
    expect_one_line_refusal(run("run " + file.string() + " --out " + (dir / "out.csv").string()), says);
    EXPECT_FALSE(fs::exists(dir / "out.csv"));
  }
}

// A degraded part that the cluster does not have, or a speed that is no fraction: one line naming
// the [[degraded]] key, exit 2, nothing written.
TEST(HostileCli, DegradedPartsThatDoNotExistAreRefused) {
  const fs::path dir = scratch("degraded");
  std::ifstream in(kDgx);
  const std::string dgx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"component = \"gpu\"\nnode = 4\nspeed_fraction = 0.5", "degraded[0].node = 4: must be between 0 and 3"},
      {"component = \"gpu\"\nnode = 0\nindex = 8\nspeed_fraction = 0.5", "degraded[0].index = 8: must be between 0 and 7"},
      {"component = \"nic\"\nnode = 0\nspeed_fraction = -0.5", "degraded[0].speed_fraction = -0.5: must be between"},
      {"component = \"cpu\"\nnode = 0\nspeed_fraction = 0.5", "degraded[0].component = \"cpu\": must be one of: gpu, nic"},
      {"component = \"gpu\"\nnode = 0\nspeed_fraction = 0.5\nfrom_hour = -1", "degraded[0].from_hour = -1: must be between"},
      {"component = \"gpu\"\nnode = 0\nspeed_fraction = 0.5\nhours = 0", "degraded[0].hours = 0: must be above 0"},
  };
  for (const auto& [part, says] : cases) {
    const fs::path file = dir / "degraded.toml";
    std::ofstream(file) << dgx << "\n[[degraded]]\n" << part << "\n";
    SCOPED_TRACE(says);
    expect_one_line_refusal(run("platform " + file.string() + " --set cluster.nodes=4 --export " + (dir / "out.xml").string()),
                            says);
    EXPECT_FALSE(fs::exists(dir / "out.xml"));
  }
}

// commbound train's inputs: a negative failure rate, a storage rate of zero, no tokens at all,
// each one line naming the key or the flag, exit 2, nothing written.
TEST(HostileCli, TrainRefusesRatesThatAreNoRates) {
  const fs::path dir = scratch("train");
  const fs::path out = dir / "train.csv";
  const std::string train = "train " + kOneGpu + " --out " + out.string();
  expect_one_line_refusal(run(train + " --tokens 1e9 --set train.gpu_failures_per_gpu_hour=-1e-5"),
                          "train.gpu_failures_per_gpu_hour = -1.0000000000000001e-05: must be between 0 and 1");
  expect_one_line_refusal(run(train + " --tokens 1e9 --set train.storage_TBps=0"), "train.storage_TBps = 0: must be between");
  expect_one_line_refusal(run(train), "train needs the tokens to train: --tokens N or [train] tokens");
  EXPECT_FALSE(fs::exists(out));
}

// Degraded windows that would need more simulated iterations than allowed: 9 GPUs each slow for an
// hour at hours 0, 2, ..., 16 make 18 phases (slow, then none), over the 16 simulated. One line,
// exit 2, nothing written.
TEST(HostileCli, TrainRefusesWindowsOfTooManyPhases) {
  const fs::path dir = scratch("train_windows");
  std::ifstream in(kDgx);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text += "\n[model]\nname = \"llama2-7b\"\n";
  for (int k = 0; k < 9; ++k) {
    text += "\n[[degraded]]\ncomponent = \"gpu\"\nnode = " + std::to_string(k / 8) + "\nindex = " +
            std::to_string(k % 8) + "\nspeed_fraction = 0.5\nfrom_hour = " + std::to_string(2 * k) + "\nhours = 1\n";
  }
  const fs::path file = dir / "windows.toml";
  std::ofstream(file) << text;
  const fs::path out = dir / "train.csv";
  expect_one_line_refusal(run("train " + file.string() + " --tokens 1e12 --set cluster.nodes=2 --out " + out.string()),
                          "degraded: the windows make 18 phases with different parts slow; at most 16");
  EXPECT_FALSE(fs::exists(out));
}
