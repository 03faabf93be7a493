#include "export/otlp/span_ids.h"

#include <set>

#include <gtest/gtest.h>

namespace jackdaw::otlp {
namespace {

bool IsLowerHex(const std::string& s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

TEST(SpanIds, HexOfTheLengthOtlpJsonWants) {
  const std::string t = TraceIdHex(7, 42), s = SpanIdHex(7, 42, "request");
  EXPECT_EQ(t.size(), 32u);
  EXPECT_EQ(s.size(), 16u);
  EXPECT_TRUE(IsLowerHex(t)) << t;
  EXPECT_TRUE(IsLowerHex(s)) << s;
}

TEST(SpanIds, StableAcrossCalls) {
  EXPECT_EQ(TraceIdHex(7, 42), TraceIdHex(7, 42));
  EXPECT_EQ(SpanIdHex(7, 42, "call:1"), SpanIdHex(7, 42, "call:1"));
  // Pinned: a change here changes every exported id, so a re-export would
  // no longer deduplicate against what a backend already holds.
  EXPECT_EQ(TraceIdHex(7, 42), "16062d6c1339e5008bda51f356719c4e");
  EXPECT_EQ(SpanIdHex(7, 42, "request"), "8df0a9e9597851e8");
}

TEST(SpanIds, DistinctPerRequestTraceAndRole) {
  std::set<std::string> traces, spans;
  for (uint64_t id = 0; id < 1000; ++id) {
    traces.insert(TraceIdHex(7, id));
    traces.insert(TraceIdHex(8, id));
    spans.insert(SpanIdHex(7, id, "request"));
    spans.insert(SpanIdHex(7, id, "call:0"));
  }
  EXPECT_EQ(traces.size(), 2000u);
  EXPECT_EQ(spans.size(), 2000u);
}

}  // namespace
}  // namespace jackdaw::otlp
