// Shared by the interact group's integration tests: a sink that keeps the
// interaction records, a session with only that group, the fixture, and
// loopback TCP/UDP peers inside the test process.
#pragma once

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

namespace jackdaw::interact_testing {

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
inline std::unique_ptr<capture::CaptureSession> OpenSession(const std::vector<uint32_t>& tgids,
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

inline void DrainFor(capture::CaptureSession& s, Collect& sink, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  do {
    auto n = s.Poll(sink, 20);
    ASSERT_TRUE(n.ok()) << n.status().message();
  } while (std::chrono::steady_clock::now() < end);
}

inline void ExpectNoLosses(capture::CaptureSession& s) {
  auto ctl = capture::InteractControl::Attach(s);
  ASSERT_TRUE(ctl.ok()) << ctl.status().message();
  const capture::InteractStats st = (*ctl)->ReadStats();
  EXPECT_EQ(st.ring_lost, 0u);
  EXPECT_EQ(st.counters[JDW_IA_STAT_RING_LOST], 0u);
  EXPECT_EQ(st.counters[JDW_IA_STAT_CONNS_FULL], 0u);
}

class InteractTest : public ::testing::Test {
 protected:
  void SetUp() override { JDW_REQUIRE_ROOT(); }
};

inline int Connect(uint16_t port) { return testserver::testing::ConnectLoopback(port); }

// Loopback server and client in this process.
inline int Listen(uint16_t* port) {
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

// One loopback TCP connection inside this process: the listener, the
// client end and the accepted server end (all -1 when something failed).
struct TcpPair {
  int listener = -1, client = -1, server = -1;
  uint16_t port = 0;
  bool ok() const { return listener >= 0 && client >= 0 && server >= 0; }
  void Close() {
    for (int fd : {client, server, listener})
      if (fd >= 0) close(fd);
    client = server = listener = -1;
  }
};

inline TcpPair OpenTcpPair() {
  TcpPair p;
  p.listener = Listen(&p.port);
  if (p.listener < 0) return p;
  p.client = Connect(p.port);
  if (p.client >= 0) p.server = accept(p.listener, nullptr, nullptr);
  return p;
}

inline bool Exchange(int cfd, int sfd) {
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

inline bool ConnectUdpPair(UdpPair* p) {
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
inline void ExpectUdpExchange(const Interaction& x) {
  EXPECT_EQ(x.ia.protocol, 17);
  EXPECT_EQ(x.ia.req_bytes, 4u);
  EXPECT_EQ(x.ia.resp_bytes, 5u);
  EXPECT_EQ(x.ia.req_packets, 1u);
  EXPECT_EQ(x.ia.resp_packets, 1u);
}

}  // namespace jackdaw::interact_testing
