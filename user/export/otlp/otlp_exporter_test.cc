#include "export/otlp/otlp_exporter.h"

#include <unistd.h>

#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "export/http/test_receiver.h"

namespace jackdaw::otlp {
namespace {

using nlohmann::json;

model::Request Req(uint64_t id) {
  model::Request r;
  r.id = id;
  r.tgid = 10;
  r.start_ns = 100 * id;
  r.end_ns = r.start_ns + 50;
  r.start_wall_ns = 1700000000000000000ull + r.start_ns;
  model::ProcessSegment p;
  p.tgid = 10;
  p.comm = "srv";
  p.first_ns = r.start_ns;
  p.last_ns = r.end_ns;
  r.processes = {p};
  return r;  // 2 spans
}

std::string TempFile() {
  char path[] = "/tmp/otlp-exporter-test-XXXXXX";
  const int fd = mkstemp(path);
  close(fd);
  return path;
}

TEST(OtlpExporter, FileAndUrlGetTheSameBatchesOfWholeRequests) {
  http::TestReceiver rx({503});
  const std::string path = TempFile();
  ExporterOptions o;
  o.json_path = path;
  o.url = rx.url();
  o.batch_spans = 9;  // requests of 2 spans: a batch closes at 10
  o.context = {1, "h"};
  o.sender.initial_backoff_ms = 10;
  auto e = OtlpExporter::Create(o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  for (uint64_t id = 1; id <= 23; ++id) (*e)->Add(Req(id));
  ASSERT_TRUE((*e)->Finish().ok());
  EXPECT_EQ((*e)->requests(), 23u);
  EXPECT_EQ((*e)->spans(), 46u);
  EXPECT_EQ((*e)->sender_stats().requests_sent, 23u);
  EXPECT_EQ((*e)->sender_stats().retries, 1u);
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> lines;
  std::set<std::string> traces;
  while (std::getline(in, line)) {
    lines.push_back(line);
    const json doc = json::parse(line);  // named: a temporary would die before the loop runs
    for (const json& rs : doc["resourceSpans"])
      for (const json& s : rs["scopeSpans"][0]["spans"]) traces.insert(s["traceId"].get<std::string>());
  }
  unlink(path.c_str());
  EXPECT_EQ(lines.size(), 5u);  // 10 spans a batch (whole requests past 9), the last 6
  EXPECT_EQ(traces.size(), 23u);
  EXPECT_EQ(rx.accepted(), lines);
  const std::string summary = (*e)->Summary();
  EXPECT_NE(summary.find("23 requests (46 spans) sent in 5 batches; 0 requests (0 spans) dropped"), std::string::npos)
      << summary;
}

TEST(OtlpExporter, BadUrlFailsAtCreate) {
  ExporterOptions o;
  o.url = "https://x/v1/traces";
  auto e = OtlpExporter::Create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("https"), std::string::npos);
}

}  // namespace
}  // namespace jackdaw::otlp
