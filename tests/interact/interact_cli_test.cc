// `jackdaw interactions` as a user runs it: the binary on this kernel,
// following this test process's own loopback exchanges, and its exit line
// saying what crossed to user space (records and bytes through the rings,
// class rows and bytes from the maps), which the benchmark compares with
// full capture. Checked against what the test made and against the rows
// the command printed.
#include <bpf/libbpf.h>
#include <signal.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <thread>

#include "interact/interact_support.h"

namespace jackdaw {
namespace {

using namespace interact_testing;

struct ToUser {
  uint64_t records = 0, ring_bytes = 0, class_rows = 0, class_bytes = 0, sweep_bytes = 0;
};

// The exit line "to user space: R records (B bytes) through the rings, C
// class rows (D bytes) and S bytes of idle sweep from the maps".
bool ParseToUser(const std::string& err, ToUser* t) {
  static const std::regex re(
      "to user space: ([0-9]+) records \\(([0-9]+) bytes\\) through the rings, ([0-9]+) class rows "
      "\\(([0-9]+) bytes\\) and ([0-9]+) bytes of idle sweep from the maps");
  std::smatch m;
  if (!std::regex_search(err, m, re)) return false;
  t->records = std::stoull(m[1]);
  t->ring_bytes = std::stoull(m[2]);
  t->class_rows = std::stoull(m[3]);
  t->class_bytes = std::stoull(m[4]);
  t->sweep_bytes = std::stoull(m[5]);
  return true;
}

// Starts `jackdaw interactions ARGS --pid <this process>`, makes `n`
// request/response exchanges on one loopback connection (this process is
// server and client), closes it and stops the command with SIGINT.
void RunAgainstExchanges(const std::vector<std::string>& args, int n, testserver::testing::Child* tracer) {
  std::vector<std::string> argv = {testing::BinDir() + "/jackdaw", "interactions", "--pid",
                                   std::to_string(getpid())};
  argv.insert(argv.end(), args.begin(), args.end());
  ASSERT_TRUE(tracer->Spawn(argv).ok());
  for (int i = 0; i < 300 && tracer->Stderr().find("following interactions") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(tracer->Stderr().find("following interactions"), std::string::npos) << tracer->Stderr();
  TcpPair pair = OpenTcpPair();
  ASSERT_TRUE(pair.ok());
  for (int i = 0; i < n; ++i) ASSERT_TRUE(Exchange(pair.client, pair.server));
  pair.Close();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the command drains every 50 ms
  tracer->Signal(SIGINT);
  ASSERT_EQ(tracer->Wait(20000), 0) << tracer->Stderr();
}

TEST_F(InteractTest, CommandCountsTheRecordsAndBytesItReceives) {
  constexpr int kExchanges = 50;
  const std::string path = testing::TempPath("ia-cli.jdw");
  testserver::testing::Child tracer;
  ASSERT_NO_FATAL_FAILURE(RunAgainstExchanges({"--by", "interaction", "-o", path}, kExchanges, &tracer));
  unlink(path.c_str());
  ToUser t;
  ASSERT_TRUE(ParseToUser(tracer.Stderr(), &t)) << tracer.Stderr();
  // Each exchange is one server and one client interaction (closing
  // completes the last of each side): every record reached the recorder,
  // each the record's fixed size.
  EXPECT_EQ(t.records, 2u * kExchanges);
  EXPECT_EQ(t.ring_bytes, t.records * sizeof(jdw_interaction_record));
  EXPECT_EQ(t.class_rows, 0u);
  EXPECT_EQ(t.class_bytes, 0u);
}

TEST_F(InteractTest, ClassModeCountsTheRowsAndBytesItCopies) {
  constexpr int kExchanges = 50;
  testserver::testing::Child tracer;
  ASSERT_NO_FATAL_FAILURE(
      RunAgainstExchanges({"--by", "class", "--json", "-", "--class-window", "0.2"}, kExchanges, &tracer));
  ToUser t;
  ASSERT_TRUE(ParseToUser(tracer.Stderr(), &t)) << tracer.Stderr();
  EXPECT_EQ(t.records, 0u) << "class mode ships no records";
  EXPECT_EQ(t.ring_bytes, 0u);
  // Every row the command printed was copied out, with every possible
  // CPU's values; keys are walked too (both window parities), so more.
  uint64_t printed = 0, interactions = 0;
  std::istringstream lines(tracer.ReadAllStdout());
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const nlohmann::json w = nlohmann::json::parse(line);
    for (const auto& row : w["classes"]) {
      ++printed;
      interactions += row["count"].get<uint64_t>();
    }
  }
  EXPECT_EQ(interactions, 2u * kExchanges) << "rows printed hold every interaction";
  EXPECT_GE(t.class_rows, printed);
  EXPECT_GT(t.class_rows, 0u);
  const uint64_t ncpus = static_cast<uint64_t>(libbpf_num_possible_cpus());
  EXPECT_GE(t.class_bytes, t.class_rows * (sizeof(jdw_ia_class_key) + ncpus * sizeof(jdw_ia_class_stats)));
}

}  // namespace
}  // namespace jackdaw
