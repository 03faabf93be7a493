// Workload selection for `jackdaw reproduce --only`.
#include "validate/experiment.h"

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

}  // namespace
}  // namespace jackdaw::validate
