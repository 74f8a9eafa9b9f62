// LinkOccupancy's bookkeeping: who meets whom on which links (no SimGrid: links are plain ids).
#include "network/internal/link_occupancy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace commbound::network::internal {
namespace {

int a, b, c;  // three links, by address
const std::vector<LinkOccupancy::LinkId> kAB = {&a, &b};
const std::vector<LinkOccupancy::LinkId> kBC = {&b, &c};
const std::vector<LinkOccupancy::LinkId> kC = {&c};

LinkOccupancy::Job job_on(const std::vector<LinkOccupancy::LinkId>& links) {
  LinkOccupancy::Job job;
  job.links = &links;
  return job;
}

TEST(LinkOccupancy, JobsMeetOnASharedLinkOnly) {
  LinkOccupancy occupancy;
  LinkOccupancy::Job first = job_on(kAB);
  LinkOccupancy::Job other = job_on(kC);
  EXPECT_TRUE(occupancy.add(first).empty());
  EXPECT_TRUE(occupancy.add(other).empty());
  EXPECT_FALSE(first.shared);
  LinkOccupancy::Job second = job_on(kBC);  // meets first on b and other on c, each once
  EXPECT_EQ(occupancy.add(second), (std::vector<LinkOccupancy::Job*>{&first, &other}));
  EXPECT_TRUE(first.shared);
  EXPECT_TRUE(second.shared);
  occupancy.remove(first);
  occupancy.remove(other);
  occupancy.remove(second);
  LinkOccupancy::Job later = job_on(kAB);  // the links are free again
  EXPECT_TRUE(occupancy.add(later).empty());
  EXPECT_FALSE(later.shared);
}

TEST(LinkOccupancy, DisableMaterializesEveryReplayOnce) {
  LinkOccupancy occupancy;
  int materialized = 0;
  LinkOccupancy::Job replayed = job_on(kAB);
  replayed.materialize = [&materialized] { ++materialized; };
  occupancy.add(replayed);
  EXPECT_TRUE(occupancy.enabled());
  occupancy.disable();
  EXPECT_FALSE(occupancy.enabled());
  EXPECT_EQ(materialized, 1);
  EXPECT_FALSE(LinkOccupancy::take_materialize(replayed));  // taken: it cannot run twice
  occupancy.disable();
  EXPECT_EQ(materialized, 1);
}

}  // namespace
}  // namespace commbound::network::internal
