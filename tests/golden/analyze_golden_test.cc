// `jackdaw analyze` on a fixed trace, byte for byte: the cluster table on
// stdout, --requests and --json, with both shipped schemas, in batch mode
// and streaming (a warm-up shorter than the trace). The trace is the test
// server under all six request types of Magpie's Table 1 (jackdaw record
// --pid SERVER --usdt jackdaw-testserver; jackdaw-load --mix
// A:1,B:1,C:1,D:1,E:1,F:1 -c 4 --rate 150).
//
// The pins are FNV-1a hashes in expected.txt. A change that is meant to
// change the output (the join's or the model's semantics) updates them:
//   JDW_UPDATE_GOLDEN=1 build/user/bin/analyze_golden_test
// and says so in its commit; a speed or memory change must leave them be.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace jackdaw {
namespace {

const std::string kDir = JDW_GOLDEN_DIR;
const std::string kTrace = kDir + "/testserver-mix.jdw";
const std::string kExpected = kDir + "/expected.txt";

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::map<std::string, std::string> ReadExpected() {
  std::map<std::string, std::string> out;
  std::ifstream in(kExpected);
  std::string name, hash;
  while (in >> name >> hash) out[name] = hash;
  return out;
}

struct Case {
  std::string name;
  std::string schema;
  std::vector<std::string> extra;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class AnalyzeGolden : public ::testing::TestWithParam<Case> {};

TEST_P(AnalyzeGolden, OutputIsPinned) {
  const Case& c = GetParam();
  const std::string req = testing::TempPath("golden-requests");
  const std::string model = testing::TempPath("golden-model");
  std::vector<std::string> argv = {testing::BinDir() + "/jackdaw", "analyze", kTrace, "--schema", c.schema,
                                   "--requests", req, "--json", model, "-q"};
  argv.insert(argv.end(), c.extra.begin(), c.extra.end());
  const testing::CommandResult r = testing::RunCommand(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string requests = ReadAll(req), json = ReadAll(model);
  std::remove(req.c_str());
  std::remove(model.c_str());
  ASSERT_FALSE(requests.empty());
  ASSERT_FALSE(json.empty());
  const std::map<std::string, std::string> got = {{c.name + ".table", Hex(Fnv1a(r.out))},
                                                  {c.name + ".requests", Hex(Fnv1a(requests))},
                                                  {c.name + ".json", Hex(Fnv1a(json))}};
  if (const char* u = getenv("JDW_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::map<std::string, std::string> all = ReadExpected();
    for (const auto& [k, v] : got) all[k] = v;
    std::ofstream out(kExpected);
    for (const auto& [k, v] : all) out << k << " " << v << "\n";
    GTEST_SKIP() << "pins of " << c.name << " updated in " << kExpected;
  }
  const std::map<std::string, std::string> want = ReadExpected();
  for (const auto& [k, v] : got) {
    auto it = want.find(k);
    ASSERT_NE(it, want.end()) << k << " has no pin in " << kExpected << " (JDW_UPDATE_GOLDEN=1 adds it)";
    EXPECT_EQ(v, it->second) << k << ": analyze's output changed on " << kTrace
                             << "; if meant, update the pins (see the top of analyze_golden_test.cc)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Trace, AnalyzeGolden,
    ::testing::Values(Case{"testserver_batch", "testserver", {}},
                      Case{"testserver_streaming", "testserver", {"--warmup", "16"}},
                      Case{"tcp_threadpool_batch", "tcp-threadpool", {}},
                      Case{"tcp_threadpool_streaming", "tcp-threadpool", {"--warmup", "16"}}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
}  // namespace jackdaw
