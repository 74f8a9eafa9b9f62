// The commbound commands: each registers a CLI11 subcommand (its options, help and callback) on
// the application. A callback parses nothing itself (CLI11 did), calls the library, prints, and
// leaves its exit code in `exit_code` (0 success, 2 bad input or a refusal to overwrite, 1 an
// internal failure, 130 stopped by Ctrl-C as a shell reports SIGINT). Only main() returns it.
#pragma once

#include <CLI/CLI.hpp>

namespace commbound::cli {

inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT

void add_run_command(CLI::App& app, int& exit_code);          // run_command.cpp
void add_collective_command(CLI::App& app, int& exit_code);   // fabric_commands.cpp
void add_platform_command(CLI::App& app, int& exit_code);     // fabric_commands.cpp
void add_validate_command(CLI::App& app, int& exit_code);     // fabric_commands.cpp
void add_fit_fabric_command(CLI::App& app, int& exit_code);   // fit_commands.cpp
void add_shapes_command(CLI::App& app, int& exit_code);       // table_commands.cpp
void add_derive_table_command(CLI::App& app, int& exit_code); // table_commands.cpp
void add_plot_command(CLI::App& app, int& exit_code);         // plot_command.cpp
void add_sweep_command(CLI::App& app, int& exit_code);        // sweep_command.cpp
void add_search_command(CLI::App& app, int& exit_code);       // search_command.cpp
void add_profile_command(CLI::App& app, int& exit_code);      // profile_command.cpp
void add_train_command(CLI::App& app, int& exit_code);        // train_command.cpp

}  // namespace commbound::cli
