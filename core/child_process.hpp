// Child processes: run work in forked children and bring its result back through a pipe.
//
// Why: SimGrid runs one engine per process, so every simulated point (a training iteration, a
// platform) needs a process of its own; fork also hands the child everything the parent already
// loaded (a parsed scenario, a 3,500-row kernel table) without reading it again. The child sends
// back text (the caller chooses the encoding, e.g. JSON), or an Error.
#pragma once

#include "core/expected.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace commbound {

// What a child computes: text for the parent, or an Error (passed back as its message).
using ChildWork = std::function<Expected<std::string>()>;

// Runs `work` in a forked child and returns its result. A child that dies without reporting (a
// signal, an abort) gives an Error naming how it ended; what it printed on stderr stays there.
Expected<std::string> run_in_child(const ChildWork& work);

// What an unfinished work's result says after Ctrl-C.
inline constexpr const char* kInterruptedMessage = "interrupted";

// Whether the last run_in_children was stopped by Ctrl-C (SIGINT). While it runs, Ctrl-C stops
// its children (each runs in a process group of its own, so the terminal's signal reaches the
// parent alone) and starts no more: the finished ones keep their results, on_done included.
bool interrupted();

// Runs work(i) for i in [0, count) in at most `jobs` children at once (jobs >= 1) and returns the
// results in index order. `on_done(i, result)`, if set, is called in the parent as each finishes
// (in completion order): progress, or keeping finished points on disk. `start_if(i)`, if set, is
// asked in the parent just before work i would start (in index order, after on_done of every child
// finished so far): false leaves i unstarted, its result the error "not started" (a search that
// prunes by what it has seen).
std::vector<Expected<std::string>> run_in_children(
    std::size_t count, int jobs, const std::function<Expected<std::string>(std::size_t)>& work,
    const std::function<void(std::size_t, const Expected<std::string>&)>& on_done = {},
    const std::function<bool(std::size_t)>& start_if = {});

}  // namespace commbound
