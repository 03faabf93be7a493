// A connection's role in the interact group comes from how it was opened
// (passive: accepted, the server; active: connected, the client), not from
// the direction of its first message, which a server that speaks first
// (MySQL/MariaDB's handshake, SMTP/FTP/POP3/IMAP banners, SSH's version)
// gets backwards. Loopback peers inside the test process: a server-first
// protocol opened while traced, and connections opened before the session
// (no open to see: the role falls back to the first message, flagged
// partial).
#include "interact/interact_support.h"

namespace jackdaw {
namespace {

using namespace interact_testing;

bool WriteAll(int fd, const std::string& s) {
  return write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
}

// Reads exactly n bytes (loopback may still split them).
bool ReadExactly(int fd, size_t n) {
  char buf[4096];
  while (n > 0) {
    const ssize_t r = read(fd, buf, std::min(n, sizeof(buf)));
    if (r <= 0) return false;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// A server-first protocol in the manner of SMTP or MySQL: the server
// greets on accept, the client answers the greeting (a login), then
// request/response rounds, then a one-way goodbye after which the server
// closes.
const std::string kGreeting = "220 jackdaw ready\r\n";
const std::string kLogin = "AUTH me\r\n";
const std::string kLoginOk = "235 ok\r\n";
const std::string kQuit = "QUIT\r\n";
size_t RequestSize(int i) { return 10 + i; }
size_t ResponseSize(int i) { return 200 + 10 * i; }

bool GreetAndLogin(int c, int s) {
  return WriteAll(s, kGreeting) && ReadExactly(c, kGreeting.size()) && WriteAll(c, kLogin) &&
         ReadExactly(s, kLogin.size()) && WriteAll(s, kLoginOk) && ReadExactly(c, kLoginOk.size());
}

bool Round(int c, int s, int i) {
  return WriteAll(c, std::string(RequestSize(i), 'q')) && ReadExactly(s, RequestSize(i)) &&
         WriteAll(s, std::string(ResponseSize(i), 'r')) && ReadExactly(c, ResponseSize(i));
}

// The goodbye: the server reads it and closes; the client sees the end of
// file and closes too.
bool QuitAndClose(TcpPair& p) {
  char buf[8];
  if (!WriteAll(p.client, kQuit) || !ReadExactly(p.server, kQuit.size())) return false;
  close(p.server);
  p.server = -1;
  const bool eof = read(p.client, buf, sizeof(buf)) == 0;
  p.Close();
  return eof;
}

void ExpectOrdered(const jdw_interaction& ia) {
  EXPECT_LE(ia.req_start, ia.req_end);
  EXPECT_LE(ia.req_end, ia.resp_start);
  EXPECT_LE(ia.resp_start, ia.resp_end);
}

// Interactions of one side of connections to `port`, by seq.
std::vector<Interaction> Side(const Collect& sink, uint32_t tgid, uint8_t role, uint16_t port) {
  std::vector<Interaction> out;
  for (const auto& x : sink.Of(tgid, role))
    if ((role == JDW_ROLE_SERVER ? x.ia.lport : x.ia.rport) == port) out.push_back(x);
  std::sort(out.begin(), out.end(), [](const Interaction& a, const Interaction& b) { return a.ia.seq < b.ia.seq; });
  return out;
}

uint64_t Stat(capture::InteractControl& ctl, uint32_t id) { return ctl.ReadStats().counters[id]; }

// Opened while traced: the accepted end is the server although its first
// message is outbound (the greeting), the connecting end the client
// although its first is inbound. The greeting and the login that answers
// it are the connection's set-up, as in the join; the goodbye, unanswered,
// is the connection's too. What remains is one interaction per round on
// each side, with exact bytes.
TEST_F(InteractTest, ServerFirstProtocolTakesItsRoleFromTheOpen) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me});
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok()) << ctl.status().message();
  const uint64_t setup0 = Stat(**ctl, JDW_IA_STAT_SETUP), one_way0 = Stat(**ctl, JDW_IA_STAT_ONE_WAY);
  Collect sink;
  TcpPair pair = OpenTcpPair();
  ASSERT_TRUE(pair.ok());
  const uint16_t port = pair.port;
  constexpr int kRounds = 5;
  ASSERT_TRUE(GreetAndLogin(pair.client, pair.server));
  for (int i = 0; i < kRounds; ++i) ASSERT_TRUE(Round(pair.client, pair.server, i));
  ASSERT_TRUE(QuitAndClose(pair));
  DrainFor(*session, sink, 300);

  for (uint8_t role : {JDW_ROLE_SERVER, JDW_ROLE_CLIENT}) {
    SCOPED_TRACE(role == JDW_ROLE_SERVER ? "server side" : "client side");
    auto v = Side(sink, me, role, port);
    ASSERT_EQ(v.size(), size_t(kRounds)) << "one interaction per round; no greeting, login or goodbye";
    for (int i = 0; i < kRounds; ++i) {
      const jdw_interaction& ia = v[i].ia;
      EXPECT_EQ(ia.seq, uint32_t(i));
      EXPECT_EQ(ia.req_bytes, RequestSize(i)) << "round " << i;
      EXPECT_EQ(ia.resp_bytes, ResponseSize(i)) << "round " << i;
      EXPECT_EQ(ia.req_packets, 1u);
      EXPECT_EQ(ia.resp_packets, 1u);
      EXPECT_EQ(ia.flags, 0) << "round " << i << ": seen from the open, completed by the next request";
      ExpectOrdered(ia);
    }
  }
  EXPECT_TRUE(sink.Of(me, JDW_ROLE_SERVER).size() == size_t(kRounds) &&
              sink.Of(me, JDW_ROLE_CLIENT).size() == size_t(kRounds))
      << "nothing of ours with the wrong role";
  EXPECT_EQ(Stat(**ctl, JDW_IA_STAT_SETUP) - setup0, 2u) << "the login, answering the greeting, on each side";
  EXPECT_EQ(Stat(**ctl, JDW_IA_STAT_ONE_WAY) - one_way0, 2u) << "the goodbye, on each side";
  ExpectNoLosses(*session);
}

// A client-first connection opened while traced keeps its interactions:
// the first request is one (nothing answers a greeting), and a request
// per connection closed by the server is reported, flagged closed.
TEST_F(InteractTest, ClientFirstConnectionsAreUnchanged) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me});
  ASSERT_TRUE(session);
  Collect sink;
  uint16_t port = 0;
  const int l = Listen(&port);
  ASSERT_GE(l, 0);
  // Keep-alive: three requests on one connection.
  int c = Connect(port), s = accept(l, nullptr, nullptr);
  ASSERT_TRUE(c >= 0 && s >= 0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Round(c, s, i));
  close(s);
  close(c);
  // Connection per request: the server answers and closes first.
  for (int i = 0; i < 3; ++i) {
    c = Connect(port);
    s = accept(l, nullptr, nullptr);
    ASSERT_TRUE(c >= 0 && s >= 0);
    ASSERT_TRUE(Round(c, s, i));
    close(s);
    close(c);
  }
  close(l);
  DrainFor(*session, sink, 300);
  for (uint8_t role : {JDW_ROLE_SERVER, JDW_ROLE_CLIENT}) {
    SCOPED_TRACE(role == JDW_ROLE_SERVER ? "server side" : "client side");
    auto v = Side(sink, me, role, port);
    ASSERT_EQ(v.size(), 6u);
    std::map<uint32_t, int> by_seq;
    for (const auto& x : v) {
      ++by_seq[x.ia.seq];
      EXPECT_EQ(x.ia.flags & ~JDW_IA_CLOSED, 0);
      ExpectOrdered(x.ia);
    }
    EXPECT_EQ(by_seq[0], 4) << "the keep-alive connection's first and three single requests";
    EXPECT_EQ(by_seq[1], 1);
    EXPECT_EQ(by_seq[2], 1);
  }
}

// Connections opened before the session have no open to see: the role is
// the first message's direction (SysProf's rule), and the first
// interaction is flagged partial. Right for a client-first exchange; for a
// server-first protocol whose greeting and login went before the session,
// the first message seen is a request, so right too.
TEST_F(InteractTest, ConnectionsOpenedBeforeTheSessionFallBackToTheFirstMessage) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  TcpPair plain = OpenTcpPair(), greeted = OpenTcpPair();
  ASSERT_TRUE(plain.ok() && greeted.ok());
  ASSERT_TRUE(Round(plain.client, plain.server, 0));
  ASSERT_TRUE(GreetAndLogin(greeted.client, greeted.server));

  auto session = OpenSession({me});
  ASSERT_TRUE(session);
  auto ctl = capture::InteractControl::Attach(*session);
  ASSERT_TRUE(ctl.ok()) << ctl.status().message();
  Collect sink;
  constexpr int kRounds = 3;
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(Round(plain.client, plain.server, i));
    ASSERT_TRUE(Round(greeted.client, greeted.server, i));
  }
  const uint16_t plain_port = plain.port, greeted_port = greeted.port;
  plain.Close();  // the client end first: each side's last is closed
  ASSERT_TRUE(QuitAndClose(greeted));
  DrainFor(*session, sink, 300);

  for (uint16_t port : {plain_port, greeted_port}) {
    for (uint8_t role : {JDW_ROLE_SERVER, JDW_ROLE_CLIENT}) {
      SCOPED_TRACE(std::string(port == plain_port ? "client-first" : "server-first") +
                   (role == JDW_ROLE_SERVER ? ", server side" : ", client side"));
      auto v = Side(sink, me, role, port);
      ASSERT_EQ(v.size(), size_t(kRounds));
      for (int i = 0; i < kRounds; ++i) {
        const jdw_interaction& ia = v[i].ia;
        EXPECT_EQ(ia.seq, uint32_t(i));
        EXPECT_EQ(ia.req_bytes, RequestSize(i));
        EXPECT_EQ(ia.resp_bytes, ResponseSize(i));
        uint8_t want = i == 0 ? JDW_IA_PARTIAL : 0;
        if (port == plain_port && i == kRounds - 1) want |= JDW_IA_CLOSED;
        EXPECT_EQ(ia.flags, want) << "round " << i;
      }
    }
  }
  EXPECT_EQ(sink.Of(me, JDW_ROLE_SERVER).size() + sink.Of(me, JDW_ROLE_CLIENT).size(), size_t(4 * kRounds));
  EXPECT_EQ(Stat(**ctl, JDW_IA_STAT_ROLE_GUESSED), 4u) << "both ends of both connections, once each";
}

}  // namespace
}  // namespace jackdaw
