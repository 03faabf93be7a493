// Workload selection for `jackdaw reproduce --only`, and reading ground truth.
#include "validate/experiment.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace jackdaw::validate {
namespace {

std::vector<std::string> Names(const std::vector<Workload>& ws) {
  std::vector<std::string> out;
  for (const Workload& w : ws) out.push_back(w.name + ":" + std::to_string(w.clients));
  return out;
}

TEST(SelectWorkloads, NameSelectsBothClientCountsInTableOrder) {
  auto all = PaperWorkloads(false, 100);
  auto sel = SelectWorkloads(all, {"A/E/F", "E"});
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_EQ(Names(*sel), (std::vector<std::string>{"E:1", "E:5", "A/E/F:1", "A/E/F:5"}));
  EXPECT_EQ((*sel)[0].requests, 100);
  EXPECT_EQ((*sel)[2].mix, "A:1,E:1,F:1");
}

TEST(SelectWorkloads, ClientCountSelectsOneRun) {
  auto all = PaperWorkloads(false, 500);
  auto sel = SelectWorkloads(all, {"A/B/E/F:5", "C/D:1", "C/D:1"});
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_EQ(Names(*sel), (std::vector<std::string>{"C/D:1", "A/B/E/F:5"}));
}

TEST(SelectWorkloads, UnknownNameOrClientCountIsAnError) {
  auto all = PaperWorkloads(false, 500);
  auto bad = SelectWorkloads(all, {"E", "G"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("G"), std::string::npos);
  EXPECT_NE(bad.status().message().find("A/B/E/F"), std::string::npos);  // lists the known names
  EXPECT_FALSE(SelectWorkloads(all, {"E:3"}).ok());
  EXPECT_FALSE(SelectWorkloads(all, {"E:x"}).ok());
  EXPECT_FALSE(SelectWorkloads(all, {"e"}).ok());
}

TEST(ReadGroundTruth, SetUpExchangesAreReadApartFromRequests) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("jdw_truth_setup" + std::to_string(getpid()))).string();
  {
    std::ofstream f(path);
    f << R"({"type":"pg-startup","local_port":5000,"send_mono_ns":1,"recv_mono_ns":2,"req_id":0,"setup":true})"
      << "\n"
      << R"({"type":"point","local_port":5000,"send_mono_ns":3,"recv_mono_ns":4,"req_id":7})" << "\n";
  }
  auto requests = ReadGroundTruth(path);
  auto setups = ReadSetupExchanges(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(requests.ok() && setups.ok());
  ASSERT_EQ(requests->size(), 1u);
  EXPECT_EQ((*requests)[0].type, "point");
  EXPECT_EQ((*requests)[0].req_id, 7u);
  ASSERT_EQ(setups->size(), 1u);
  EXPECT_EQ((*setups)[0].type, "pg-startup");
  EXPECT_EQ((*setups)[0].send_mono_ns, 1u);
}


model::Request Exchange(uint64_t conn, uint32_t exchange, uint64_t start_us, uint64_t end_us) {
  model::Request r;
  r.has_message = true;
  r.connection_id = conn;
  r.exchange = exchange;
  r.start_ns = start_us * 1000;
  r.end_ns = end_us * 1000;
  return r;
}

// The apache2 keep-alive case read from a kept trace: exchange 46's worker
// wrote its response by 179 us, was preempted, ran 50 us of its own work
// (logging) and was preempted again at 3254 us; the client's next request
// began exchange 47 at 737 us.
TEST(MatchSpans, ARequestsTailPastTheNextExchangeIsCutThereForMatching) {
  std::vector<model::Request> reqs = {Exchange(2, 46, 0, 3254), Exchange(2, 47, 737, 3490),
                                      Exchange(3, 46, 100, 900)};
  uint64_t overhang = 0;
  auto spans = MatchSpans(reqs, true, &overhang);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].start_ns, 0u);
  EXPECT_EQ(spans[0].end_ns, 737'000u);  // the next exchange on its connection
  EXPECT_EQ(spans[1].end_ns, 3'490'000u);  // the last one: its own end
  EXPECT_EQ(spans[2].end_ns, 900'000u);  // another connection's exchange 47 does not count
  EXPECT_EQ(overhang, 1u);
}

TEST(MatchSpans, MergedExchangesAndConnectionPerRequestRunsKeepTheirExtent) {
  // A join that merged exchanges 5 and 6 emits one request; nothing clips it.
  std::vector<model::Request> merged = {Exchange(1, 5, 0, 2000), Exchange(1, 7, 2500, 3000)};
  uint64_t overhang = 0;
  auto spans = MatchSpans(merged, true, &overhang);
  EXPECT_EQ(spans[0].end_ns, 2'000'000u);
  EXPECT_EQ(overhang, 0u);
  // Connection per request (or no messages): the request's own extent.
  std::vector<model::Request> close = {Exchange(1, 0, 0, 3254), Exchange(1, 1, 737, 3490)};
  spans = MatchSpans(close, false, &overhang);
  EXPECT_EQ(spans[0].end_ns, 3'254'000u);
  model::Request plain = Exchange(1, 0, 0, 3254);
  plain.has_message = false;
  spans = MatchSpans({plain, Exchange(1, 1, 737, 3490)}, true, &overhang);
  EXPECT_EQ(spans[0].end_ns, 3'254'000u);
  EXPECT_EQ(overhang, 0u);
}


TEST(InnermostTierCpuNs, ABackendsCpuIsTheDeepestTiersAndALoneServerIsAllOfIt) {
  model::Request alone;
  alone.totals.cpu_ns = 700;
  EXPECT_EQ(InnermostTierCpuNs(alone), 700u);

  model::Request proxied;
  proxied.totals.cpu_ns = 1000;
  model::ProcessSegment front, app, db;
  front.tier = 0, front.cpu_ns = 100;
  app.tier = 1, app.cpu_ns = 600;
  db.tier = 2, db.cpu_ns = 300;
  proxied.processes = {front, app, db};
  EXPECT_EQ(InnermostTierCpuNs(proxied), 300u);
  proxied.processes.pop_back();
  EXPECT_EQ(InnermostTierCpuNs(proxied), 600u);
}
}  // namespace
}  // namespace jackdaw::validate
