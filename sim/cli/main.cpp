// commbound: the command-line front end. Parses arguments (CLI11) and dispatches to the commands
// (sim/cli/*_command*.cpp), which call the library. Exit codes: 0 success, 2 bad input (scenario,
// flags, refusing to overwrite, no command at all), 1 internal failure. What was asked for (help,
// --version, results) goes to stdout; usage after a mistake goes to stderr.
#include "sim/cli/command.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

const char* kDescription = R"(commbound: emulate NCCL collectives and LLM training on GPU clusters (SimGrid).

A scenario file describes a cluster (nodes, NVLink/NVSwitch, InfiniBand or RoCE fabric) and,
optionally, a training job ([model], [training], [parallel], [sweep]). Every key, preset and model:
docs/scenarios.md; every page: docs/README.md. `commbound help COMMAND` (or COMMAND --help) explains
one command.
)";

const char* kExamples = R"(Examples:
  commbound run scenarios/paper/weak_scaling_7b.toml
  commbound run scenarios/paper/model_parallel_7b_256gpu.toml --set 'sweep.values=[[2, 4]]' --trace tp2pp4.json
  commbound collective scenarios/examples/dgx-h100-ib-ndr.toml --op allreduce --nodes 1:512 --bytes 1G
  commbound collective scenarios/examples/dgx-h100-roce.toml --op allgather --nodes 4 --bytes 1M:1G --format csv
  commbound platform scenarios/examples/dgx-h100-ib-ndr.toml --set cluster.nodes=2 --export dgx2.xml
  commbound validate scenarios/examples/dgx-a100-ib-hdr.toml
  commbound sweep scenarios/paper/weak_scaling_7b.toml --out-dir runs/weak -j 2
  commbound search scenarios/studies/search_7b_256gpu.toml -j 2
  commbound profile scenarios/paper/weak_scaling_7b.toml --set 'sweep.values=[1]' --set parallel.tp=8
  commbound run scenarios/examples/trace-replay-ddp.toml --set cluster.nodes=8
  commbound run scenarios/studies/two_jobs.toml --set 'job[1].placement=spread' --trace jobs.json
  commbound train scenarios/paper/weak_scaling_7b.toml --tokens 2e12 --nodes 64:2048
  commbound shapes scenarios/paper/*.toml --out shapes.toml
  commbound derive-table --from calibration/h100-sxm5.toml --gpu a100-sxm4-80gb --out calibration/a100-sxm4-80gb.toml)";

// Usage lines name the program in front of a command: "commbound run [OPTIONS] scenario". CLI11
// passes "commbound run" when the help comes from `commbound run --help` and only "run" when it
// comes from `commbound help run` (cmd->help() with no parent name).
class Formatter : public CLI::Formatter {
public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    const bool named = name.rfind("commbound", 0) == 0;
    return CLI::Formatter::make_usage(app, app->get_parent() != nullptr && !named ? "commbound " + name : name);
  }
};

// Edits (insert, delete, replace one character) that turn `a` into `b`: Levenshtein's distance.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "unknown command 'rn' (did you mean 'run'?)": the command nearest `word` when it is at most two
// edits away (or `word` starts it), else the list.
std::string unknown_command(const CLI::App& app, const std::string& word) {
  std::string nearest, all;
  std::size_t best = 3;
  for (const CLI::App* cmd : app.get_subcommands({})) {
    const std::string& name = cmd->get_name();
    all += (all.empty() ? "" : ", ") + name;
    const std::size_t d = name.rfind(word, 0) == 0 ? 1 : edit_distance(word, name);
    if (d < best) {
      best = d;
      nearest = name;
    }
  }
  return "commbound: unknown command '" + word + "' " +
         (nearest.empty() ? "(commands: " + all + ")" : "(did you mean '" + nearest + "'?)");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace commbound::cli;
  CLI::App app(kDescription, "commbound");
  app.formatter(std::make_shared<Formatter>());
  app.footer(kExamples);
  app.require_subcommand(0, 1);
  app.fallthrough(false);
  app.set_version_flag("--version", "commbound " COMMBOUND_VERSION, "print the version and exit");
  int exit_code = 0;
  add_run_command(app, exit_code);
  add_collective_command(app, exit_code);
  add_platform_command(app, exit_code);
  add_validate_command(app, exit_code);
  add_fit_fabric_command(app, exit_code);
  add_shapes_command(app, exit_code);
  add_derive_table_command(app, exit_code);
  add_plot_command(app, exit_code);
  add_sweep_command(app, exit_code);
  add_search_command(app, exit_code);
  add_profile_command(app, exit_code);
  add_train_command(app, exit_code);
  std::string topic;
  CLI::App* help = app.add_subcommand("help", "print the help of COMMAND (or this overview)");
  help->add_option("command", topic, "a command")->type_name("COMMAND");

  // No command is a mistake: the overview goes to stderr, as the usage after a bad flag does, so
  // that nothing a script reads from stdout looks like output.
  if (argc < 2) {
    std::cerr << app.help();
    return kExitBadInput;
  }
  // A first word that is no option and no command is a mistyped command, not an extra argument.
  if (const std::string first = argv[1]; !first.empty() && first[0] != '-') {
    const auto commands = app.get_subcommands({});
    const bool known = std::any_of(commands.begin(), commands.end(), [&](const CLI::App* c) { return c->get_name() == first; });
    if (!known) {
      std::cerr << unknown_command(app, first) << "\n";
      return kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);  // the version on stdout, exit 0
  } catch (const CLI::ParseError& e) {
    const CLI::App* cmd = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
    std::cerr << "commbound: " << e.what()
              << (cmd != nullptr ? " (see commbound help " + cmd->get_name() + ")" : " (see commbound help)") << "\n";
    return kExitBadInput;
  }
  if (help->parsed()) {
    if (topic.empty()) {  // the overview (app.help() would print the selected `help` command's own)
      std::cout << app.get_formatter()->make_help(&app, "commbound", CLI::AppFormatMode::Normal);
      return 0;
    }
    for (const CLI::App* cmd : app.get_subcommands({})) {
      if (cmd->get_name() == topic) {
        std::cout << cmd->help();
        return 0;
      }
    }
    std::cerr << "commbound: help " << topic << ": no such command\n";
    return kExitBadInput;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << app.help();
    return kExitBadInput;
  }
  return exit_code;
}
