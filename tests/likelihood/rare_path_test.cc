// The likelihood model (docs/likelihood.md) end to end on a real recording:
// the test server under jackdaw-load with mix A:99,E:1, about 1,000
// requests from two clients. A (/longspin) is one worker spinning 30 ms; E
// (/parspin) spins 15 ms on the worker and 15 ms on a helper it hands work
// to and waits for: the same CPU in all, and a rare path with an extra
// hand-off and wait. `jackdaw analyze` must rank the E requests least
// likely (precision >= 0.9 at k = their number), from the log_likelihood
// of every --requests line, and list them first in --json "unlikely". The
// distance-based anomalies of the same run are measured beside it and
// printed, not required.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "validate/experiment.h"

namespace jackdaw {
namespace {

struct ScoredRequest {
  uint64_t id = 0;
  double log_likelihood = 0;
  std::string type;  // from the ground truth; empty if unmatched
};

uint16_t RemotePort(const nlohmann::json& line) {
  if (!line.contains("connections") || line["connections"].empty()) return 0;
  const std::string remote = line["connections"][0].value("remote", std::string());
  const size_t colon = remote.rfind(':');
  return colon == std::string::npos ? 0 : static_cast<uint16_t>(std::stoi(remote.substr(colon + 1)));
}

// The ground-truth type of a request: the client request on its remote port
// that its interval overlaps most (ports are reused over a run).
std::string TypeOf(const nlohmann::json& line, const std::multimap<uint16_t, validate::TruthEntry>& by_port) {
  const uint64_t start = line["start_ns"], end = line["end_ns"];
  int64_t best = INT64_MIN;
  std::string type;
  auto [lo, hi] = by_port.equal_range(RemotePort(line));
  for (auto it = lo; it != hi; ++it) {
    const int64_t overlap = int64_t(std::min(it->second.recv_mono_ns, end)) -
                            int64_t(std::max(it->second.send_mono_ns, start));
    if (overlap > best && overlap > 0) best = overlap, type = it->second.type;
  }
  return type;
}

TEST(LikelihoodRecording, RareParspinRanksLeastLikely) {
  JDW_REQUIRE_ROOT();
  validate::RunOptions opts;
  opts.bin_dir = testing::BinDir();
  opts.work_dir = testing::TempPath("likelihood-rare");
  std::filesystem::create_directories(opts.work_dir);
  auto run = validate::RecordWorkload(opts, validate::Workload{"x", "rare", "A:99,E:1", 2, 1000});
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto truth = validate::ReadGroundTruth(run->truth);
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  std::multimap<uint16_t, validate::TruthEntry> by_port;
  size_t sent_e = 0;
  for (const validate::TruthEntry& t : *truth) {
    by_port.emplace(t.client_port, t);
    sent_e += t.type == "E";
  }
  ASSERT_GE(sent_e, 5u) << "the load drew too few E requests to rank";

  const std::string requests = opts.work_dir + "/requests.jsonl", model = opts.work_dir + "/model.json";
  const testing::CommandResult r =
      testing::RunCommand({testing::BinDir() + "/jackdaw", "analyze", run->trace, "--schema", "testserver", "-q",
                           "--requests", requests, "--json", model, "--unlikely", std::to_string(sent_e)});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::vector<ScoredRequest> scored;
  std::ifstream in(requests);
  std::string text;
  while (std::getline(in, text)) {
    const nlohmann::json line = nlohmann::json::parse(text);
    if (line.contains("type")) continue;  // a connection's line
    if (!line.contains("log_likelihood")) {
      EXPECT_TRUE(line.value("incomplete", false)) << "a complete request without log_likelihood";
      continue;
    }
    scored.push_back({line["id"], line["log_likelihood"], TypeOf(line, by_port)});
  }
  const size_t k = static_cast<size_t>(std::count_if(scored.begin(), scored.end(),
                                                     [](const ScoredRequest& s) { return s.type == "E"; }));
  ASSERT_GE(k, 5u) << "E requests extracted and matched: " << k << " of " << sent_e << " sent";
  std::stable_sort(scored.begin(), scored.end(),
                   [](const ScoredRequest& a, const ScoredRequest& b) { return a.log_likelihood < b.log_likelihood; });
  size_t hits = 0;
  for (size_t i = 0; i < k; ++i) hits += scored[i].type == "E";
  const double precision = double(hits) / double(k);

  std::ifstream min(model);
  const nlohmann::json m = nlohmann::json::parse(min);
  ASSERT_TRUE(m.contains("unlikely"));
  ASSERT_TRUE(m.contains("likelihood"));
  // The JSON list is the same ranking as the --requests scores.
  ASSERT_EQ(m["unlikely"].size(), sent_e);
  for (size_t i = 0; i < m["unlikely"].size(); ++i) {
    EXPECT_NEAR(m["unlikely"][i]["log_likelihood"].get<double>(), scored[i].log_likelihood, 1e-12);
    EXPECT_FALSE(m["unlikely"][i]["steps"].empty()) << "an unlikely request with no unlikely step";
  }
  // The distance-based ranking of the same run: anomalies by decreasing
  // distance, the first k of them.
  std::map<uint64_t, std::string> type_of;
  for (const ScoredRequest& s : scored) type_of[s.id] = s.type;
  size_t distance_hits = 0;
  const nlohmann::json& anomalies = m["anomalies"];
  for (size_t i = 0; i < std::min(k, anomalies.size()); ++i)
    distance_hits += type_of[anomalies[i]["request"].get<uint64_t>()] == "E";
  printf("likelihood: %zu requests scored, %zu E (%zu sent); precision at k=%zu: %.2f (top score %.3f, "
         "k-th %.3f, first A %.3f); automaton %s states from %s tree states\n",
         scored.size(), k, sent_e, k, precision, scored[0].log_likelihood, scored[k - 1].log_likelihood,
         std::find_if(scored.begin(), scored.end(), [](const ScoredRequest& s) { return s.type != "E"; })
             ->log_likelihood,
         m["likelihood"]["states"].dump().c_str(), m["likelihood"]["prefix_tree_states"].dump().c_str());
  printf("distance: %zu anomalies; precision at k=%zu: %.2f\n", anomalies.size(), k,
         double(distance_hits) / double(k));
  EXPECT_GE(precision, 0.9);
  if (getenv("JDW_KEEP_TRACES")) fprintf(stderr, "traces kept in %s\n", opts.work_dir.c_str());
  else std::filesystem::remove_all(opts.work_dir);
}

}  // namespace
}  // namespace jackdaw
