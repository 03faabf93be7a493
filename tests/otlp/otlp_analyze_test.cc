// `jackdaw analyze` exporting the golden trace's requests as OpenTelemetry
// traces, to a file (--otlp-json) and to an OTLP/HTTP receiver (--otlp)
// that answers its first POST 503: every request is one trace, every span's
// parent is in its trace, and the file and the receiver got the same
// batches.
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "export/http/test_receiver.h"
#include "otlp_decode.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

using nlohmann::json;
using otlp_testing::Exported;
using otlp_testing::Read;

const std::string kTrace = std::string(JDW_GOLDEN_DIR) + "/testserver-mix.jdw";

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}


TEST(OtlpAnalyze, EveryRequestIsATraceWithItsParentsPresent) {
  http::TestReceiver rx({503});
  const std::string otlp_file = testing::TempPath("otlp-json");
  const std::string requests_file = testing::TempPath("otlp-requests");
  const testing::CommandResult r =
      testing::RunCommand({testing::BinDir() + "/jackdaw", "analyze", kTrace, "--schema", "testserver", "-q",
                           "--requests", requests_file, "--otlp-json", otlp_file, "--otlp", rx.url()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The requests analyze found: the --requests lines that are not a
  // connection's.
  std::set<std::string> request_ids;
  for (const std::string& line : Lines(requests_file)) {
    const json j = json::parse(line);
    if (j.value("type", "") == "connection") continue;
    request_ids.insert(std::to_string(j.at("id").get<uint64_t>()));
  }
  const std::vector<std::string> batches = Lines(otlp_file);
  unlink(otlp_file.c_str());
  unlink(requests_file.c_str());
  ASSERT_GT(request_ids.size(), 50u);  // the golden trace holds 85
  const Exported file = Read(batches);
  EXPECT_EQ(file.traces.size(), request_ids.size());
  EXPECT_EQ(file.request_ids, request_ids);
  EXPECT_EQ(file.orphans, 0u);
  // The receiver: the same batches, the first after a retry.
  EXPECT_EQ(rx.accepted(), batches);
  EXPECT_EQ(rx.posts(), static_cast<int>(batches.size()) + 1);
  const std::string sent = std::to_string(request_ids.size()) + " requests (" + std::to_string(file.spans) +
                           " spans) sent in " + std::to_string(batches.size()) + " batches; 0 requests (0 spans) "
                           "dropped; 0 requests (0 spans) failed; 1 retries";
  EXPECT_NE(r.err.find(sent), std::string::npos) << r.err;
}

TEST(OtlpAnalyze, ADownReceiverIsCountedNotWaitedFor) {
  const std::string dead = "http://127.0.0.1:1/v1/traces";  // nothing listens on port 1
  const testing::CommandResult r = testing::RunCommand(
      {testing::BinDir() + "/jackdaw", "analyze", kTrace, "--schema", "testserver", "-q", "--otlp", dead});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("OTLP/HTTP " + dead + ": 0 requests (0 spans) sent"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("last error: connection refused"), std::string::npos) << r.err;
}

TEST(OtlpAnalyze, HttpsIsRefusedBeforeTheWork) {
  const testing::CommandResult r = testing::RunCommand({testing::BinDir() + "/jackdaw", "analyze", kTrace, "--schema",
                                                        "testserver", "-q", "--otlp", "https://x:4318/v1/traces"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("jackdaw: --otlp https://x:4318/v1/traces: https is not supported"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");  // no analysis ran
}

}  // namespace
}  // namespace jackdaw
