// LinkOccupancy: which collectives have flows on which links, so that a collective that shares no
// link with any other can replay an identical earlier one instead of simulating its flows again.
//
// Why: a DeepSeek-V3 iteration runs about 15k all-to-alls of one shape, each cut into about a
// hundred segment flows (fluid_flows.hpp), and most of them share no link with anything else while
// they run: their flows then move exactly as the first such call's did, and simulating them again
// was most of the run's wall time (docs/performance.md). A job is one run_fluid() call; it is
// registered on the links its segments cross from its start to its end. A job that met no other
// job on its links during its whole life ran alone: its outcome may be replayed by a later
// identical job that finds its links free. A replayed job that another job comes to share a link
// with is materialized at that instant (Job::materialize): its unfinished segments become flows in
// SimGrid with the bytes and latency they have left, so that from then on everything shares the
// links as if they had been simulated from the start.
//
// Only flows started by run_fluid() are tracked. Code that starts other flows (step-exact messages,
// the unmerged all-to-all) calls disable() first: replays end and none starts again.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

namespace commbound::network::internal {

class LinkOccupancy {
public:
  // A link's identity (its SimGrid implementation), as a route lists it.
  using LinkId = const void*;

  // One run_fluid() call.
  struct Job {
    const std::vector<LinkId>* links = nullptr;  // every link its segments cross, each once
    bool shared = false;        // another job used one of its links at some point of its life
    // Set while the job is replayed: turns its unfinished segments into simulated flows now. Called
    // at most once, by whoever meets the job first; may make simcalls.
    std::function<void()> materialize;
    // Each of its links' user lists (an unordered_map's elements stay put, and a link's entry is
    // never removed), so that remove() finds them without hashing every link again. Set by add(),
    // or before it by the caller from user_lists() kept for the same links.
    std::vector<std::vector<Job*>*> user_lists;
  };

  // The user lists of `links`, each link's entry made if new: what add() walks. They stay valid for
  // the occupancy's life, so a caller may keep them for every later job over the same links.
  std::vector<std::vector<Job*>*> user_lists(const std::vector<LinkId>& links);
  // Registers `job` on its links (before its first simcall) and returns the other jobs on any of
  // them, each once; those and `job` are marked shared. The caller materializes any of them that is
  // being replayed (take_materialize) after registering.
  std::vector<Job*> add(Job& job);
  // Unregisters `job` (at the end of its run_fluid() call).
  void remove(Job& job);
  // Takes `job`'s materialize() (empty when it is simulated), so that it runs once.
  static std::function<void()> take_materialize(Job& job);

  // Whether replaying is allowed: no untracked flow has ever been started.
  bool enabled() const { return enabled_; }
  // Untracked flows are about to start: every replayed job is materialized now (may make simcalls)
  // and no job is replayed from now on.
  void disable();

private:
  std::unordered_map<LinkId, std::vector<Job*>> users_;
  std::vector<Job*> jobs_;  // in registration order
  bool enabled_ = true;
};

}  // namespace commbound::network::internal
