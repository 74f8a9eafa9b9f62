// Fuzzes the profiler trace reader (sim/trace/kineto_reader.hpp) on any bytes, as a file that may be
// gzip or plain JSON. Contract: an error names the file; a trace has GPU activities with finite,
// non-negative durations, dependencies on other activities of the step, a finite iteration. Input
// that is not gzip is also read gzip-compressed, and must read the same: the reader decompresses
// as it parses, and compression changes nothing of what it finds.
#include "sim/trace/kineto_reader.hpp"
#include "tests/fuzz/fuzz_input.hpp"

#include <zlib.h>

#include <cmath>

namespace commbound::fuzz {
namespace {

// `bytes` gzip-compressed into the scratch file `name`.
std::string gzip_file(const std::string& name, const std::string& bytes) {
  const std::string path = scratch_file(name, "");
  gzFile out = gzopen(path.c_str(), "wb1");
  require(out != nullptr, "cannot write " + path);
  if (!bytes.empty()) gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size()));
  require(gzclose(out) == Z_OK, "cannot compress into " + path);
  return path;
}

Expected<sim::KinetoTrace> read_checked(const std::string& path) {
  auto trace = sim::read_kineto_trace(path);
  if (!trace) {
    require_error_names(trace.error(), {path + ":"});
    return trace;
  }
  require(trace->path == path, "a trace that forgot its path");
  require(!trace->ops.empty(), "a trace without GPU activity");
  require(std::isfinite(trace->iteration_s) && trace->iteration_s >= 0, "iteration_s not finite and >= 0");
  require(std::isfinite(trace->cpu_step_s) && trace->cpu_step_s >= 0, "cpu_step_s not finite and >= 0");
  require(trace->contradicted_dependencies >= 0, "a negative count of contradicted dependencies");
  for (std::size_t i = 0; i < trace->ops.size(); ++i) {
    const sim::TraceOp& op = trace->ops[i];
    require(std::isfinite(op.start_s), "op " + std::to_string(i) + ": start_s not finite");
    require(std::isfinite(op.duration_s) && op.duration_s >= 0, "op " + std::to_string(i) + ": duration_s not finite and >= 0");
    if (i > 0) require(trace->ops[i - 1].start_s <= op.start_s, "ops not in order of start");
    for (int d : op.deps) {
      require(d >= 0 && static_cast<std::size_t>(d) < trace->ops.size() && static_cast<std::size_t>(d) != i,
              "op " + std::to_string(i) + ": a dependency outside the step: " + std::to_string(d));
    }
    if (op.collective) {
      require(std::isfinite(op.collective->size_bytes) && op.collective->size_bytes >= 0,
              "op " + std::to_string(i) + ": a collective size not finite and >= 0");
    }
  }
  return trace;
}

}  // namespace
}  // namespace commbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace commbound::fuzz;
  const std::string bytes = text_of(data, size);
  const std::string plain_path = scratch_file("trace.json", bytes);
  auto plain = read_checked(plain_path);
  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (is_gzip) return 0;
  const std::string gzip_path = gzip_file("trace.json.gz", bytes);
  auto gzipped = read_checked(gzip_path);
  require(plain.has_value() == gzipped.has_value(), "plain and gzip reads disagree on success");
  if (plain) {
    require(plain->ops.size() == gzipped->ops.size(), "plain and gzip reads found different ops");
    require(plain->iteration_s == gzipped->iteration_s, "plain and gzip reads found different iterations");
  } else {
    const std::string plain_reason = plain.error().message.substr(plain_path.size());
    const std::string gzip_reason = gzipped.error().message.substr(gzip_path.size());
    require(plain_reason == gzip_reason, "plain and gzip reads fail differently: " + plain.error().message + " | " +
                                             gzipped.error().message);
  }
  return 0;
}
