// The interact probe group on the real kernel: jackdaw-testserver under
// jackdaw-load (and small clients written here) on loopback, with the
// in-kernel interaction records checked against the load driver's ground
// truth: one interaction per request, exact bytes, right roles, and times
// nested inside the driver's own (same clock: CLOCK_MONOTONIC).
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "interact/interact_support.h"
#include "capture/interact.h"
#include "capture/session.h"
#include "support/test_support.h"
#include "testserver/http.h"
#include "testserver/request_types.h"
#include "testserver/test_support.h"

namespace jackdaw {
namespace {

using namespace interact_testing;

using testserver::testing::Child;

// Whether the server end of the loopback connection `fd` has read every
// byte sent to it: its socket's receive queue, from /proc/net/tcp, is empty.
// Lets a test order its next write after the server's read instead of
// guessing how long a loaded machine takes to schedule the server.
bool PeerReadEverything(int fd) {
  sockaddr_in self{}, peer{};
  socklen_t len = sizeof(self);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) != 0) return false;
  len = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;
  FILE* f = fopen("/proc/net/tcp", "r");
  if (!f) return false;
  char line[512];
  bool empty = false;
  while (fgets(line, sizeof(line), f)) {
    unsigned local_addr, local_port, remote_addr, remote_port, state, tx_queue, rx_queue;
    if (sscanf(line, " %*u: %8X:%4X %8X:%4X %2X %8X:%8X", &local_addr, &local_port, &remote_addr, &remote_port,
               &state, &tx_queue, &rx_queue) != 7)
      continue;
    if (local_port == ntohs(peer.sin_port) && remote_port == ntohs(self.sin_port)) {
      empty = rx_queue == 0;
      break;
    }
  }
  fclose(f);
  return empty;
}

// jackdaw-testserver on an ephemeral port, pid known.
struct Server {
  Child child;
  uint16_t port = 0;
  Status Start(std::vector<std::string> extra) {
    std::vector<std::string> argv = {testing::BinDir() + "/jackdaw-testserver", "--port", "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--iters-per-ms") == extra.end())
      argv.insert(argv.end(), {"--iters-per-ms", "20000"});  // short spins: a fast test
    RETURN_IF_ERROR(child.Spawn(argv));
    const std::string line = child.ReadLine(20000);
    const std::string prefix = "listening on 127.0.0.1:";
    if (line.rfind(prefix, 0) != 0) return ErrStatus("server did not start: %s", child.Stderr().c_str());
    port = static_cast<uint16_t>(std::stoi(line.substr(prefix.size())));
    return Status::Ok();
  }
  uint32_t pid() const { return static_cast<uint32_t>(child.pid()); }
};

std::vector<nlohmann::json> ReadTruth(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(testserver::testing::ReadFileOrEmpty(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The exact request jackdaw-load writes (user/testserver/load.cc).
size_t RequestBytes(const nlohmann::json& t, uint16_t port, bool keepalive) {
  const std::string url = t["url"];
  const std::string path = url.substr(url.find('/', strlen("http://")));
  return ("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
          "\r\nUser-Agent: jackdaw-load\r\nConnection: " + (keepalive ? "keep-alive" : "close") + "\r\n\r\n")
      .size();
}

// Runs jackdaw-load against `server` under a session tracing both; returns
// the ground truth.
std::vector<nlohmann::json> RunLoad(Server& server, Collect& sink, std::unique_ptr<capture::CaptureSession>* session,
                                    int n, int clients, bool keepalive, uint32_t* load_pid) {
  const std::string truth = testing::TempPath("truth.jsonl");
  std::vector<std::string> argv = {testing::BinDir() + "/jackdaw-load", "--url",
                                   "http://127.0.0.1:" + std::to_string(server.port), "-n", std::to_string(n),
                                   "-c", std::to_string(clients), "--mix", "B:1,C:1,D:1", "--seed", "3",
                                   "--ground-truth", truth};
  if (keepalive) argv.push_back("--keepalive");
  testing::PausedChild load(argv);
  *load_pid = static_cast<uint32_t>(load.pid());
  *session = OpenSession({server.pid(), *load_pid});
  if (!*session) return {};
  load.Go();
  std::thread drain([&] {});
  int code = -1;
  std::string out;
  std::thread waiter([&] { out = load.Wait(&code); });
  // Drain while the load runs so the rings never fill.
  while (code == -1) {
    auto r = (*session)->Poll(sink, 20);
    if (!r.ok()) break;
  }
  waiter.join();
  drain.join();
  EXPECT_EQ(code, 0) << out;
  DrainFor(**session, sink, 300);
  auto t = ReadTruth(truth);
  unlink(truth.c_str());
  return t;
}

// Latency against the load driver's own (same clock, CLOCK_MONOTONIC). The
// client-side interaction nests inside the driver's send..recv exactly
// (checked per request); what the driver adds is its own work outside the
// kernel's view: before the first send (building the request; with a
// connection per request, connect()) and after the last byte arrived (the
// thread waking, reading and parsing). On a shared 2-core machine that
// tail includes run-queue waits (measured here: every request over 1 ms
// had its response wait in the socket for the client's first read while
// the client thread sat runnable), so the bounds are on the bulk: the
// median difference is under 1 ms, and with that measured wait set aside
// 90% of requests agree within 1 ms. Each request over 1 ms is printed
// with where its difference lies.
struct LatencyPair {
  const jdw_interaction* ia;  // the client-side interaction
  uint64_t send, recv;        // the driver's
};

void CheckLatencyAgreement(const std::vector<LatencyPair>& pairs) {
  ASSERT_FALSE(pairs.empty());
  size_t within = 0, explained = 0;
  std::vector<double> diffs;
  for (const LatencyPair& p : pairs) {
    const jdw_interaction& ia = *p.ia;
    const double diff = double((p.recv - p.send) - (ia.resp_end - ia.req_start)) / 1e6;
    // The client's first read came after the response's last byte: that
    // wait is the client thread not running, not a disagreement.
    const double read_wait = ia.in_read > ia.resp_end ? double(ia.in_read - ia.resp_end) / 1e6 : 0.0;
    diffs.push_back(diff);
    explained += diff - read_wait <= 1.0;
    if (diff <= 1.0) {
      ++within;
      continue;
    }
    printf("  over 1 ms: driver %.3f ms, kernel %.3f ms: before the first send %.3f ms, after the last "
           "arrival %.3f ms (of which the response waited %.3f ms in the socket for its first read); "
           "client thread runnable %.3f ms, blocked %.3f ms while it was served\n",
           double(p.recv - p.send) / 1e6, double(ia.resp_end - ia.req_start) / 1e6,
           double(ia.req_start - p.send) / 1e6, double(p.recv - ia.resp_end) / 1e6,
           ia.in_read > ia.resp_start ? double(ia.in_read - ia.resp_start) / 1e6 : 0.0, double(ia.runq_ns) / 1e6,
           double(ia.blocked_ns) / 1e6);
  }
  std::sort(diffs.begin(), diffs.end());
  const double median = diffs[diffs.size() / 2];
  printf("latency agreement: %zu/%zu within 1 ms of the load driver's (%zu/%zu once the client's own wait "
         "to read the response, which the kernel measures, is set aside); median diff %.3f ms, max %.3f ms\n",
         within, diffs.size(), explained, diffs.size(), median, diffs.back());
  EXPECT_LT(median, 1.0) << "the kernel's client-side latency should match the driver's for the bulk";
  EXPECT_GE(explained * 10, pairs.size() * 9)
      << "beyond the client's run-queue wait to read its response, the driver and the kernel should agree "
         "within 1 ms for at least 90% of requests";
}

// Checks server and client interactions of one jackdaw-load run.
void CheckAgainstTruth(const Collect& sink, const std::vector<nlohmann::json>& truth, const Server& server,
                       uint32_t load_pid, bool keepalive) {
  auto srv = sink.Of(server.pid(), JDW_ROLE_SERVER);
  auto cli = sink.Of(load_pid, JDW_ROLE_CLIENT);
  ASSERT_EQ(srv.size(), truth.size()) << "one server interaction per request";
  ASSERT_EQ(cli.size(), truth.size()) << "one client interaction per request";
  EXPECT_TRUE(sink.Of(server.pid(), JDW_ROLE_CLIENT).empty());
  EXPECT_TRUE(sink.Of(load_pid, JDW_ROLE_SERVER).empty());
  // Requests of one connection (client port), in the order sent.
  std::map<uint16_t, std::vector<const nlohmann::json*>> by_port;
  for (const auto& t : truth) {
    ASSERT_EQ(t["error"], "") << t.dump();
    by_port[t["local_port"].get<uint16_t>()].push_back(&t);
  }
  for (auto& [port, v] : by_port)
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return (*a)["send_mono_ns"] < (*b)["send_mono_ns"]; });
  auto match = [&](std::vector<Interaction>& xs, bool server_side) {
    std::map<uint16_t, std::vector<Interaction*>> got;
    for (auto& x : xs) got[server_side ? x.ia.rport : x.ia.lport].push_back(&x);
    std::vector<LatencyPair> lat;
    for (auto& [port, v] : got) {
      std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->ia.req_start < b->ia.req_start; });
      ASSERT_TRUE(by_port.count(port)) << "interaction on port " << port << " matches no request";
      const auto& reqs = by_port[port];
      ASSERT_EQ(v.size(), reqs.size()) << "port " << port;
      for (size_t i = 0; i < v.size(); ++i) {
        const jdw_interaction& ia = v[i]->ia;
        const nlohmann::json& t = *reqs[i];
        SCOPED_TRACE(t.dump());
        EXPECT_EQ(ia.req_bytes, RequestBytes(t, server.port, keepalive));
        EXPECT_EQ(ia.resp_bytes, t["wire_bytes"].get<uint64_t>());
        EXPECT_EQ(ia.seq, i) << "interactions of one connection are numbered in order";
        EXPECT_EQ(ia.protocol, 6);
        EXPECT_EQ(ia.family, 2);
        EXPECT_EQ(server_side ? ia.lport : ia.rport, server.port);
        EXPECT_GE(ia.req_packets, 1u);
        EXPECT_GE(ia.resp_packets, 1u);
        EXPECT_EQ(ia.flags & ~JDW_IA_CLOSED, 0) << "flags " << int(ia.flags);
        // Times: ordered, and nested in the driver's [send, recv].
        const uint64_t send = t["send_mono_ns"], recv = t["recv_mono_ns"];
        EXPECT_LE(send, ia.req_start);
        EXPECT_LE(ia.req_start, ia.req_end);
        EXPECT_LE(ia.req_end, ia.resp_start);
        EXPECT_LE(ia.resp_start, ia.resp_end);
        EXPECT_LE(ia.resp_end, recv);
        if (server_side) {
          EXPECT_LE(ia.req_start, ia.in_read);
          EXPECT_LE(ia.in_read, ia.resp_start);
          EXPECT_NE(ia.req_tid, 0u);
          EXPECT_GT(ia.oncpu_ns, 0u) << "the worker ran between reading and answering";
          EXPECT_LE(ia.oncpu_ns + ia.runq_ns + ia.blocked_ns, ia.resp_end - ia.req_start + 1000);
        } else {
          EXPECT_LE(ia.resp_start, ia.in_read);
          lat.push_back({&ia, send, recv});
        }
      }
    }
    if (!server_side) CheckLatencyAgreement(lat);
  };
  match(srv, true);
  match(cli, false);
}

TEST_F(InteractTest, OneInteractionPerConnectionRequest) {
  Server server;
  ASSERT_TRUE(server.Start({}).ok());
  Collect sink;
  std::unique_ptr<capture::CaptureSession> session;
  uint32_t load_pid = 0;
  auto truth = RunLoad(server, sink, &session, 120, 2, false, &load_pid);
  ASSERT_TRUE(session);
  ASSERT_EQ(truth.size(), 120u);
  CheckAgainstTruth(sink, truth, server, load_pid, false);
  ExpectNoLosses(*session);
}

TEST_F(InteractTest, KeepAliveConnectionsGiveOneInteractionPerRequest) {
  Server server;
  ASSERT_TRUE(server.Start({"--keepalive", "--workers", "4"}).ok());
  Collect sink;
  std::unique_ptr<capture::CaptureSession> session;
  uint32_t load_pid = 0;
  auto truth = RunLoad(server, sink, &session, 150, 3, true, &load_pid);
  ASSERT_TRUE(session);
  ASSERT_EQ(truth.size(), 150u);
  std::set<uint16_t> conns;
  for (const auto& t : truth) conns.insert(t["local_port"].get<uint16_t>());
  ASSERT_LE(conns.size(), 6u) << "the driver kept its connections alive";
  CheckAgainstTruth(sink, truth, server, load_pid, true);
  ExpectNoLosses(*session);
}

// Two requests written back to back on one kept-alive connection, the second
// while the server is still busy with the first: the kernel sees request
// bytes waiting when the first response begins. Each request still gets its
// own interaction with its own bytes, and both are flagged pipelined.
TEST_F(InteractTest, PipelinedRequestsAreSplitAndFlagged) {
  Server server;
  // Spins about four times their nominal 15 ms (the host does some 0.9 M
  // iterations per ms): r2 arrives while the worker spins on r1.
  ASSERT_TRUE(server.Start({"--keepalive", "--workers", "2", "--iters-per-ms", "4000000"}).ok());
  auto session = OpenSession({server.pid()});
  ASSERT_TRUE(session);
  Collect sink;
  const int fd = Connect(server.port);
  ASSERT_GE(fd, 0);
  const std::string r1 = "GET /shortspin HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n";
  const std::string r2 = "GET /tiny HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n";
  ASSERT_TRUE(testserver::WriteAll(fd, r1).ok());
  // r2 must come after the worker read r1 (else it reads both in one call:
  // one interaction by definition) and before it answers: sent as soon as
  // r1 has left the server socket's receive queue, while the worker spins
  // (about 70 ms).
  bool read_r1 = false;
  for (int i = 0; i < 10000 && !(read_r1 = PeerReadEverything(fd)); ++i) usleep(500);
  ASSERT_TRUE(read_r1) << "the server never read the first request";
  ASSERT_TRUE(testserver::WriteAll(fd, r2).ok());
  std::string buf;
  auto a = testserver::ReadResponse(fd, buf, 10000);
  auto b = testserver::ReadResponse(fd, buf, 10000);
  ASSERT_TRUE(a.ok() && b.ok());
  close(fd);
  DrainFor(*session, sink, 300);
  auto srv = sink.Of(server.pid(), JDW_ROLE_SERVER);
  std::string got;
  for (const auto& x : srv)
    got += " {seq " + std::to_string(x.ia.seq) + ", req " + std::to_string(x.ia.req_bytes) + " B, resp " +
           std::to_string(x.ia.resp_bytes) + " B, flags " + std::to_string(x.ia.flags) + "}";
  ASSERT_EQ(srv.size(), 2u) << "requests " << r1.size() << " and " << r2.size() << " B, responses "
                            << a->wire_bytes << " and " << b->wire_bytes << " B; interactions:" << got;
  std::sort(srv.begin(), srv.end(), [](auto& x, auto& y) { return x.ia.seq < y.ia.seq; });
  EXPECT_EQ(srv[0].ia.req_bytes, r1.size());
  EXPECT_EQ(srv[1].ia.req_bytes, r2.size());
  EXPECT_EQ(srv[0].ia.resp_bytes, a->wire_bytes);
  EXPECT_EQ(srv[1].ia.resp_bytes, b->wire_bytes);
  EXPECT_TRUE(srv[0].ia.flags & JDW_IA_PIPELINED);
  EXPECT_TRUE(srv[1].ia.flags & JDW_IA_PIPELINED);
}

// Requests on kept-alive connections of our own client, `n` of them.
void KeepAliveRequests(uint16_t port, int n) {
  const int fd = Connect(port);
  ASSERT_GE(fd, 0);
  std::string buf;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(testserver::WriteAll(fd, "GET /tiny HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n").ok());
    auto r = testserver::ReadResponse(fd, buf, 10000);
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  close(fd);
}

// Only the server is traced; its client (this test process) is not. The
// client's socket is left out at its first send and marked, so it never
// holds a slot in the connection table however much data it carries, while
// every request of the traced side is still reported exactly.
// The hooks see every socket of the machine, so the group's counters move
// with whatever else runs here (other tests, other servers); the client's
// own socket is checked by its mark, and "never re-entered" by how little
// FILTERED moves while it carries hundreds of requests (re-entering would
// add one per request).
TEST_F(InteractTest, UntracedPeerHoldsNoTableSlot) {
  Server server;
  ASSERT_TRUE(server.Start({"--keepalive", "--workers", "2"}).ok());
  auto session = OpenSession({server.pid()});
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok());
  bpf_map* skip = bpf_object__find_map_by_name(session->group_object(JDW_GROUP_INTERACT), "jdw_ia_skip");
  ASSERT_NE(skip, nullptr);
  Collect sink;
  const int fd = Connect(server.port);
  ASSERT_GE(fd, 0);
  const std::string req = "GET /tiny HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n";
  std::string buf;
  std::vector<uint64_t> wire;
  auto requests = [&](int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(testserver::WriteAll(fd, req).ok());
      auto r = testserver::ReadResponse(fd, buf, 10000);
      ASSERT_TRUE(r.ok()) << r.status().message();
      wire.push_back(r->wire_bytes);
    }
  };
  ASSERT_NO_FATAL_FAILURE(requests(20));
  // The client's socket carries the mark (socket storage, looked up by fd).
  uint8_t mark = 0;
  EXPECT_EQ(bpf_map_lookup_elem(bpf_map__fd(skip), &fd, &mark), 0) << "the client's socket is not marked";
  const int untouched = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(untouched, 0);
  EXPECT_NE(bpf_map_lookup_elem(bpf_map__fd(skip), &untouched, &mark), 0) << "a socket never used is marked";
  close(untouched);
  EXPECT_GE((*ctl)->ConnectionCount(), 1u) << "the server's socket is followed";
  const capture::InteractStats before = (*ctl)->ReadStats();
  EXPECT_GE(before.counters[JDW_IA_STAT_FILTERED], 1u) << "the client's socket is left out";
  constexpr int kMore = 200;
  ASSERT_NO_FATAL_FAILURE(requests(kMore));
  const capture::InteractStats after = (*ctl)->ReadStats();
  EXPECT_LT(after.counters[JDW_IA_STAT_FILTERED] - before.counters[JDW_IA_STAT_FILTERED], uint64_t{kMore / 2})
      << "the client's socket re-entered the table";
  close(fd);
  DrainFor(*session, sink, 300);
  auto srv = sink.Of(server.pid(), JDW_ROLE_SERVER);
  ASSERT_EQ(srv.size(), 20u + kMore);
  EXPECT_TRUE(sink.Of(static_cast<uint32_t>(getpid()), JDW_ROLE_CLIENT).empty());
  std::sort(srv.begin(), srv.end(), [](auto& x, auto& y) { return x.ia.seq < y.ia.seq; });
  for (size_t i = 0; i < srv.size(); ++i) {
    EXPECT_EQ(srv[i].ia.seq, i);
    EXPECT_EQ(srv[i].ia.req_bytes, req.size());
    EXPECT_EQ(srv[i].ia.resp_bytes, wire[i]);
    EXPECT_EQ(srv[i].ia.flags & ~JDW_IA_CLOSED, 0);
  }
}

uint64_t ServerCount(const std::vector<capture::InteractClassRow>& rows, uint16_t port) {
  uint64_t n = 0;
  for (const auto& r : rows)
    if (r.key.role == JDW_ROLE_SERVER && r.key.port == port) n += r.stats.count;
  return n;
}

TEST_F(InteractTest, GranularitySwitchesAtRuntime) {
  Server server;
  ASSERT_TRUE(server.Start({"--keepalive", "--workers", "2"}).ok());
  auto session = OpenSession({server.pid()});
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok()) << ctl.status().message();
  Collect sink;

  KeepAliveRequests(server.port, 20);
  DrainFor(*session, sink, 200);
  EXPECT_EQ(sink.Of(server.pid(), JDW_ROLE_SERVER).size(), 20u);

  capture::InteractGranularity g;
  g.records = false;
  g.classes = true;
  ASSERT_TRUE((*ctl)->SetGranularity(g).ok());
  ASSERT_TRUE((*ctl)->TakeWindow().ok());  // open a fresh window
  KeepAliveRequests(server.port, 30);
  DrainFor(*session, sink, 200);
  auto w1 = (*ctl)->TakeWindow();
  ASSERT_TRUE(w1.ok());
  EXPECT_EQ(ServerCount(*w1, server.port), 30u) << "classes counted from the first window";
  EXPECT_EQ(sink.Of(server.pid(), JDW_ROLE_SERVER).size(), 20u) << "no records after the switch";
  for (const auto& r : *w1) {
    if (r.key.port != server.port) continue;
    EXPECT_EQ(r.key.tgid, server.pid());
    EXPECT_GT(r.stats.total_ns, 0u);
    uint64_t h = 0;
    for (uint32_t c : r.stats.hist) h += c;
    EXPECT_EQ(h, r.stats.count);
  }

  g.records = true;
  g.classes = false;
  ASSERT_TRUE((*ctl)->SetGranularity(g).ok());
  KeepAliveRequests(server.port, 10);
  DrainFor(*session, sink, 200);
  EXPECT_EQ(sink.Of(server.pid(), JDW_ROLE_SERVER).size(), 30u);
  auto w2 = (*ctl)->TakeWindow();
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ(ServerCount(*w2, server.port), 0u);
}

}  // namespace
}  // namespace jackdaw
