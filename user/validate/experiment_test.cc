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

}  // namespace
}  // namespace jackdaw::validate
