// The interact probe group on the real kernel: jackdaw-testserver under
// jackdaw-load (and small clients written here) on loopback, with the
// in-kernel interaction records checked against the load driver's ground
// truth: one interaction per request, exact bytes, right roles, and times
// nested inside the driver's own (same clock: CLOCK_MONOTONIC).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "capture/interact.h"
#include "capture/session.h"
#include "support/test_support.h"
#include "testserver/http.h"
#include "testserver/request_types.h"
#include "testserver/test_support.h"

namespace jackdaw {
namespace {

using testserver::testing::Child;

struct Interaction {
  jdw_record_header hdr;
  jdw_interaction ia;
};

class Collect : public capture::RecordSink {
 public:
  void OnRecord(uint32_t, const uint8_t* data, size_t size) override {
    jdw_record_header h;
    if (size < sizeof(h)) return;
    memcpy(&h, data, sizeof(h));
    if (h.type != JDW_EVENT_INTERACTION || size < sizeof(jdw_interaction_record)) {
      ++other;
      return;
    }
    Interaction x;
    x.hdr = h;
    memcpy(&x.ia, data + sizeof(h), sizeof(x.ia));
    all.push_back(x);
  }
  std::vector<Interaction> Of(uint32_t tgid, uint8_t role) const {
    std::vector<Interaction> out;
    for (const auto& x : all)
      if (x.hdr.tgid == tgid && x.ia.role == role) out.push_back(x);
    return out;
  }
  std::vector<Interaction> all;
  uint64_t other = 0;
};

// A session with only the interact group, filtered to `tgids`.
std::unique_ptr<capture::CaptureSession> OpenSession(const std::vector<uint32_t>& tgids,
                                                     uint32_t max_conns = 32768) {
  capture::CaptureOptions o;
  o.groups = 1u << JDW_GROUP_INTERACT;
  o.filter_tgid = true;
  o.tgids = tgids;
  o.ring_bytes_per_cpu = 4u << 20;
  o.interact_max_conns = max_conns;
  auto s = capture::CaptureSession::Create(o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return nullptr;
  Status st = (*s)->Enable(JDW_GROUP_INTERACT);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return nullptr;
  return std::move(*s);
}

void DrainFor(capture::CaptureSession& s, Collect& sink, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  do {
    auto n = s.Poll(sink, 20);
    ASSERT_TRUE(n.ok()) << n.status().message();
  } while (std::chrono::steady_clock::now() < end);
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

void ExpectNoLosses(capture::CaptureSession& s) {
  auto ctl = capture::InteractControl::Attach(s);
  ASSERT_TRUE(ctl.ok()) << ctl.status().message();
  const capture::InteractStats st = (*ctl)->ReadStats();
  EXPECT_EQ(st.ring_lost, 0u);
  EXPECT_EQ(st.counters[JDW_IA_STAT_RING_LOST], 0u);
  EXPECT_EQ(st.counters[JDW_IA_STAT_CONNS_FULL], 0u);
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

class InteractTest : public ::testing::Test {
 protected:
  void SetUp() override { JDW_REQUIRE_ROOT(); }
};

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

int Connect(uint16_t port) { return testserver::testing::ConnectLoopback(port); }

// Two requests written back to back on one kept-alive connection, the second
// while the server is still busy with the first: the kernel sees request
// bytes waiting when the first response begins. Each request still gets its
// own interaction with its own bytes, and both are flagged pipelined.
TEST_F(InteractTest, PipelinedRequestsAreSplitAndFlagged) {
  Server server;
  // Full-length spins (about 15 ms): r2 arrives while the worker spins on r1.
  ASSERT_TRUE(server.Start({"--keepalive", "--workers", "2", "--iters-per-ms", "1000000"}).ok());
  auto session = OpenSession({server.pid()});
  ASSERT_TRUE(session);
  Collect sink;
  const int fd = Connect(server.port);
  ASSERT_GE(fd, 0);
  const std::string r1 = "GET /shortspin HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n";
  const std::string r2 = "GET /tiny HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n";
  ASSERT_TRUE(testserver::WriteAll(fd, r1).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the server is reading r1 and spinning
  ASSERT_TRUE(testserver::WriteAll(fd, r2).ok());
  std::string buf;
  auto a = testserver::ReadResponse(fd, buf, 10000);
  auto b = testserver::ReadResponse(fd, buf, 10000);
  ASSERT_TRUE(a.ok() && b.ok());
  close(fd);
  DrainFor(*session, sink, 300);
  auto srv = sink.Of(server.pid(), JDW_ROLE_SERVER);
  ASSERT_EQ(srv.size(), 2u);
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
TEST_F(InteractTest, UntracedPeerHoldsNoTableSlot) {
  Server server;
  ASSERT_TRUE(server.Start({"--keepalive", "--workers", "2"}).ok());
  auto session = OpenSession({server.pid()});
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok());
  Collect sink;
  const int fd = Connect(server.port);
  ASSERT_GE(fd, 0);
  const std::string req = "GET /tiny HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\n";
  std::string buf;
  std::vector<uint64_t> wire;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(testserver::WriteAll(fd, req).ok());
    auto r = testserver::ReadResponse(fd, buf, 10000);
    ASSERT_TRUE(r.ok()) << r.status().message();
    wire.push_back(r->wire_bytes);
  }
  // Connection still open: the server's socket alone is in the table.
  EXPECT_EQ((*ctl)->ConnectionCount(), 1u);
  capture::InteractStats st = (*ctl)->ReadStats();
  EXPECT_EQ(st.counters[JDW_IA_STAT_FILTERED], 1u) << "the client's socket is left out once";
  EXPECT_EQ(st.counters[JDW_IA_STAT_CONNS], 2u) << "and never re-entered";
  close(fd);
  DrainFor(*session, sink, 300);
  auto srv = sink.Of(server.pid(), JDW_ROLE_SERVER);
  ASSERT_EQ(srv.size(), 20u);
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

// Loopback server and client in this process.
int Listen(uint16_t* port) {
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(l, 1024) != 0) return -1;
  socklen_t len = sizeof(a);
  getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return l;
}

bool Exchange(int cfd, int sfd) {
  char buf[8];
  return write(cfd, "ping", 4) == 4 && read(sfd, buf, sizeof(buf)) == 4 && write(sfd, "pong!", 5) == 5 &&
         read(cfd, buf, sizeof(buf)) == 5;
}

// Two loopback UDP sockets connect()ed to each other: on each side one
// socket pairs requests and responses, as the interact group's UDP rule needs.
struct UdpPair {
  int server = -1, client = -1;
  sockaddr_in server_addr{}, client_addr{};
};

bool ConnectUdpPair(UdpPair* p) {
  p->server = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  p->client = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (p->server < 0 || p->client < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(p->server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      bind(p->client, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
    return false;
  socklen_t len = sizeof(p->server_addr);
  getsockname(p->server, reinterpret_cast<sockaddr*>(&p->server_addr), &len);
  len = sizeof(p->client_addr);
  getsockname(p->client, reinterpret_cast<sockaddr*>(&p->client_addr), &len);
  return connect(p->client, reinterpret_cast<sockaddr*>(&p->server_addr), sizeof(p->server_addr)) == 0 &&
         connect(p->server, reinterpret_cast<sockaddr*>(&p->client_addr), sizeof(p->client_addr)) == 0;
}

// One Exchange() over UDP: a 4-byte request and a 5-byte response, a
// datagram each.
void ExpectUdpExchange(const Interaction& x) {
  EXPECT_EQ(x.ia.protocol, 17);
  EXPECT_EQ(x.ia.req_bytes, 4u);
  EXPECT_EQ(x.ia.resp_bytes, 5u);
  EXPECT_EQ(x.ia.req_packets, 1u);
  EXPECT_EQ(x.ia.resp_packets, 1u);
}

// The serving thread's time between reading a request and answering it,
// split by the scheduler hooks: it sleeps 20 ms (blocked, off CPU) and then
// spins 5 ms (on CPU). Without the scheduler hooks following the thread,
// all of it would count as on-CPU time.
TEST_F(InteractTest, ServingThreadTimeIsSplitByState) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me});
  ASSERT_TRUE(session);
  Collect sink;
  uint16_t port = 0;
  const int l = Listen(&port);
  ASSERT_GE(l, 0);
  const int c = Connect(port);
  const int s = accept(l, nullptr, nullptr);
  ASSERT_TRUE(c >= 0 && s >= 0);
  char buf[8];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(write(c, "ping", 4), 4);
    ASSERT_EQ(read(s, buf, sizeof(buf)), 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto spin_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    while (std::chrono::steady_clock::now() < spin_end) {
    }
    ASSERT_EQ(write(s, "pong!", 5), 5);
    ASSERT_EQ(read(c, buf, sizeof(buf)), 5);
  }
  close(c);
  close(s);
  close(l);
  DrainFor(*session, sink, 200);
  auto srv = sink.Of(me, JDW_ROLE_SERVER);
  ASSERT_EQ(srv.size(), 3u);
  for (const auto& x : srv) {
    const jdw_interaction& ia = x.ia;
    EXPECT_GE(ia.blocked_ns, 19'000'000u) << "the 20 ms sleep is blocked time";
    EXPECT_GE(ia.oncpu_ns + ia.runq_ns, 4'000'000u) << "the 5 ms spin is on CPU (or waiting for it)";
    EXPECT_LT(ia.oncpu_ns, 20'000'000u) << "the sleep is not on-CPU time";
    EXPECT_LE(ia.oncpu_ns + ia.runq_ns + ia.blocked_ns, ia.resp_start - ia.in_read + 1000);
  }
}

// A table far smaller than the connections held open: the kernel counts the
// ones it cannot follow, the idle sweep evicts and counts, and every record
// emitted stays exact; then thousands of short connections through the same
// small table are each reported once.
TEST_F(InteractTest, SmallTableEvictsAndCountsNeverCorrupts) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me}, 64);
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok());
  Collect sink;
  uint16_t port = 0;
  const int l = Listen(&port);
  ASSERT_GE(l, 0);

  std::vector<std::pair<int, int>> held;
  for (int i = 0; i < 200; ++i) {
    int c = Connect(port);
    int s = accept(l, nullptr, nullptr);
    ASSERT_TRUE(c >= 0 && s >= 0);
    ASSERT_TRUE(Exchange(c, s));
    held.push_back({c, s});
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto evicted = (*ctl)->EvictIdle(20'000'000);
  ASSERT_TRUE(evicted.ok());
  EXPECT_GT(*evicted, 0u);
  for (auto [c, s] : held) {
    ASSERT_TRUE(Exchange(c, s));  // back in the table, mid-stream
    close(c);
    close(s);
  }
  DrainFor(*session, sink, 200);
  capture::InteractStats st = (*ctl)->ReadStats();
  EXPECT_GT(st.counters[JDW_IA_STAT_CONNS_FULL], 0u) << "400 sockets, 64 slots";
  EXPECT_EQ(st.evicted, *evicted);
  for (const auto& x : sink.all) {
    EXPECT_EQ(x.hdr.tgid, me);
    EXPECT_EQ(x.ia.req_bytes, 4u);
    EXPECT_EQ(x.ia.resp_bytes, 5u);
    EXPECT_TRUE(x.ia.role == JDW_ROLE_SERVER ? x.ia.lport == port : x.ia.rport == port);
  }
  EXPECT_GT(sink.all.size(), 0u);
  ctl->reset();
  session.reset();

  // Sockets of every process enter the table at their first arrival (the
  // owner is known only at the first read or write), so other processes'
  // loopback traffic shares it: 512 slots for 4000 sockets.
  session = OpenSession({me}, 512);
  ASSERT_TRUE(session);
  sink.all.clear();
  const size_t first_round = 0;
  constexpr int kShort = 2000;
  for (int i = 0; i < kShort; ++i) {
    int c = Connect(port);
    int s = accept(l, nullptr, nullptr);
    ASSERT_TRUE(c >= 0 && s >= 0);
    ASSERT_TRUE(Exchange(c, s));
    close(c);
    close(s);
    if (i % 200 == 0) {
      ASSERT_TRUE(session->Drain(sink).ok());
    }
  }
  close(l);
  DrainFor(*session, sink, 300);
  size_t srv = 0, cli = 0;
  std::set<std::pair<uint16_t, uint8_t>> seen;
  for (size_t i = first_round; i < sink.all.size(); ++i) {
    const auto& x = sink.all[i];
    EXPECT_EQ(x.ia.req_bytes, 4u);
    EXPECT_EQ(x.ia.resp_bytes, 5u);
    EXPECT_EQ(x.ia.flags & ~JDW_IA_CLOSED, 0);
    EXPECT_EQ(x.ia.seq, 0u);
    (x.ia.role == JDW_ROLE_SERVER ? srv : cli) += 1;
  }
  EXPECT_EQ(srv, size_t(kShort));
  EXPECT_EQ(cli, size_t(kShort));
  ExpectNoLosses(*session);
}

// UDP where one socket pairs request and response: both ends connect()ed,
// ten request/response rounds. While the sockets live, an interaction
// completes when the next request begins: nine per side. Closing them
// (the socket-release hook) completes the tenth, flagged CLOSED, and frees
// their table entries without waiting for the idle sweep.
TEST_F(InteractTest, ConnectedUdpPairsRequestAndResponse) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me});
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok());
  Collect sink;
  UdpPair udp;
  ASSERT_TRUE(ConnectUdpPair(&udp));
  const int s = udp.server, c = udp.client;
  const sockaddr_in& sa = udp.server_addr;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Exchange(c, s));
  DrainFor(*session, sink, 200);
  ASSERT_EQ(sink.Of(me, JDW_ROLE_SERVER).size(), 9u);
  ASSERT_EQ(sink.Of(me, JDW_ROLE_CLIENT).size(), 9u);
  const uint64_t closed_before = (*ctl)->ReadStats().counters[JDW_IA_STAT_CLOSED];
  close(c);
  close(s);
  DrainFor(*session, sink, 200);
  auto srv = sink.Of(me, JDW_ROLE_SERVER), cli = sink.Of(me, JDW_ROLE_CLIENT);
  ASSERT_EQ(srv.size(), 10u) << "closing the socket completes its last interaction";
  ASSERT_EQ(cli.size(), 10u) << "closing the socket completes its last interaction";
  for (const auto* v : {&srv, &cli}) {
    for (const auto& x : *v) {
      EXPECT_EQ(x.ia.flags, x.ia.seq == 9 ? JDW_IA_CLOSED : 0) << "seq " << x.ia.seq;
      ExpectUdpExchange(x);
      EXPECT_EQ(x.ia.role == JDW_ROLE_SERVER ? x.ia.lport : x.ia.rport, ntohs(sa.sin_port));
    }
  }
  EXPECT_EQ((*ctl)->ReadStats().counters[JDW_IA_STAT_CLOSED] - closed_before, 2u)
      << "both sockets' entries freed at close";
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto evicted = (*ctl)->EvictIdle(10'000'000);
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(*evicted, 0u) << "nothing of the closed sockets is left for the idle sweep";
}

// Thousands of short connections folded into classes instead of records:
// the class sums count every one, with exact bytes, through a table far
// smaller than the sockets that pass through it.
TEST_F(InteractTest, ShortConnectionsInClassModeSumExactly) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me}, 512);
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok());
  capture::InteractGranularity g;
  g.records = false;
  g.classes = true;
  ASSERT_TRUE((*ctl)->SetGranularity(g).ok());
  Collect sink;
  uint16_t port = 0;
  const int l = Listen(&port);
  ASSERT_GE(l, 0);
  constexpr int kShort = 2000;
  std::vector<capture::InteractClassRow> rows;
  for (int i = 0; i < kShort; ++i) {
    int c = Connect(port);
    int s = accept(l, nullptr, nullptr);
    ASSERT_TRUE(c >= 0 && s >= 0);
    ASSERT_TRUE(Exchange(c, s));
    close(c);
    close(s);
    if (i % 500 == 499) {  // windows close while connections come and go
      auto w = (*ctl)->TakeWindow();
      ASSERT_TRUE(w.ok());
      rows.insert(rows.end(), w->begin(), w->end());
    }
  }
  close(l);
  DrainFor(*session, sink, 200);
  auto w = (*ctl)->TakeWindow();
  ASSERT_TRUE(w.ok());
  rows.insert(rows.end(), w->begin(), w->end());
  auto w2 = (*ctl)->TakeWindow();  // an update racing the last flip lands here
  ASSERT_TRUE(w2.ok());
  rows.insert(rows.end(), w2->begin(), w2->end());
  EXPECT_TRUE(sink.all.empty()) << "class mode ships no records";
  jdw_ia_class_stats srv{}, cli{};
  for (const auto& r : rows) {
    if (r.key.tgid != me || r.key.port != port) continue;
    jdw_ia_class_stats& t = r.key.role == JDW_ROLE_SERVER ? srv : cli;
    t.count += r.stats.count;
    t.req_bytes += r.stats.req_bytes;
    t.resp_bytes += r.stats.resp_bytes;
    t.flagged += r.stats.flagged;
    uint64_t hist = 0;
    for (uint32_t h : r.stats.hist) hist += h;
    EXPECT_EQ(hist, r.stats.count) << "every interaction in the latency histogram once";
  }
  for (const jdw_ia_class_stats* t : {&srv, &cli}) {
    EXPECT_EQ(t->count, uint64_t(kShort));
    EXPECT_EQ(t->req_bytes, 4u * kShort);
    EXPECT_EQ(t->resp_bytes, 5u * kShort);
    EXPECT_EQ(t->flagged, 0u);
  }
  const capture::InteractStats st = (*ctl)->ReadStats();
  EXPECT_EQ(st.counters[JDW_IA_STAT_CLASS_FULL], 0u);
  EXPECT_EQ(st.counters[JDW_IA_STAT_CONNS_FULL], 0u);
}

// Thousands of short-lived connected UDP socket pairs through a 64-slot
// table. Each pair makes two exchanges: the second request completes the
// first interaction, closing the sockets completes the second (CLOSED) and
// frees their entries, so the kernel reusing their addresses for new
// sockets finds nothing to inherit (a stale entry would be replaced,
// counted as REUSED). Every record must be exact and belong to a pair we
// made; whatever is not reported is counted.
TEST_F(InteractTest, ShortUdpSocketsEvictAndCountNeverCorrupt) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me}, 64);
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok());
  Collect sink;
  constexpr int kPairs = 2000;
  std::map<std::pair<uint16_t, uint16_t>, int> made;  // (server port, client port) -> times
  uint64_t evicted = 0;
  for (int i = 0; i < kPairs; ++i) {
    UdpPair udp;
    ASSERT_TRUE(ConnectUdpPair(&udp));
    const int s = udp.server, c = udp.client;
    const sockaddr_in &sa = udp.server_addr, &ca = udp.client_addr;
    // Two rounds: the second request completes the first interaction.
    ASSERT_TRUE(Exchange(c, s));
    ASSERT_TRUE(Exchange(c, s));
    ++made[{ntohs(sa.sin_port), ntohs(ca.sin_port)}];
    close(c);
    close(s);
    if (i % 16 == 15) {
      ASSERT_TRUE(session->Drain(sink).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      auto n = (*ctl)->EvictIdle(1'000'000);
      ASSERT_TRUE(n.ok());
      evicted += *n;
    }
  }
  DrainFor(*session, sink, 200);
  std::map<std::pair<uint16_t, uint16_t>, int> srv_seen, cli_seen;
  for (const auto& x : sink.all) {
    ASSERT_EQ(x.hdr.tgid, me);
    ExpectUdpExchange(x);
    EXPECT_LE(x.ia.seq, 1u);
    EXPECT_EQ(x.ia.flags, x.ia.seq == 1 ? JDW_IA_CLOSED : 0) << "flags " << int(x.ia.flags);
    const bool server = x.ia.role == JDW_ROLE_SERVER;
    const std::pair<uint16_t, uint16_t> pair = server ? std::make_pair(x.ia.lport, x.ia.rport)
                                                      : std::make_pair(x.ia.rport, x.ia.lport);
    ASSERT_TRUE(made.count(pair)) << "a record for ports we never paired: " << pair.first << "/" << pair.second;
    EXPECT_LE(++(server ? srv_seen : cli_seen)[pair], 2 * made[pair]) << "two interactions per pair and side";
  }
  const capture::InteractStats st = (*ctl)->ReadStats();
  uint64_t srv = 0, cli = 0;
  for (auto& [p, n] : srv_seen) srv += n;
  for (auto& [p, n] : cli_seen) cli += n;
  printf("UDP: %llu/%d server and %llu/%d client interactions; %llu evicted idle, %llu replaced stale, "
         "%llu not tracked (table full)\n",
         static_cast<unsigned long long>(srv), 2 * kPairs, static_cast<unsigned long long>(cli), 2 * kPairs,
         static_cast<unsigned long long>(evicted), static_cast<unsigned long long>(st.counters[JDW_IA_STAT_REUSED]),
         static_cast<unsigned long long>(st.counters[JDW_IA_STAT_CONNS_FULL]));
  // An interaction is missing only where its socket could not be followed,
  // and that is counted.
  EXPECT_GE(srv + 2 * st.counters[JDW_IA_STAT_CONNS_FULL], uint64_t(2 * kPairs));
  EXPECT_GE(cli + 2 * st.counters[JDW_IA_STAT_CONNS_FULL], uint64_t(2 * kPairs));
  EXPECT_GE(st.counters[JDW_IA_STAT_CLOSED] + evicted + st.counters[JDW_IA_STAT_REUSED], uint64_t(2 * kPairs))
      << "the closed sockets' entries went somewhere";
  EXPECT_EQ(st.ring_lost, 0u);
}

}  // namespace
}  // namespace jackdaw
