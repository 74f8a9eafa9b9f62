// LinkSpread: how unequal a real fabric's nodes are on the network, and each node's rate drawn
// from it.
//
// What it is made from: the time of one transfer between every pair of a cluster's nodes, one GPU
// and NIC each (a pairwise nccl-tests sweep, calibration/fabric/spread/<name>.txt), as rate factors
// median time / time. A pair runs at its slower node, so a pair's factor is the smaller of two node
// factors: with node factors drawn independently from F, a pair's are drawn from G = 1 - (1 - F)^2,
// and F = 1 - sqrt(1 - G) recovers the nodes' distribution from the pairs'. (A sweep's slow pairs
// share a few slow nodes, which is what a per-node draw reproduces; whether a node's eight NICs are
// slow together or one by one, a one-GPU sweep cannot say: here they share the node's draw.) A ring
// crosses every node of its collective and moves at its slowest, so the more nodes, the slower the
// expected one: E[min of M node factors] = sum_j g_j ((1 - j/n)^(M/2) - (1 - (j+1)/n)^(M/2)) over
// the n sorted pair factors g_j (expected_min_factor). Each node's draw is fixed by the seed and
// its index: the same scenario, the same fabric.
#pragma once

#include <string>
#include <vector>

namespace commbound::network {

struct LinkSpread {
  std::string name;                  // the calibration/fabric/spread/<name>.txt it came from
  std::vector<double> pair_factors;  // sorted ascending; the median is 1

  // Node `index`'s rate factor (its NICs' rate x this): the pairs' quantile at 1 - (1 - u)^2, u
  // uniform in [0, 1) from `seed` and the index.
  double nic_factor(long index, unsigned seed) const;
  // The expected factor of the slowest of `nodes` nodes drawn so (the closed form above).
  double expected_min_factor(long nodes) const;
};

// The pair factors of a pairwise sweep's times (seconds, any order): median / each, sorted.
std::vector<double> pair_factors_from_times(std::vector<double> times_s);

}  // namespace commbound::network
