// Integration tests of jackdaw-testserver: each test starts the real binary
// on an ephemeral loopback port and talks HTTP to it.
#include <sys/statfs.h>
#include <sys/vfs.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "testserver/docroot.h"
#include "testserver/http.h"
#include "testserver/request_types.h"
#include "testserver/test_support.h"

namespace jackdaw::testserver {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::Get;
using testing::RunResult;
using testing::ServerProcess;

#define ASSERT_OK(expr)                                   \
  do {                                                    \
    auto&& st_ = (expr);                                  \
    ASSERT_TRUE(st_.ok()) << st_.message();               \
  } while (0)

std::vector<SpinRecord> SpinsOf(const HttpResponse& resp) {
  StatusOr<std::vector<SpinRecord>> spins = ParseSpinTrace(resp.Header(kHeaderSpinTrace));
  EXPECT_TRUE(spins.ok()) << spins.status().message();
  return spins.ok() ? *spins : std::vector<SpinRecord>{};
}

void ExpectStaticFiles(uint16_t port) {
  for (char letter : {'C', 'D'}) {
    const RequestType& t = *TypeByLetter(letter);
    for (int i = 0; i < 2; ++i) {  // twice: the second read may hit the cache
      StatusOr<HttpResponse> resp = Get(port, std::string(t.path));
      ASSERT_TRUE(resp.ok()) << resp.status().message();
      EXPECT_EQ(resp->status, 200);
      ASSERT_EQ(resp->body.size(), t.file_bytes) << t.path;
      EXPECT_EQ(resp->body, DocContent(t.file_name, t.file_bytes)) << t.path;
      EXPECT_EQ(resp->Header("content-length"), std::to_string(t.file_bytes));
    }
  }
}

TEST(TestServerTest, StaticFilesHaveExactSizeAndContent) {
  EXPECT_EQ(TypeByLetter('C')->file_bytes, 12288u);
  EXPECT_EQ(TypeByLetter('D')->file_bytes, 5120u);
  ServerProcess server;
  ASSERT_OK(server.Start());
  ExpectStaticFiles(server.port());
  EXPECT_EQ(server.Stop(), 0);
}

TEST(TestServerTest, StaticFilesWithDirectIoAndDropCache) {
  for (const char* mode : {"--direct-io", "--drop-cache"}) {
    SCOPED_TRACE(mode);
    ServerProcess server;
    ASSERT_OK(server.Start({mode}));
    ExpectStaticFiles(server.port());
    EXPECT_EQ(server.Stop(), 0);
  }
}

TEST(TestServerTest, DocrootFlagWritesDeterministicFiles) {
  std::string dir = testing::TempPath("docroot");
  ServerProcess server;
  ASSERT_OK(server.Start({"--docroot", dir}));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir + "/small.dat"), DocContent("small.dat", 12288));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir + "/tiny.dat"), DocContent("tiny.dat", 5120));
  EXPECT_EQ(server.Stop(), 0);
  unlink((dir + "/small.dat").c_str());
  unlink((dir + "/tiny.dat").c_str());
  rmdir(dir.c_str());
}

// The server may run as root: a link planted in its docroot must not turn
// the docroot's setup into a write to the link's target.
TEST(TestServerTest, DocrootNeverWritesThroughAPlantedSymlink) {
  std::string dir = testing::TempPath("docroot-link");
  std::string victim = testing::TempPath("victim");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  { std::ofstream(victim) << "secret"; }
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/small.dat").c_str()), 0);
  RunResult r = testing::Run({JDW_TESTSERVER_BIN, "--port", "0", "--iters-per-ms", "1000", "--docroot", dir}, 10000);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(testing::ReadFileOrEmpty(victim), "secret");
  unlink((dir + "/small.dat").c_str());
  unlink((dir + "/tiny.dat").c_str());
  rmdir(dir.c_str());
  unlink(victim.c_str());
}

TEST(TestServerTest, DiskModesOnTmpfsFailClearly) {
  struct statfs fs;
  if (statfs("/dev/shm", &fs) != 0 || fs.f_type != 0x01021994 /* TMPFS_MAGIC */)
    GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  for (const char* mode : {"--direct-io", "--drop-cache"}) {
    std::string dir = "/dev/shm/jdw-ts-test-" + std::to_string(getpid());
    RunResult r = testing::Run({JDW_TESTSERVER_BIN, "--port", "0", "--iters-per-ms", "1000",
                                mode, "--docroot", dir},
                               10000);
    EXPECT_EQ(r.exit_code, 1) << mode;
    EXPECT_EQ(r.err, std::string("jackdaw-testserver: ") + mode + ": docroot " + dir +
                         " is on a memory file system (tmpfs/ramfs), so no disk read would "
                         "happen; pass --docroot DIR on a disk-backed file system such as "
                         "/var/tmp\n");
    EXPECT_EQ(r.out, "");
    rmdir(dir.c_str());
  }
}

TEST(TestServerTest, UnknownUrlIs404) {
  ServerProcess server;
  ASSERT_OK(server.Start({"--iters-per-ms", "1000"}));
  for (const char* path : {"/nope", "/", "/longspin/x", "/small.dat"}) {
    StatusOr<HttpResponse> resp = Get(server.port(), path);
    ASSERT_TRUE(resp.ok()) << resp.status().message();
    EXPECT_EQ(resp->status, 404) << path;
    EXPECT_NE(resp->Header(kHeaderRequestId), "");
  }
  EXPECT_EQ(server.Stop(), 0);
}

TEST(TestServerTest, SpinUrlsAnswerWithAShortLineAndUniqueIds) {
  ServerProcess server;
  ASSERT_OK(server.Start({"--iters-per-ms", "1000"}));
  std::set<std::string> ids;
  for (char letter : {'A', 'B', 'E', 'F', 'A'}) {
    const RequestType& t = *TypeByLetter(letter);
    // Query strings are ignored.
    StatusOr<HttpResponse> resp = Get(server.port(), std::string(t.path) + "?x=1");
    ASSERT_TRUE(resp.ok()) << resp.status().message();
    EXPECT_EQ(resp->status, 200);
    EXPECT_EQ(resp->body, std::string(t.name) + " ok\n");
    EXPECT_EQ(resp->Header("connection"), "close");
    EXPECT_TRUE(ids.insert(resp->Header(kHeaderRequestId)).second);
  }
  EXPECT_EQ(server.Stop(), 0);
}

// The spins' own thread CPU time is within ±10% of Table 1. Thread CPU time
// does not count time the spinner was preempted, so this holds on a busy
// 2-core machine; the median of three requests absorbs one disturbed run.
TEST(TestServerTest, SpinCpuTimeIsWithinTenPercentOfNominal) {
  ServerProcess server;
  ASSERT_OK(server.Start());
  std::smatch m;
  std::string err = server.Stderr();
  ASSERT_TRUE(std::regex_search(err, m, std::regex("calibration: ([0-9]+) iterations/ms")))
      << err;
  EXPECT_GT(std::stoull(m[1]), 0u);

  for (char letter : {'A', 'B', 'E', 'F'}) {
    const RequestType& t = *TypeByLetter(letter);
    SCOPED_TRACE(t.path);
    std::map<std::string, std::vector<uint64_t>> cpu;  // label -> runs
    std::map<std::string, uint64_t> nominal;
    std::vector<uint64_t> totals;
    for (int run = 0; run < 3; ++run) {
      StatusOr<HttpResponse> resp = Get(server.port(), std::string(t.path));
      ASSERT_TRUE(resp.ok()) << resp.status().message();
      uint64_t sum = 0;
      for (const SpinRecord& s : SpinsOf(*resp)) {
        cpu[s.label].push_back(s.cpu_ns);
        nominal[s.label] = s.nominal_ns;
        sum += s.cpu_ns;
      }
      EXPECT_EQ(std::to_string(sum), resp->Header(kHeaderSpinCpuNs));
      totals.push_back(sum);
    }
    uint64_t nominal_total = 0;
    for (uint32_t us : t.spin_us) nominal_total += us * 1000ull;
    for (auto& [label, runs] : cpu) {
      std::sort(runs.begin(), runs.end());
      double ratio = static_cast<double>(runs[1]) / static_cast<double>(nominal[label]);
      EXPECT_NEAR(ratio, 1.0, 0.10) << label << " median cpu " << runs[1] << " ns of nominal "
                                    << nominal[label];
    }
    std::sort(totals.begin(), totals.end());
    EXPECT_NEAR(static_cast<double>(totals[1]) / static_cast<double>(nominal_total), 1.0, 0.10);
  }
  EXPECT_EQ(server.Stop(), 0);
}

TEST(TestServerTest, IterationsPerMsFlagFixesTheSpin) {
  ServerProcess server;
  ASSERT_OK(server.Start({"--iters-per-ms", "1000"}));
  EXPECT_THAT(server.Stderr(), HasSubstr("calibration: 1000 iterations/ms"));
  StatusOr<HttpResponse> resp = Get(server.port(), "/longspin");
  ASSERT_TRUE(resp.ok());
  std::vector<SpinRecord> spins = SpinsOf(*resp);
  ASSERT_EQ(spins.size(), 1u);
  EXPECT_EQ(spins[0].nominal_ns, 30000000u);
  EXPECT_LT(spins[0].cpu_ns, 5000000u);  // 30000 iterations: far less than 30 ms
  EXPECT_EQ(server.Stop(), 0);
}

// F: worker spin1, then the helper (another thread) spins, then the worker
// spins again, strictly in that order.
TEST(TestServerTest, RpcSpinHandsOverToAHelperAndBack) {
  ServerProcess server;
  ASSERT_OK(server.Start({"--iters-per-ms", "100000"}));
  for (int run = 0; run < 3; ++run) {
    StatusOr<HttpResponse> resp = Get(server.port(), "/rpcspin");
    ASSERT_TRUE(resp.ok());
    std::vector<SpinRecord> s = SpinsOf(*resp);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].label, "spin1");
    EXPECT_EQ(s[1].label, "helper");
    EXPECT_EQ(s[2].label, "spin2");
    EXPECT_EQ(s[0].nominal_ns, 7500000u);
    EXPECT_EQ(s[1].nominal_ns, 15000000u);
    EXPECT_EQ(s[2].nominal_ns, 7250000u);
    EXPECT_EQ(s[0].tid, s[2].tid) << "both worker spins on the worker thread";
    EXPECT_NE(s[0].tid, s[1].tid) << "the helper is another thread";
    EXPECT_LE(s[0].end_mono_ns, s[1].start_mono_ns) << "helper starts after spin1";
    EXPECT_LE(s[1].end_mono_ns, s[2].start_mono_ns) << "spin2 starts after the helper";
  }
  EXPECT_EQ(server.Stop(), 0);
}

// E: the worker and a helper spin at the same time on two threads.
TEST(TestServerTest, ParSpinRunsTwoThreadsConcurrently) {
  ServerProcess server;
  ASSERT_OK(server.Start());
  for (int run = 0; run < 3; ++run) {
    StatusOr<HttpResponse> resp = Get(server.port(), "/parspin");
    ASSERT_TRUE(resp.ok());
    std::vector<SpinRecord> s = SpinsOf(*resp);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].label, "worker");
    EXPECT_EQ(s[1].label, "helper");
    EXPECT_NE(s[0].tid, s[1].tid);
    // The intervals overlap: each started before the other ended.
    EXPECT_LT(s[0].start_mono_ns, s[1].end_mono_ns);
    EXPECT_LT(s[1].start_mono_ns, s[0].end_mono_ns);
  }
  EXPECT_EQ(server.Stop(), 0);
}

TEST(TestServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  ServerProcess server;
  ASSERT_OK(server.Start({"--keepalive", "--iters-per-ms", "1000"}));
  int fd = testing::ConnectLoopback(server.port());
  ASSERT_GE(fd, 0);
  std::string buf;
  for (const char* path : {"/tiny", "/shortspin", "/nope", "/small"}) {
    ASSERT_TRUE(WriteAll(fd, std::string("GET ") + path + " HTTP/1.1\r\nHost: t\r\n\r\n").ok());
    StatusOr<HttpResponse> resp = ReadResponse(fd, buf, 10000);
    ASSERT_TRUE(resp.ok()) << resp.status().message();
    EXPECT_TRUE(resp->keepalive) << path;
  }
  ASSERT_TRUE(WriteAll(fd, "GET /tiny HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").ok());
  StatusOr<HttpResponse> last = ReadResponse(fd, buf, 10000);
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->keepalive);
  close(fd);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(TestServerTest, BusyPortIsRejectedWithOneLine) {
  ServerProcess first;
  ASSERT_OK(first.Start({"--iters-per-ms", "1000"}));
  std::string port = std::to_string(first.port());
  RunResult r = testing::Run({JDW_TESTSERVER_BIN, "--port", port});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "jackdaw-testserver: cannot bind 127.0.0.1:" + port +
                       ": address already in use (pick another --port, or 0 for any free port)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(first.Stop(), 0);
}

TEST(TestServerTest, SigintAndSigtermStopCleanly) {
  for (int sig : {SIGINT, SIGTERM}) {
    ServerProcess server;
    ASSERT_OK(server.Start({"--iters-per-ms", "1000"}));
    ASSERT_TRUE(Get(server.port(), "/tiny").ok());
    EXPECT_EQ(server.Stop(sig), 0) << "signal " << sig;
  }
}

TEST(TestServerTest, StopWhileRequestsAreInFlight) {
  ServerProcess server;
  ASSERT_OK(server.Start());
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) clients.emplace_back([&] { (void)Get(server.port(), "/rpcspin"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(server.Stop(SIGINT), 0);
  for (std::thread& t : clients) t.join();
}

TEST(TestServerTest, UsdtProbesAreInTheElfNotes) {
  RunResult r = testing::Run({"/usr/bin/readelf", "-n", JDW_TESTSERVER_BIN});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Provider / Name / Location / Arguments, one block per probe site.
  std::regex block(
      "Provider: (\\S+)\\s+Name: (\\S+)\\s+Location: [^\\n]*\\n\\s+Arguments: ([^\\n]*)");
  std::map<std::string, std::string> found;  // name -> arguments
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), block);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[1] == "jackdaw_ts") found[(*it)[2]] = (*it)[3];
  }
  const std::map<std::string, int> expected = {
      {"dispatch", 2},   {"worker_pickup", 2}, {"request_start", 3}, {"request_end", 3},
      {"par_fork", 1},   {"par_begin", 1},     {"par_end", 1},       {"par_join", 1},
      {"rpc_signal", 1}, {"rpc_wait", 1},      {"rpc_begin", 1},     {"rpc_reply", 1},
      {"rpc_resume", 1},
      {"backend_call", 2},
      {"backend_reply", 2}};
  for (const auto& [name, nargs] : expected) {
    ASSERT_TRUE(found.count(name)) << "probe jackdaw_ts:" << name << " missing";
    const std::string& args = found[name];
    EXPECT_THAT(args, StartsWith("8@")) << name << ": first argument must be the u64 req id";
    EXPECT_EQ(std::count(args.begin(), args.end(), '@'), nargs) << name << ": " << args;
  }
  EXPECT_EQ(found.size(), expected.size());
}

TEST(TestServerTest, HelpTeachesWithExamples) {
  RunResult r = testing::Run({JDW_TESTSERVER_BIN, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples:"));
  EXPECT_THAT(r.out, HasSubstr("/rpcspin"));
  EXPECT_THAT(r.out, HasSubstr("--direct-io"));
}

}  // namespace
}  // namespace jackdaw::testserver
