#include "diff/diff_output.h"

#include <sstream>

#include <gtest/gtest.h>

namespace jackdaw::diff {
namespace {

DiffResult TwoChanges() {
  DiffResult r;
  r.matched.push_back(KindSummary{"c0", {"c0"}, {"c1"}, 40, 40, 0.2, "", ""});
  r.new_kinds.push_back(KindSummary{"new:c2", {}, {"c2"}, 0, 10, 3.5, "c0", "sys_enter:read{cpu=1.000ms}"});
  Change a;
  a.kind = "c0", a.metric = Metric::kCpu, a.before = 10, a.after = 13, a.effect = 0.3, a.p_value = 1e-6;
  a.significant = true, a.share = 0.7;
  Change b;
  b.kind = "new:c2", b.metric = Metric::kStructure, b.after = 0.2, b.effect = 1, b.p_value = 0.2, b.share = 0.3;
  r.changes = {a, b};
  return r;
}

TEST(DiffOutput, JsonHoldsTheRankedChangesAndKinds) {
  const nlohmann::ordered_json j = DiffToJson(TwoChanges(), DiffOptions{});
  ASSERT_EQ(j["changes"].size(), 2u);
  EXPECT_EQ(j["changes"][0]["kind"], "c0");
  EXPECT_EQ(j["changes"][0]["metric"], "cpu");
  EXPECT_EQ(j["changes"][0]["significant"], true);
  EXPECT_DOUBLE_EQ(j["changes"][0]["share"].get<double>(), 0.7);
  EXPECT_EQ(j["changes"][1]["metric"], "structure");
  for (const char* key : {"kind", "metric", "before", "after", "effect", "p_value", "significant", "share"})
    EXPECT_TRUE(j["changes"][1].contains(key)) << key;
  EXPECT_EQ(j["matched"][0]["after_clusters"][0], "c1");
  EXPECT_EQ(j["new_kinds"][0]["nearest_before"], "c0");
  EXPECT_TRUE(j["gone_kinds"].empty());
  EXPECT_DOUBLE_EQ(j["settings"]["min_effect"].get<double>(), 0.10);
}

TEST(DiffOutput, TextTableListsTheFirstChangeFirst) {
  std::ostringstream out;
  WriteTextTable(TwoChanges(), out);
  const std::string text = out.str();
  const size_t header = text.find("KIND");
  const size_t cpu = text.find("c0           cpu");
  const size_t structure = text.find("new:c2");
  ASSERT_NE(header, std::string::npos);
  ASSERT_NE(cpu, std::string::npos) << text;
  EXPECT_LT(header, cpu);
  EXPECT_NE(text.find("10.000 ms -> 13.000 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("1 significant of 2"), std::string::npos) << text;
  // new:c2 is named in the kind list above the table and in its second row.
  EXPECT_LT(structure, header);
  EXPECT_LT(cpu, text.rfind("new:c2"));
}

}  // namespace
}  // namespace jackdaw::diff
