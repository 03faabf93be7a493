// The interact group on the real kernel against loopback peers inside the
// test process (TCP and connected UDP): how the serving thread's time is
// split, eviction and its counters under many short connections, UDP
// request/response pairing, and class-mode sums.
#include "interact/interact_support.h"

#include <sched.h>

#include <thread>

namespace jackdaw {
namespace {

using namespace interact_testing;

// The serving thread's time between reading a request and answering it,
// split by state: it sleeps 20 ms (blocked, off CPU) and then spins 5 ms (on
// CPU). The split comes from the scheduler's own per-task counters read at
// the thread's reads and writes; were the on-CPU clock wrong about the
// time off CPU, all of it would count as on-CPU time. With `migrate`, the
// thread moves to another CPU while it sleeps, so the two reads of the
// counters are on different CPUs' run queues.
void ExpectServingTimeSplit(bool migrate) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me});
  ASSERT_TRUE(session);
  Collect sink;
  TcpPair pair = OpenTcpPair();
  ASSERT_TRUE(pair.ok());
  const int c = pair.client, s = pair.server;
  cpu_set_t old_mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof(old_mask), &old_mask), 0);
  char buf[8];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(write(c, "ping", 4), 4);
    if (migrate) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(0, &one);
      ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    }
    ASSERT_EQ(read(s, buf, sizeof(buf)), 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (migrate) {
      cpu_set_t other;
      CPU_ZERO(&other);
      CPU_SET(1, &other);
      ASSERT_EQ(sched_setaffinity(0, sizeof(other), &other), 0);
      ASSERT_EQ(sched_getcpu(), 1);
    }
    const auto spin_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    while (std::chrono::steady_clock::now() < spin_end) {
    }
    ASSERT_EQ(write(s, "pong!", 5), 5);
    if (migrate) {
      ASSERT_EQ(sched_setaffinity(0, sizeof(old_mask), &old_mask), 0);
    }
    ASSERT_EQ(read(c, buf, sizeof(buf)), 5);
  }
  pair.Close();
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

TEST_F(InteractTest, ServingThreadTimeIsSplitByState) { ExpectServingTimeSplit(false); }

TEST_F(InteractTest, ServingThreadTimeIsSplitByStateAcrossAMigration) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs two CPUs to migrate between";
  ExpectServingTimeSplit(true);
}

// A request answered without leaving the CPU: 2 ms of spinning, shorter
// than a scheduler tick (4 ms at HZ=250), so the scheduler's running total
// of the thread's CPU time may not move at all between the read and the
// answer; the on-CPU clock must still see the 2 ms (or, on a busy machine,
// part of it as run-queue wait), and none of it as blocked.
TEST_F(InteractTest, ARequestServedWithoutLeavingTheCpuIsNotBlockedTime) {
  const uint32_t me = static_cast<uint32_t>(getpid());
  auto session = OpenSession({me});
  ASSERT_TRUE(session);
  Collect sink;
  TcpPair pair = OpenTcpPair();
  ASSERT_TRUE(pair.ok());
  char buf[8];
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(write(pair.client, "ping", 4), 4);
    ASSERT_EQ(read(pair.server, buf, sizeof(buf)), 4);
    const auto spin_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    while (std::chrono::steady_clock::now() < spin_end) {
    }
    ASSERT_EQ(write(pair.server, "pong!", 5), 5);
    ASSERT_EQ(read(pair.client, buf, sizeof(buf)), 5);
  }
  pair.Close();
  DrainFor(*session, sink, 200);
  auto srv = sink.Of(me, JDW_ROLE_SERVER);
  ASSERT_EQ(srv.size(), 5u);
  for (const auto& x : srv) {
    const jdw_interaction& ia = x.ia;
    EXPECT_GE(ia.oncpu_ns + ia.runq_ns, 1'900'000u) << "the 2 ms spin is on CPU (or waiting for it)";
    EXPECT_LT(ia.blocked_ns, 100'000u) << "the thread never slept";
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
  // Each release that completes an interaction deletes its entry and
  // counts CLOSED once. (An idle sweep is no check here: the table also
  // holds, briefly, sockets of other processes on this host that received
  // data and were not read yet, and a sweep evicts those.)
  EXPECT_EQ((*ctl)->ReadStats().counters[JDW_IA_STAT_CLOSED] - closed_before, 2u)
      << "both sockets' entries freed at close";
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
  // What crossed to user space is counted as it was copied: every row
  // taken, each with every possible CPU's values, plus at least its key.
  EXPECT_EQ(st.class_rows, rows.size());
  EXPECT_GE(st.class_bytes,
            rows.size() * (sizeof(jdw_ia_class_key) + session->ncpus() * sizeof(jdw_ia_class_stats)));
  EXPECT_EQ(st.sweep_bytes, 0u) << "no idle sweep ran";
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
