// LinkOccupancy: which collectives have flows on which links, so that a collective that shares no
// link it could be slowed on with any other can be priced without simulating its flows.
//
// Why: a DeepSeek-V3 iteration runs about 15k all-to-alls of one shape, each cut into about a
// hundred segment flows (fluid_flows.hpp), and most of them share no link with anything else while
// they run; a Llama 3.1 405B ZeRO-3 step runs about 200k data-parallel rings that mostly do not
// either. Alone, a call whose segments are capped at rates their links carry together moves each at
// its cap from start to end: its outcome is known at its start, and simulating its flows was most
// of the run's wall time (docs/performance.md). A job is one run_fluid() call; it is registered on
// the links its segments cross from its start to its end, with what it puts on each at its caps
// (its load). A link is contended when more than one job is on it and their loads together exceed
// its capacity, or one of them is uncapped: only there can max-min sharing slow a flow. A link whose
// jobs' caps fit cannot bind any of their flows, shared or not (on an adaptive fat-tree the rails'
// rings all cross their leaf's up-links, which carry them all). A job whose links are uncontended is
// not simulated; when a link of it becomes contended, it is materialized at that instant (Job::mark,
// then Job::start_marked): its unfinished segments on that link become flows in SimGrid with the
// bytes and latency they have left, so that from then on everything shares the links as if they had
// been simulated from the start. A flow keeps the links it carries until its call ends.
//
// Only flows started by run_fluid() are tracked. Code that starts other flows (step-exact messages,
// the unmerged all-to-all) calls disable() first: every unsimulated job is materialized and none
// is left unsimulated again.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

namespace commbound::network::internal {

class LinkOccupancy {
public:
  // A link's identity (its SimGrid implementation), as a route lists it.
  using LinkId = const void*;
  struct Job;
  // A job on a link: the job, and the link's index in its links.
  struct Use {
    Job* job;
    int link;
  };

  struct LinkState;

  // One run_fluid() call.
  struct Job {
    const std::vector<LinkId>* links = nullptr;  // every link its segments cross, each once
    // Per link (as `links`): its capacity and what the job puts on it with every segment at its cap
    // (bytes/s). Null loads: uncapped (its flows may fill any link); null capacities: unknown, so
    // the link is contended whenever it is shared.
    const std::vector<double>* capacities_bytes_per_s = nullptr;
    const std::vector<double>* loads_bytes_per_s = nullptr;
    // Set while some of its segments go unsimulated. Marks those of them that cross any of `links`
    // (indices into *links) and have not finished to become flows, making no simcall, and returns
    // whether it marked any; start_marked() then starts them (may make simcalls). Two steps, so
    // that every job met is told before the first simcall lets other actors run.
    std::function<bool(const std::vector<int>& links)> mark;
    std::function<void()> start_marked;
    // Each of its links' state (an unordered_map's elements stay put, and a link's entry is never
    // removed), so that remove() finds them without hashing every link again. Set by add(), or
    // before it by the caller from link_states() kept for the same links.
    std::vector<LinkState*> link_states;
  };

  // Whether `load_bytes_per_s` is more than a link of `capacity_bytes_per_s` carries, beyond the
  // rounding of the saturating rates callers cap at (coupled_group_rates: 1e-9 relative).
  static bool exceeds(double load_bytes_per_s, double capacity_bytes_per_s) {
    constexpr double kRoundingSlack = 1e-9;
    return load_bytes_per_s > capacity_bytes_per_s * (1 + kRoundingSlack);
  }

  // A link's jobs and what they put on it together.
  struct LinkState {
    std::vector<Use> users;
    double capacity_bytes_per_s = 0;  // set by the first job that knows it
    double load_bytes_per_s = 0;      // the capped jobs' loads
    int uncapped = 0;                 // jobs on it with no load
    bool contended() const;
  };

  // Another job found on a new job's contended links, and the indices (into its own links) of those.
  struct Meeting {
    Job* job;
    std::vector<int> links;
  };

  // The states of `links`, each link's entry made if new: what add() walks. They stay valid for the
  // occupancy's life, so a caller may keep them for every later job over the same links.
  std::vector<LinkState*> link_states(const std::vector<LinkId>& links);
  // Registers `job` on its links (before its first simcall). Returns the other jobs on any of its
  // links that are contended with it there, each once with those links, and sets `shared` to the
  // indices of `job`'s contended links. The caller marks the segments of the jobs met on those
  // links, then starts them.
  std::vector<Meeting> add(Job& job, std::vector<int>& shared);
  // Unregisters `job` (at the end of its run_fluid() call).
  void remove(Job& job);

  // Whether segments may go unsimulated: no untracked flow has ever been started.
  bool enabled() const { return enabled_; }
  // Untracked flows are about to start: every unsimulated segment becomes a flow now (may make
  // simcalls) and every segment is simulated from now on.
  void disable();

private:
  std::unordered_map<LinkId, LinkState> states_;
  std::vector<Job*> jobs_;  // in registration order
  bool enabled_ = true;
};

}  // namespace commbound::network::internal
