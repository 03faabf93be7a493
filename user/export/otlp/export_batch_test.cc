#include "export/otlp/export_batch.h"

#include <gtest/gtest.h>

namespace jackdaw::otlp {
namespace {

using nlohmann::json;

std::vector<ServiceSpan> Spans(const std::string& a, const std::string& b) {
  return {{a, json{{"spanId", "1"}}}, {b, json{{"spanId", "2"}}}};
}

TEST(ExportBatch, OneResourceSpansPerServiceWithHostAndScope) {
  ExportBatch batch("web1", "0.9.0");
  batch.AddRequest(Spans("nginx", "php-fpm"));
  batch.AddRequest(Spans("nginx", "nginx"));
  EXPECT_EQ(batch.requests(), 2u);
  EXPECT_EQ(batch.spans(), 4u);
  const json doc = json::parse(batch.TakeJson());
  EXPECT_TRUE(batch.empty());
  ASSERT_EQ(doc["resourceSpans"].size(), 2u);
  const json& first = doc["resourceSpans"][0];
  EXPECT_EQ(first["resource"]["attributes"][0]["key"], "service.name");
  EXPECT_EQ(first["resource"]["attributes"][0]["value"]["stringValue"], "nginx");
  EXPECT_EQ(first["resource"]["attributes"][1]["key"], "host.name");
  EXPECT_EQ(first["resource"]["attributes"][1]["value"]["stringValue"], "web1");
  EXPECT_EQ(first["scopeSpans"][0]["scope"]["name"], "jackdaw");
  EXPECT_EQ(first["scopeSpans"][0]["spans"].size(), 3u);
  EXPECT_EQ(doc["resourceSpans"][1]["scopeSpans"][0]["spans"].size(), 1u);
}

TEST(ExportBatch, OneLineOfJson) {
  ExportBatch batch("h", "v");
  batch.AddRequest(Spans("a", "b"));
  EXPECT_EQ(batch.TakeJson().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace jackdaw::otlp
