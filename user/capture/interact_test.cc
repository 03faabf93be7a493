#include "capture/interact.h"

#include <gtest/gtest.h>

namespace jackdaw::capture {
namespace {

TEST(ParseInteractGranularity, ModesAndClassKey) {
  auto g = ParseInteractGranularity("interaction");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->records);
  EXPECT_FALSE(g->classes);

  g = ParseInteractGranularity("class,prefix4=24,no-pid");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_FALSE(g->records);
  EXPECT_TRUE(g->classes);
  EXPECT_EQ(g->prefix4, 24);
  EXPECT_EQ(g->prefix6, 128);
  EXPECT_TRUE(g->by_port);
  EXPECT_FALSE(g->by_pid);

  g = ParseInteractGranularity("both,no-port,prefix6=48");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->records && g->classes);
  EXPECT_FALSE(g->by_port);
  EXPECT_EQ(g->prefix6, 48);
}

TEST(ParseInteractGranularity, KeepsWhatTheSpecDoesNotSay) {
  InteractGranularity base;
  base.prefix4 = 16;
  base.by_pid = false;
  base.cgroup_id = 42;
  auto g = ParseInteractGranularity("class", base);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->prefix4, 16);
  EXPECT_FALSE(g->by_pid);
  EXPECT_EQ(g->cgroup_id, 42u);
}

TEST(ParseInteractGranularity, RejectsWithOneLineNamingTheFix) {
  for (const char* bad : {"", "classes", "class,prefix4=33", "class,prefix4=", "class,prefix6=x", "class,bogus",
                          "interaction,"}) {
    auto g = ParseInteractGranularity(bad);
    EXPECT_FALSE(g.ok()) << bad;
    if (!g.ok()) {
      EXPECT_EQ(g.status().message().find('\n'), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace jackdaw::capture
