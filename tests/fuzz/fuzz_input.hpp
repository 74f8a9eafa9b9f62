// What the fuzz targets share: the fuzzer's bytes written to a scratch file (the readers take
// paths, as users give them), and the contract every reader keeps on any input: a value, or one
// error line that names the input. A broken contract aborts with the reason, which libFuzzer
// reports as a crash and saves the input of.
#pragma once

#include "core/expected.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

namespace commbound::fuzz {

// Aborts, printing `what`, unless `condition` holds: a reader broke its contract on this input.
inline void require(bool condition, const std::string& what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz: contract broken: %s\n", what.c_str());
  std::abort();
}

// The bytes as text.
inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Writes `bytes` to <temp dir>/commbound-fuzz-<pid>-<name> and returns its path (the same file
// for every input of this process: the readers only ever see one at a time).
inline std::string scratch_file(const std::string& name, const std::string& bytes) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("commbound-fuzz-" + std::to_string(getpid()) + "-" + name)).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  require(static_cast<bool>(out), "cannot write the scratch file " + path);
  return path;
}

// The error contract: a non-empty message on one line that starts with one of `names` (the
// input's path, or the --set that was wrong).
inline void require_error_names(const Error& error, std::initializer_list<std::string> names) {
  const std::string& m = error.message;
  require(!m.empty(), "an empty error message");
  require(m.find('\n') == std::string::npos, "an error of more than one line: " + m);
  bool named = false;
  for (const std::string& name : names) named = named || m.rfind(name, 0) == 0;
  require(named, "an error that does not start with the input's name: " + m);
}

}  // namespace commbound::fuzz
