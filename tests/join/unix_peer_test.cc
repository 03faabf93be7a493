// Requests over unix-domain sockets (issues 27 and 29): real processes on a
// real unix socket, recorded with eBPF and joined with the kernel-only
// tcp-threadpool schema.
//
// - Two tiers: a front jackdaw-testserver on TCP calls a backend
//   jackdaw-testserver listening on a unix socket (as nginx calls php-fpm),
//   a connection per call and pooled. Each client request must come out as
//   one request holding both processes' work — the backend's CPU at tier 1 —
//   with every unix call and connection naming its peer process, and no
//   backend exchange a request of its own.
// - redis on a unix socket, this test its client: every request names its
//   peer, this process, by pid.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pcap/two_host.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

using nlohmann::json;
using testing::RunCommand;

std::string Bin(const std::string& name) { return testing::BinDir() + "/" + name; }

int ConnectUnix(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool WaitForUnix(const std::string& path) {
  for (int i = 0; i < 100; i++) {
    const int fd = ConnectUnix(path);
    if (fd >= 0) {
      close(fd);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::vector<json> ReadRequests(const std::string& path, std::vector<json>* connections) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << line;
    if (j.is_discarded()) continue;
    if (!j.contains("type")) out.push_back(std::move(j));
    else if (connections && j["type"] == "connection") connections->push_back(std::move(j));
  }
  return out;
}

// Short, so the whole path fits in what the capture keeps of a name
// (JDW_UNIX_PATH_LEN) and the calls can be checked against it.
std::string SockPath(const std::string& tag) { return "/tmp/jdw" + std::to_string(getpid()) + tag + ".sock"; }

bool IsUnix(const json& endpoint) {
  return endpoint.value("local", std::string()).rfind("unix:", 0) == 0;
}

struct TwoTierRun {
  std::map<std::string, int> truth;  // client requests by type
  std::vector<json> requests;
  std::string analyze_out;
};

// Records a backend on a unix socket and a front calling it, drives `n`
// requests of G (1 call), H (3 calls) and D (no call), analyzes.
void RecordOverUnix(bool pooled, int n, const std::string& sock, TwoTierRun* run) {
  const int front_port = 20000 + (getpid() + 7) % 5000;
  const std::string trace = testing::TempPath(pooled ? "unix-pooled.jdw" : "unix.jdw");
  const std::string truth = testing::TempPath("unix-truth.jsonl");
  const std::string reqs = testing::TempPath("unix-requests.jsonl");
  const std::string backend = Bin("jackdaw-testserver") + " --keepalive --unix " + sock;
  const std::string front = Bin("jackdaw-testserver") + " --port " + std::to_string(front_port) +
                            " --backend unix:" + sock + (pooled ? " --backend-pool" : "");
  {
    // The backend's "listening on unix:..." goes elsewhere: the recorder
    // waits for the front's line, which names its port. The shell stops
    // both when the recorder stops it: no server outlives the test.
    testing::RecordedServer servers(
        trace, {"/bin/sh", "-c",
                backend + " >/dev/null 2>&1 & b=$!; sleep 0.5; " + front +
                    " & f=$!; trap 'kill $b $f; wait' INT TERM HUP; wait"});
    ASSERT_TRUE(servers.ok()) << "servers did not start under jackdaw record";
    ASSERT_TRUE(WaitForUnix(sock)) << "the backend is not listening on " << sock;
    auto load = RunCommand({Bin("jackdaw-load"), "--url", "http://127.0.0.1:" + std::to_string(front_port), "-n",
                            std::to_string(n), "-c", "2", "--mix", "G:1,H:1,D:1", "--ground-truth", truth});
    ASSERT_EQ(load.exit_code, 0) << load.out << load.err;
    ASSERT_EQ(servers.Stop(), 0);
  }
  std::ifstream tin(truth);
  for (std::string line; std::getline(tin, line);) {
    auto j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    run->truth[j.value("type", std::string())]++;
  }
  auto r = RunCommand({Bin("jackdaw"), "analyze", trace, "--schema", "tcp-threadpool", "--requests", reqs});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  run->analyze_out = r.out + r.err;
  run->requests = ReadRequests(reqs, nullptr);
  for (const std::string& f : {trace, truth, reqs}) std::filesystem::remove(f);
}

void ExpectOneRequestAcrossTheUnixHop(const TwoTierRun& run, int n, const std::string& sock) {
  ASSERT_EQ(run.truth.at("G") + run.truth.at("H") + run.truth.at("D"), n);
  std::map<size_t, int> by_calls;
  uint32_t front = 0;
  for (const auto& q : run.requests) {
    const uint32_t tgid = q["tgid"].get<uint32_t>();
    if (!front) front = tgid;
    EXPECT_EQ(tgid, front) << "a request whose front is another process (a backend fragment):\n"
                           << q.dump().substr(0, 600);
    const auto& calls = q["calls"];
    by_calls[calls.size()]++;
    if (calls.empty()) continue;
    uint32_t backend = 0;
    for (const auto& c : calls) {
      EXPECT_TRUE(c["answered"].get<bool>()) << c.dump();
      EXPECT_FALSE(c["overlapped"].get<bool>()) << c.dump();
      // The call names its far end: the socket's path and the process.
      EXPECT_EQ(c["remote"], "unix:" + sock) << c.dump();
      EXPECT_EQ(c["local"], "unix:") << c.dump();
      backend = c["peer_tgid"].get<uint32_t>();
      EXPECT_NE(backend, 0u) << "the backend is traced: its exchange joins\n" << c.dump();
      EXPECT_EQ(c.value("peer_pid", 0u), backend) << c.dump();
      EXPECT_EQ(c.value("peer_comm", std::string()), "jackdaw-testser") << c.dump();
    }
    // Both processes' parts, the backend one call away with its own CPU.
    ASSERT_EQ(q["processes"].size(), 2u) << q.dump().substr(0, 600);
    EXPECT_EQ(q["processes"][0]["tgid"].get<uint32_t>(), front);
    EXPECT_EQ(q["processes"][1]["tgid"].get<uint32_t>(), backend);
    EXPECT_EQ(q["processes"][1]["tier"].get<uint32_t>(), 1u);
    EXPECT_GT(q["processes"][1]["cpu_ns"].get<uint64_t>(), 0u) << "the backend's CPU for the call";
    // Every unix connection the request touched names its peer process:
    // the backend's end names the front, the front's end the backend.
    int unix_conns = 0;
    for (const auto& c : q["connections"]) {
      if (!IsUnix(c)) continue;
      unix_conns++;
      const uint32_t peer = c.value("peer_pid", 0u);
      EXPECT_TRUE(peer == front || peer == backend) << c.dump();
      EXPECT_EQ(c.value("peer_comm", std::string()), "jackdaw-testser") << c.dump();
    }
    EXPECT_GE(unix_conns, 2) << "both ends of the unix hop\n" << q["connections"].dump();
  }
  EXPECT_EQ(run.requests.size(), size_t(n)) << run.analyze_out;
  EXPECT_EQ(by_calls[0], run.truth.at("D")) << run.analyze_out;
  EXPECT_EQ(by_calls[1], run.truth.at("G")) << run.analyze_out;
  EXPECT_EQ(by_calls[3], run.truth.at("H")) << run.analyze_out;
}

TEST(UnixPeers, ConnectionPerCallOverAUnixSocketJoinsTheBackendsWork) {
  JDW_REQUIRE_ROOT();
  const std::string sock = SockPath("b");
  TwoTierRun run;
  ASSERT_NO_FATAL_FAILURE(RecordOverUnix(false, 60, sock, &run));
  ExpectOneRequestAcrossTheUnixHop(run, 60, sock);
}

TEST(UnixPeers, PooledUnixConnectionsGiveEachCallToItsWriter) {
  JDW_REQUIRE_ROOT();
  const std::string sock = SockPath("p");
  TwoTierRun run;
  ASSERT_NO_FATAL_FAILURE(RecordOverUnix(true, 60, sock, &run));
  ExpectOneRequestAcrossTheUnixHop(run, 60, sock);
}

// One RESP command, its whole reply read (replies here are one line, or a
// bulk string's header line and its data line).
bool RedisCommand(int fd, const std::string& cmd, std::string* reply) {
  if (write(fd, cmd.data(), cmd.size()) != ssize_t(cmd.size())) return false;
  reply->clear();
  char buf[256];
  int lines_wanted = 1;
  while (true) {
    const ssize_t got = read(fd, buf, sizeof(buf));
    if (got <= 0) return false;
    reply->append(buf, size_t(got));
    if ((*reply)[0] == '$') lines_wanted = 2;
    size_t lines = 0;
    for (size_t p = 0; (p = reply->find("\r\n", p)) != std::string::npos; p += 2) lines++;
    if (int(lines) >= lines_wanted) return true;
  }
}

TEST(UnixPeers, RedisOnAUnixSocketNamesItsClientProcess) {
  JDW_REQUIRE_ROOT();
  if (!std::filesystem::exists("/usr/bin/redis-server")) {
    if (testing::InCi()) FAIL() << "redis-server missing (scripts/install-deps.sh installs it)";
    GTEST_SKIP() << "redis-server missing (run scripts/install-deps.sh)";
  }
  const std::string sock = SockPath("r");
  const std::string dir = testing::TempPath("redis-dir");
  std::filesystem::create_directories(dir);
  const std::string trace = testing::TempPath("redis-unix.jdw");
  const std::string reqs = testing::TempPath("redis-unix.jsonl");
  constexpr int kConns = 5, kPerConn = 60;
  {
    // No TCP port, no persistence, nothing read from a config file; the
    // shell's line is what the recorder waits for.
    testing::RecordedServer server(
        trace, {"/bin/sh", "-c",
                "/usr/bin/redis-server --port 0 --unixsocket " + sock + " --save '' --appendonly no --dir " + dir +
                    " >/dev/null 2>&1 & r=$!; sleep 0.3; echo 'listening on unix:1'; "
                    "trap 'kill $r; wait' INT TERM HUP; wait"});
    ASSERT_TRUE(server.ok()) << "redis did not start under jackdaw record";
    ASSERT_TRUE(WaitForUnix(sock)) << "redis is not listening on " << sock;
    int fds[kConns];
    for (int& fd : fds) {
      fd = ConnectUnix(sock);
      ASSERT_GE(fd, 0);
    }
    std::string reply;
    for (int i = 0; i < kPerConn; i++)
      for (int c = 0; c < kConns; c++) {
        const std::string cmd = i % 2 ? "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" : "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        ASSERT_TRUE(RedisCommand(fds[c], cmd, &reply)) << "request " << i << " on connection " << c;
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    for (int fd : fds) close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(server.Stop(), 0);
  }
  auto r = RunCommand({Bin("jackdaw"), "analyze", trace, "--schema", "tcp-threadpool", "--requests", reqs});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<json> connections;
  const std::vector<json> requests = ReadRequests(reqs, &connections);
  int named = 0;
  for (const auto& q : requests) {
    bool names_me = false;
    for (const auto& c : q["connections"])
      if (IsUnix(c) && c.value("peer_pid", 0u) == uint32_t(getpid())) {
        names_me = true;
        EXPECT_EQ(c["local"], "unix:" + sock) << c.dump();
      }
    named += names_me;
    EXPECT_TRUE(names_me) << "a request that does not name its client process:\n" << q.dump().substr(0, 600);
  }
  EXPECT_EQ(requests.size(), size_t(kConns * kPerConn)) << r.out << r.err;
  EXPECT_EQ(named, kConns * kPerConn);
  int conn_lines = 0;
  for (const auto& c : connections)
    if (IsUnix(c) && c.value("peer_pid", 0u) == uint32_t(getpid())) conn_lines++;
  // Each client connection's line names this process as well (and so
  // does the readiness probe's connection, WaitForUnix).
  EXPECT_EQ(conn_lines, kConns + 1) << r.out;
  for (const std::string& f : {trace, reqs, sock}) std::filesystem::remove(f);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace jackdaw
