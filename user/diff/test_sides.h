// Test fixture: a diff side built from synthetic requests of Magpie's
// Table 1 types (request/synthetic.h) by the real model, with each
// cluster's majority type for checks.
#pragma once

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "diff/diff_side.h"
#include "model/workload_model.h"
#include "request/synthetic.h"

namespace jackdaw::diff::testing {

struct TypedSide {
  Side side;
  std::vector<char> kind_type;  // per kind: the type most of its members are
};

// counts: {type, requests}; requests start 2 ms apart in a shuffled order
// fixed by the seed, on a pool of 4 workers (so the rates are comparable
// between sides built with the same spacing).
inline TypedSide MakeSide(uint64_t seed, const std::vector<std::pair<char, int>>& counts) {
  model::synthetic::RequestFactory factory(seed);
  std::string order;
  for (const auto& [type, n] : counts) order += std::string(n, type);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<model::Request> requests;
  for (size_t i = 0; i < order.size(); ++i)
    requests.push_back(factory.Make(order[i], i + 1, 1'000'000'000ull + i * 2'000'000ull, 100 + i % 4, 200 + i % 4));
  auto model = model::BuildModel(requests);
  EXPECT_TRUE(model.ok()) << model.status().message();
  TypedSide out;
  if (!model.ok()) return out;
  out.side = SideFromModel(*model);
  for (const model::ClusterSummary& c : model->clusters) {
    std::map<char, int> votes;
    for (uint32_t m : c.members) votes[order[m]]++;
    char best = '?';
    for (const auto& [type, n] : votes)
      if (best == '?' || n > votes[best]) best = type;
    out.kind_type.push_back(best);
  }
  return out;
}

}  // namespace jackdaw::diff::testing
