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

// Who meets whom, on which links: a job on a and b, another on c; a third on b and c meets the
// first on its link 1 (b) and the second on its link 0 (c), and shares both of its own links.
TEST(LinkOccupancy, JobsMeetOnASharedLinkOnly) {
  LinkOccupancy occupancy;
  std::vector<int> shared;
  LinkOccupancy::Job first = job_on(kAB);
  LinkOccupancy::Job other = job_on(kC);
  EXPECT_TRUE(occupancy.add(first, shared).empty());
  EXPECT_TRUE(shared.empty());
  EXPECT_TRUE(occupancy.add(other, shared).empty());
  LinkOccupancy::Job second = job_on(kBC);
  const std::vector<LinkOccupancy::Meeting> met = occupancy.add(second, shared);
  ASSERT_EQ(met.size(), 2u);
  EXPECT_EQ(met[0].job, &first);
  EXPECT_EQ(met[0].links, std::vector<int>{1});
  EXPECT_EQ(met[1].job, &other);
  EXPECT_EQ(met[1].links, std::vector<int>{0});
  EXPECT_EQ(shared, (std::vector<int>{0, 1}));
  occupancy.remove(first);
  occupancy.remove(other);
  occupancy.remove(second);
  LinkOccupancy::Job later = job_on(kAB);  // the links are free again
  EXPECT_TRUE(occupancy.add(later, shared).empty());
  EXPECT_TRUE(shared.empty());
}

// A shared link is contended only when its jobs' loads exceed its capacity, or one is uncapped.
// Link b carries 10: jobs putting 4 and 6 on it fit (no meeting); a third putting 1 more exceeds
// it and meets both there; once it leaves, a fourth putting 0 fits again. On c (capacity 10),
// an uncapped job meets a capped one whatever their loads.
TEST(LinkOccupancy, ASharedLinkIsContendedOnlyWhenItsJobsLoadsExceedIt) {
  LinkOccupancy occupancy;
  std::vector<int> shared;
  const std::vector<double> capacities = {10, 10};
  const std::vector<double> four = {0, 4}, six = {0, 6}, one = {0, 1}, none = {0, 0}, on_c = {1, 1};
  auto capped = [&capacities](const std::vector<LinkOccupancy::LinkId>& links, const std::vector<double>& loads) {
    LinkOccupancy::Job job = job_on(links);
    job.capacities_bytes_per_s = &capacities;
    job.loads_bytes_per_s = &loads;
    return job;
  };
  LinkOccupancy::Job first = capped(kAB, four), second = capped(kAB, six), third = capped(kAB, one);
  EXPECT_TRUE(occupancy.add(first, shared).empty());
  EXPECT_TRUE(occupancy.add(second, shared).empty());
  EXPECT_TRUE(shared.empty());
  const std::vector<LinkOccupancy::Meeting> met = occupancy.add(third, shared);
  ASSERT_EQ(met.size(), 2u);
  EXPECT_EQ(met[0].job, &first);
  EXPECT_EQ(met[0].links, std::vector<int>{1});
  EXPECT_EQ(met[1].job, &second);
  EXPECT_EQ(shared, std::vector<int>{1});
  occupancy.remove(third);
  LinkOccupancy::Job fourth = capped(kAB, none);
  EXPECT_TRUE(occupancy.add(fourth, shared).empty());
  LinkOccupancy::Job on_link_c = capped(kBC, on_c);  // b then c: 1 more on b (4 + 6 + 1 > 10)
  EXPECT_EQ(occupancy.add(on_link_c, shared).size(), 3u);
  EXPECT_EQ(shared, std::vector<int>{0});
  LinkOccupancy::Job uncapped = job_on(kC);
  const std::vector<LinkOccupancy::Meeting> on_c_met = occupancy.add(uncapped, shared);
  ASSERT_EQ(on_c_met.size(), 1u);
  EXPECT_EQ(on_c_met[0].job, &on_link_c);
  EXPECT_EQ(on_c_met[0].links, std::vector<int>{1});
}

// disable() marks every link of every job with unsimulated segments, then starts what each marked.
TEST(LinkOccupancy, DisableMarksEveryLinkOfEveryJob) {
  LinkOccupancy occupancy;
  std::vector<int> shared;
  std::vector<int> marked_links;
  int started = 0;
  LinkOccupancy::Job unsimulated = job_on(kAB);
  unsimulated.mark = [&marked_links](const std::vector<int>& links) {
    marked_links = links;
    return true;
  };
  unsimulated.start_marked = [&started] { ++started; };
  LinkOccupancy::Job simulated = job_on(kC);  // no mark: every segment of it is a flow already
  occupancy.add(unsimulated, shared);
  occupancy.add(simulated, shared);
  EXPECT_TRUE(occupancy.enabled());
  occupancy.disable();
  EXPECT_FALSE(occupancy.enabled());
  EXPECT_EQ(marked_links, (std::vector<int>{0, 1}));
  EXPECT_EQ(started, 1);
  occupancy.disable();  // once only
  EXPECT_EQ(started, 1);
}

}  // namespace
}  // namespace commbound::network::internal
