// Runs a command line as a user would from a shell and keeps what it printed (stdout and stderr
// together) with its exit code, and reads back the files it wrote: how the CLI tests meet
// commbound and its tools.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace commbound::testing {

struct CommandRun {
  int exit_code = -1;  // -1 when it could not start or did not exit normally
  std::string out;     // stdout and stderr, interleaved as printed
};

inline CommandRun run_command(const std::string& command) {
  CommandRun r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) r.out += buf.data();
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// What a tool wrote to `path` ("" when it wrote nothing there).
inline std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace commbound::testing
