// Capture on the real kernel: a workload with exactly known behaviour is
// recorded and the trace is checked field by field against what the
// workload reports it did.
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "capture/clock_sync.h"
#include "common/clock.h"
#include "capture/recorder.h"
#include "support/test_support.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

using testing::PausedChild;

constexpr int kNrRead = 0, kNrWrite = 1, kNrGetppid = 110;
constexpr uint64_t kGetppidCalls = 20000;
constexpr size_t kDirectBytes = 1 << 20;
constexpr size_t kTcpC2S = 300000, kTcpS2C = 123457;
constexpr uint64_t kPipeRounds = 500;

// One recording of the known workload, shared by the tests below.
class KnownWorkloadTrace : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::IsRoot()) return;
    path_ = testing::TempPath("known.jdw");
    PausedChild child({testing::BinDir() + "/jackdaw-workload", "--getppid", std::to_string(kGetppidCalls),
                       "--direct-io", std::to_string(kDirectBytes), "--tcp", std::to_string(kTcpC2S),
                       std::to_string(kTcpS2C), "--pipe-rounds", std::to_string(kPipeRounds),
                       "--socketpair-rounds", "10"});
    capture::RecorderOptions ro;
    ro.output = path_;
    ro.capture.filter_tgid = true;
    ro.capture.tgids = {static_cast<uint32_t>(child.pid())};
    auto rec = capture::Recorder::Create(ro);
    ASSERT_TRUE(rec.ok()) << rec.status().message();
    ASSERT_TRUE((*rec)->StartBackground().ok());
    child.Go();
    int code = -1;
    const std::string out = child.Wait(&code);
    ASSERT_EQ(code, 0) << out;
    report_ = nlohmann::json::parse(out);
    Status st = (*rec)->Stop();
    ASSERT_TRUE(st.ok()) << st.message();
    late_ = (*rec)->stats().late_records;
    auto r = trace::TraceReader::Open(path_);
    ASSERT_TRUE(r.ok()) << r.status().message();
    reader_ = std::move(*r).release();
  }
  static void TearDownTestSuite() {
    delete reader_;
    reader_ = nullptr;
    std::filesystem::remove(path_);
  }
  void SetUp() override {
    JDW_REQUIRE_ROOT();
    ASSERT_NE(reader_, nullptr);
  }

  static inline std::string path_;
  static inline nlohmann::json report_;
  static inline trace::TraceReader* reader_ = nullptr;
  static inline uint64_t late_ = 0;
};

TEST_F(KnownWorkloadTrace, NothingLostAndEveryGroupLoaded) {
  const auto& m = reader_->meta();
  EXPECT_TRUE(m.complete);
  EXPECT_EQ(m.losses.total(), 0u);
  for (const char* g : {"sched", "syscall", "block", "net"})
    EXPECT_NE(std::find(m.probe_groups.begin(), m.probe_groups.end(), g), m.probe_groups.end()) << g;
  uint64_t n = 0;
  reader_->ForEachRecord([&](const jdw_record_header&) { ++n; });
  EXPECT_EQ(n, m.records_written);
}

TEST_F(KnownWorkloadTrace, GetppidCallsCountedExactlyOnTheRightThread) {
  const uint32_t tid = report_["getppid"]["tid"];
  uint64_t enters = 0, exits = 0;
  const uint32_t ppid = getpid();
  reader_->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type == JDW_EVENT_SYS_ENTER && trace::PayloadAs<jdw_sys_enter>(h).nr == kNrGetppid) {
      EXPECT_EQ(h.tid, tid);
      EXPECT_EQ(h.tgid, tid);  // the main thread
      EXPECT_EQ(h.ctx, JDW_CTX_TASK);
      ++enters;
    }
    if (h.type == JDW_EVENT_SYS_EXIT && trace::PayloadAs<jdw_sys_exit>(h).nr == kNrGetppid) {
      EXPECT_EQ(trace::PayloadAs<jdw_sys_exit>(h).ret, static_cast<int64_t>(ppid));
      ++exits;
    }
  });
  EXPECT_EQ(enters, kGetppidCalls);
  EXPECT_EQ(exits, kGetppidCalls);
}

TEST_F(KnownWorkloadTrace, DirectIoReachesTheBlockLayerWithItsBytesAndTid) {
  const uint32_t tid = report_["direct_io"]["tid"];
  struct Io {
    uint64_t sector, bytes;
    uint32_t issue_tid;
    bool write;
  };
  std::vector<Io> ios;
  std::set<uint64_t> issued_rqs;
  uint64_t completions_with_issue = 0;
  // The byte windows below are counted on issues, which the submitting
  // thread records itself. A completion is recorded by whatever the
  // interrupt hits, and on some hosts no probe fires while a particular task
  // is current (README, Known limits): one lost completion must not hide
  // the data. A request the device sent back is issued again (by kblockd)
  // with the same request pointer before it completes: counted once.
  struct BlockRecord {
    uint64_t ts;
    bool issue;
    uint64_t rq, sector, bytes;
    uint32_t op, tid;
  };
  std::vector<BlockRecord> recs;
  reader_->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type == JDW_EVENT_BLOCK_ISSUE) {
      auto i = trace::PayloadAs<jdw_block_issue>(h);
      recs.push_back({h.ts, true, i.rq, i.sector, i.bytes, i.op & 0xff, i.submit_tid});
    } else if (h.type == JDW_EVENT_BLOCK_COMPLETE) {
      auto c = trace::PayloadAs<jdw_block_complete>(h);
      recs.push_back({h.ts, false, c.rq, c.sector, c.bytes, c.op & 0xff, c.issue_tid});
      if (c.issue_tid == tid && (c.op & 0xff) <= 1) {
        EXPECT_NE(c.issue_ts, 0u);
        EXPECT_LE(c.issue_ts, h.ts);
      }
    }
  });
  // Per-CPU streams: the file is not in global time order.
  std::stable_sort(recs.begin(), recs.end(), [](const BlockRecord& a, const BlockRecord& b) { return a.ts < b.ts; });
  std::set<uint64_t> in_flight;
  for (const BlockRecord& r : recs) {
    if (!r.issue) {
      if (r.tid == tid && r.op <= 1) completions_with_issue += issued_rqs.count(r.rq);
      in_flight.erase(r.rq);
      continue;
    }
    issued_rqs.insert(r.rq);
    if (!in_flight.insert(r.rq).second) continue;  // re-issued
    if (r.op <= 1) ios.push_back({r.sector, r.bytes, r.tid, r.op == 1});  // not flush, discard
  }
  EXPECT_GT(completions_with_issue, 0u);
  // The file's data: a 1 MiB window starting at one of the thread's writes
  // that holds exactly 1 MiB written and 1 MiB read back. Metadata writes
  // may sit next to it, so windows are bounded, not extents.
  const uint64_t span = kDirectBytes / 512;
  struct Sum {
    uint64_t written = 0, read = 0, written_by_tid = 0, read_by_tid = 0;
  };
  auto window = [&](uint64_t lo) {
    Sum s;
    for (const Io& io : ios) {
      if (io.sector < lo || io.sector + io.bytes / 512 > lo + span) continue;
      (io.write ? s.written : s.read) += io.bytes;
      if (io.issue_tid == tid) (io.write ? s.written_by_tid : s.read_by_tid) += io.bytes;
    }
    return s;
  };
  std::string seen;
  bool found = false;
  for (const Io& io : ios) {
    seen += (io.write ? " W" : " R") + std::to_string(io.sector) + "+" + std::to_string(io.bytes) + "@" +
            std::to_string(io.issue_tid);
    if (!io.write || io.issue_tid != tid) continue;
    Sum s = window(io.sector);
    if (s.written != kDirectBytes || s.read != kDirectBytes) continue;
    found = true;
    // The block layer may split a request and dispatch a piece from
    // another context; nearly all of it must still name the thread.
    EXPECT_GE(s.written_by_tid, kDirectBytes - 64 * 1024) << seen;
    EXPECT_GE(s.read_by_tid, kDirectBytes - 64 * 1024) << seen;
  }
  EXPECT_TRUE(found) << "no 1 MiB window written and read back (tid " << tid << "):" << seen;
}

// A unix stream socketpair: each end described once its thread uses it,
// naming the other as its peer and this process as SO_PEERCRED's; no name
// (a socketpair's ends are unbound), no IP fields.
TEST_F(KnownWorkloadTrace, SocketpairEndsNameEachOther) {
  const uint32_t tid = report_["socketpair"]["tid"];
  std::vector<jdw_sock_info> ends;
  uint32_t tgid = 0;
  reader_->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_SOCK_INFO) return;
    auto s = trace::PayloadAs<jdw_sock_info>(h);
    if (s.family != 1) return;
    EXPECT_EQ(h.tid, tid);
    EXPECT_EQ(h.ctx, JDW_CTX_TASK);
    tgid = h.tgid;
    ends.push_back(s);
  });
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_NE(ends[0].sk, ends[1].sk);
  EXPECT_EQ(ends[0].peer_sk, ends[1].sk);
  EXPECT_EQ(ends[1].peer_sk, ends[0].sk);
  for (const jdw_sock_info& s : ends) {
    EXPECT_EQ(s.sock_type, 1);  // SOCK_STREAM
    EXPECT_EQ(s.peer_tgid, tgid);
    EXPECT_EQ(s.unix_flags, 0);
    EXPECT_EQ(s.path_len, 0);
    EXPECT_EQ(s.protocol, 0);
    EXPECT_EQ(s.sport, 0);
    EXPECT_EQ(s.dport, 0);
    const uint8_t zero[16] = {};
    EXPECT_EQ(memcmp(s.saddr, zero, 16), 0);
    EXPECT_EQ(memcmp(s.daddr, zero, 16), 0);
  }
}

TEST_F(KnownWorkloadTrace, TcpExchangeHasItsBytesSocketsAndPackets) {
  const auto& t = report_["tcp"];
  const uint32_t client = t["client_tid"], server = t["server_tid"];
  const uint16_t cport = t["client_port"], sport = t["server_port"];
  ASSERT_EQ(t["server_got"], kTcpC2S);
  ASSERT_EQ(t["client_got"], kTcpS2C);
  // Socket identities from sock_info.
  uint64_t client_sk = 0, server_sk = 0;
  reader_->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_SOCK_INFO) return;
    auto s = trace::PayloadAs<jdw_sock_info>(h);
    if (s.family == 1) return;  // the socketpair's (SocketpairEndsNameEachOther)
    EXPECT_EQ(s.family, 2);
    EXPECT_EQ(s.protocol, 6);
    const uint8_t lo[4] = {127, 0, 0, 1};
    EXPECT_EQ(memcmp(s.saddr, lo, 4), 0);
    if (s.sport == cport && s.dport == sport) client_sk = s.sk;
    if (s.sport == sport && s.dport == cport) server_sk = s.sk;
  });
  ASSERT_NE(client_sk, 0u);
  ASSERT_NE(server_sk, 0u);
  // Bytes through syscalls on those sockets: enter names the socket, the
  // matching exit on the same thread gives the count. A thread that blocks
  // may exit on another CPU, so pair them in global time order.
  // Copies: a record read through ForEachRecord lives only as long as its
  // chunk's buffer.
  std::vector<std::vector<uint64_t>> copies;
  reader_->ForEachRecord([&](const jdw_record_header& h) {
    copies.emplace_back((size_t{h.size} + 7) / 8);
    memcpy(copies.back().data(), &h, h.size);
  });
  std::vector<const jdw_record_header*> ordered;
  for (const auto& c : copies) ordered.push_back(reinterpret_cast<const jdw_record_header*>(c.data()));
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const jdw_record_header* a, const jdw_record_header* b) { return a->ts < b->ts; });
  std::map<uint32_t, jdw_sys_enter> pending;
  uint64_t client_sent = 0, server_recv = 0, server_sent = 0, client_recv = 0;
  uint64_t c2s_payload = 0, s2c_payload = 0, xmit_with_sk = 0;
  // New sequence space only: a segment sent again (a retransmission, rare
  // but possible on loopback under load) carries no new bytes.
  struct Direction {
    bool started = false;
    uint32_t next = 0;  // sequence number after the highest byte seen
    uint64_t NewBytes(uint32_t seq, uint32_t len) {
      if (!started) started = true, next = seq;
      const uint32_t end = seq + len;
      if (static_cast<int32_t>(end - next) <= 0) return 0;
      const uint64_t fresh = end - next;
      next = end;
      return fresh;
    }
  } c2s, s2c;
  for (const jdw_record_header* hp : ordered) {
    const jdw_record_header& h = *hp;
    if (h.type == JDW_EVENT_SYS_ENTER) pending[h.tid] = trace::PayloadAs<jdw_sys_enter>(h);
    if (h.type == JDW_EVENT_SYS_EXIT) {
      auto x = trace::PayloadAs<jdw_sys_exit>(h);
      auto it = pending.find(h.tid);
      if (it == pending.end() || it->second.nr != x.nr || x.ret <= 0) continue;
      const auto& e = it->second;
      if (e.obj_kind != JDW_OBJ_SOCKET) continue;
      const bool is_write = x.nr == kNrWrite || x.nr == 44 /* sendto */;
      const bool is_read = x.nr == kNrRead || x.nr == 45 /* recvfrom */;
      if (h.tid == client && e.obj == client_sk && is_write) client_sent += x.ret;
      if (h.tid == client && e.obj == client_sk && is_read) client_recv += x.ret;
      if (h.tid == server && e.obj == server_sk && is_write) server_sent += x.ret;
      if (h.tid == server && e.obj == server_sk && is_read) server_recv += x.ret;
    }
    if (h.type == JDW_EVENT_NET_XMIT) {
      auto p = trace::PayloadAs<jdw_net_packet>(h);
      if (p.protocol != 6) continue;
      if (p.payload_len == 0) continue;
      if (p.sport == cport && p.dport == sport) {
        c2s_payload += c2s.NewBytes(p.seq, p.payload_len);
        xmit_with_sk += p.sk == client_sk;
      }
      if (p.sport == sport && p.dport == cport) s2c_payload += s2c.NewBytes(p.seq, p.payload_len);
    }
  }
  EXPECT_EQ(client_sent, kTcpC2S);
  EXPECT_EQ(server_recv, kTcpC2S);
  EXPECT_EQ(server_sent, kTcpS2C);
  EXPECT_EQ(client_recv, kTcpS2C);
  EXPECT_EQ(c2s_payload, kTcpC2S);
  EXPECT_EQ(s2c_payload, kTcpS2C);
  EXPECT_GT(xmit_with_sk, 0u);
}

TEST_F(KnownWorkloadTrace, PipePingPongSharesThePipeIdentityAndWakesAcrossThreads) {
  const uint32_t ping = report_["pipe"]["ping_tid"], pong = report_["pipe"]["pong_tid"];
  std::map<std::pair<uint32_t, int>, std::map<uint64_t, uint64_t>> calls;  // (tid, nr) -> obj -> n
  uint64_t ping_wakes_pong = 0, pong_wakes_ping = 0;
  reader_->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type == JDW_EVENT_SYS_ENTER) {
      auto e = trace::PayloadAs<jdw_sys_enter>(h);
      if (e.obj_kind == JDW_OBJ_PIPE && (e.nr == kNrRead || e.nr == kNrWrite)) ++calls[{h.tid, e.nr}][e.obj];
    }
    if (h.type == JDW_EVENT_SCHED_WAKEUP) {
      // A wakeup is recorded in the waker's context, or, when the wakee's
      // CPU is idle, in interrupt context on that CPU (the kernel queues
      // the wakeup there: TTWU_QUEUE).
      auto w = trace::PayloadAs<jdw_sched_wakeup>(h);
      const bool remote = h.ctx != JDW_CTX_TASK;
      ping_wakes_pong += (h.tid == ping || remote) && w.wakee_tid == pong;
      pong_wakes_ping += (h.tid == pong || remote) && w.wakee_tid == ping;
    }
  });
  // The pong thread touches only the two pipes; the ping (main) thread
  // also writes its report to stdout, another pipe.
  auto only = [&](uint32_t tid, int nr) -> std::pair<uint64_t, uint64_t> {
    const auto& m = calls[{tid, nr}];
    if (m.size() != 1) return {0, 0};
    return *m.begin();
  };
  auto [pong_r_obj, pong_r] = only(pong, kNrRead);
  auto [pong_w_obj, pong_w] = only(pong, kNrWrite);
  const uint64_t ping_w = calls[{ping, kNrWrite}][pong_r_obj];
  const uint64_t ping_r = calls[{ping, kNrRead}][pong_w_obj];
  EXPECT_EQ(ping_w, kPipeRounds);
  EXPECT_EQ(pong_r, kPipeRounds);
  EXPECT_EQ(pong_w, kPipeRounds);
  EXPECT_EQ(ping_r, kPipeRounds);
  EXPECT_NE(pong_r_obj, 0u);
  EXPECT_NE(pong_r_obj, pong_w_obj);
  // With 2 CPUs most round trips block and are woken by the peer.
  EXPECT_GT(ping_wakes_pong, 0u);
  EXPECT_GT(pong_wakes_ping, 0u);
}

TEST_F(KnownWorkloadTrace, PerCpuTimestampsAreMonotonic) {
  std::vector<uint64_t> last(reader_->meta().ncpus, 0);
  uint64_t violations = 0, total = 0;
  reader_->ForEachChunk([&](const trace::RecordChunk& c, const uint8_t* data, size_t len) {
    size_t off = 0;
    uint64_t prev_in_chunk = 0;
    while (off < len) {
      const auto* h = reinterpret_cast<const jdw_record_header*>(data + off);
      EXPECT_EQ(h->cpu, c.cpu);
      EXPECT_GE(h->ts, prev_in_chunk) << "inside one chunk records are sorted";
      prev_in_chunk = h->ts;
      violations += h->ts < last[c.cpu];
      last[c.cpu] = std::max<uint64_t>(last[c.cpu], h->ts);
      ++total;
      off += h->size;
    }
  });
  EXPECT_GT(total, 0u);
  // Across chunks, the only disorder allowed is what the recorder counted.
  EXPECT_EQ(violations, late_);
}

TEST_F(KnownWorkloadTrace, TscMappingAgreesWithClockGettimeWithin10us) {
  const auto& time = reader_->meta().time;
  EXPECT_EQ(time.clock.method, "tsc-fit");
  EXPECT_GT(time.clock.tsc_per_ns, 0.1);
  for (int i = 0; i < 5; ++i) {
    const capture::ClockPair p = capture::SampleClockPair();
    const double mapped_tsc = double(time.ToTsc(p.mono_ns));
    const double err_ns = std::fabs(mapped_tsc - double(p.tsc)) / time.clock.tsc_per_ns;
    EXPECT_LT(err_ns, 10000.0) << "mono " << p.mono_ns;
    const double back_ns = std::fabs(double(int64_t(time.clock.TscToMono(p.tsc) - p.mono_ns)));
    EXPECT_LT(back_ns, 10000.0);
    usleep(20000);
  }
}

// Runtime detach/attach, driven from this process: only getppid is
// traced, so the recorder's own syscalls stay out of the count.
class SelfTrace : public ::testing::Test {
 protected:
  void SetUp() override { JDW_REQUIRE_ROOT(); }

  std::unique_ptr<capture::Recorder> Make(const std::string& path, uint32_t ring_bytes,
                                          uint64_t clock_interval_ns = 1'000'000'000) {
    capture::RecorderOptions ro;
    ro.clock_interval_ns = clock_interval_ns;
    ro.output = path;
    ro.capture.groups = 1u << JDW_GROUP_SYSCALL;
    ro.capture.filter_tgid = true;
    ro.capture.tgids = {static_cast<uint32_t>(getpid())};
    ro.capture.syscalls = {kNrGetppid};
    ro.capture.ring_bytes_per_cpu = ring_bytes;
    auto rec = capture::Recorder::Create(ro);
    EXPECT_TRUE(rec.ok()) << rec.status().message();
    return rec.ok() ? std::move(*rec) : nullptr;
  }

  static uint64_t CountGetppid(const std::string& path, uint64_t* lost) {
    auto r = trace::TraceReader::Open(path);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return 0;
    uint64_t n = 0;
    (*r)->ForEachRecord([&](const jdw_record_header& h) {
      n += (h.type == JDW_EVENT_SYS_ENTER && trace::PayloadAs<jdw_sys_enter>(h).nr == kNrGetppid) ||
           (h.type == JDW_EVENT_SYS_EXIT && trace::PayloadAs<jdw_sys_exit>(h).nr == kNrGetppid);
    });
    uint64_t l = 0;
    for (uint32_t c = 0; c < (*r)->meta().ncpus; ++c) l += (*r)->meta().losses.lost[c][JDW_GROUP_SYSCALL];
    if (lost) *lost = l;
    return n;
  }
};

TEST_F(SelfTrace, DisabledGroupRecordsNothingAndReenabledRecordsAgain) {
  const std::string path = testing::TempPath("toggle.jdw");
  auto rec = Make(path, 8u << 20);
  ASSERT_NE(rec, nullptr);
  ASSERT_TRUE(rec->Start().ok());
  EXPECT_EQ(rec->session().attach_mode(JDW_GROUP_SYSCALL), "tp_btf");
  for (int i = 0; i < 100; ++i) syscall(SYS_getppid);
  ASSERT_TRUE(rec->Step().ok());
  ASSERT_TRUE(rec->session().Disable(JDW_GROUP_SYSCALL).ok());
  EXPECT_EQ(rec->session().enabled_groups() & (1u << JDW_GROUP_SYSCALL), 0u);
  for (int i = 0; i < 1000; ++i) syscall(SYS_getppid);
  ASSERT_TRUE(rec->Step().ok());
  ASSERT_TRUE(rec->session().Enable(JDW_GROUP_SYSCALL).ok());
  for (int i = 0; i < 10; ++i) syscall(SYS_getppid);
  ASSERT_TRUE(rec->Stop().ok());
  uint64_t lost = 0;
  EXPECT_EQ(CountGetppid(path, &lost), 2u * (100 + 10));
  EXPECT_EQ(lost, 0u);
  std::filesystem::remove(path);
}

// Records staged on a CPU (bpf/jackdaw.bpf.h, "the record stage") that
// nothing pushes out — too few to fill a stage, no sched group to flush it
// when the CPU idles — still reach the reader while the recording runs:
// the reader flushes a stage that has not moved for a period.
TEST_F(SelfTrace, StagedRecordsReachTheReaderWithoutAStop) {
  const std::string path = testing::TempPath("staged.jdw");
  auto rec = Make(path, 8u << 20);
  ASSERT_NE(rec, nullptr);
  ASSERT_TRUE(rec->Start().ok());
  for (int i = 0; i < 10; ++i) syscall(SYS_getppid);
  uint64_t seen = 0;
  for (int i = 0; i < 300 && seen < 20; ++i) {
    ASSERT_TRUE(rec->Step().ok());
    seen = rec->group_records()[JDW_GROUP_SYSCALL];
  }
  EXPECT_EQ(seen, 20u) << "10 getppid calls, 2 events each, before the stop";
  ASSERT_TRUE(rec->Stop().ok());
  uint64_t lost = 0;
  EXPECT_EQ(CountGetppid(path, &lost), 20u);
  EXPECT_EQ(lost, 0u);
  std::filesystem::remove(path);
}

TEST_F(SelfTrace, TinyBufferUnderStormCapturedPlusLostEqualsProduced) {
  const std::string path = testing::TempPath("storm.jdw");
  auto rec = Make(path, 16384);  // ~340 records per CPU
  ASSERT_NE(rec, nullptr);
  ASSERT_TRUE(rec->Start().ok());
  constexpr uint64_t kCalls = 200000;
  // No draining while the storm runs: the ring must overflow.
  for (uint64_t i = 0; i < kCalls; ++i) syscall(SYS_getppid);
  ASSERT_TRUE(rec->Stop().ok());
  uint64_t lost = 0;
  const uint64_t captured = CountGetppid(path, &lost);
  EXPECT_GT(lost, 0u) << "the storm should have overflowed a 16 KiB ring";
  EXPECT_GT(captured, 0u);
  EXPECT_EQ(captured + lost, 2 * kCalls);
  EXPECT_EQ(rec->stats().lost, lost);
  std::filesystem::remove(path);
}

// Losses located: two storms with a sweep between them leave loss
// intervals of the syscall group that account for every lost record, lie
// within the recording, and tell the two storms apart.
TEST_F(SelfTrace, TinyBufferLossesAreLocatedInTime) {
  const std::string path = testing::TempPath("located.jdw");
  auto rec = Make(path, 16384);
  ASSERT_NE(rec, nullptr);
  const uint64_t t0 = MonotonicNs();
  ASSERT_TRUE(rec->Start().ok());
  for (int i = 0; i < 100000; ++i) syscall(SYS_getppid);
  ASSERT_TRUE(rec->Step().ok());
  const uint64_t between = MonotonicNs();
  for (int i = 0; i < 100000; ++i) syscall(SYS_getppid);
  ASSERT_TRUE(rec->Stop().ok());
  const uint64_t t1 = MonotonicNs();
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const trace::TraceMeta& m = (*r)->meta();
  EXPECT_TRUE(m.losses_located);
  ASSERT_GT(m.losses.total(), 0u) << "the storms should have overflowed a 16 KiB ring";
  uint64_t located = 0;
  bool first = false, second = false;
  for (const trace::LossInterval& l : m.loss_intervals) {
    EXPECT_EQ(l.group, uint32_t{JDW_GROUP_SYSCALL});
    EXPECT_LE(t0, l.from_ns);
    EXPECT_LE(l.from_ns, l.to_ns);
    EXPECT_LE(l.to_ns, t1);
    located += l.lost;
    first = first || l.to_ns <= between;
    second = second || l.from_ns >= t0 + (between - t0) / 2;
  }
  EXPECT_EQ(located, m.losses.total());
  EXPECT_TRUE(first) << "the first storm's losses end before the sweep between the storms";
  EXPECT_TRUE(second) << "the second storm's losses begin after the first storm";
  std::filesystem::remove(path);
}

TEST_F(SelfTrace, LossesOfAKilledRecordingAreInItsMetaChunks) {
  const std::string path = testing::TempPath("killed-losses.jdw");
  auto rec = Make(path, 16384, /*clock_interval_ns=*/0);  // every step writes a meta chunk
  ASSERT_NE(rec, nullptr);
  ASSERT_TRUE(rec->Start().ok());
  for (int i = 0; i < 100000; ++i) syscall(SYS_getppid);
  ASSERT_TRUE(rec->Step().ok());
  const uint64_t lost_seen = rec->stats().lost;
  EXPECT_GT(lost_seen, 0u) << "the storm should have overflowed a 16 KiB ring";
  rec.reset();  // no Stop(): no footer, as when the recorder is killed
  auto r = trace::TraceReader::Open(path, {.allow_truncated = true});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE((*r)->meta().complete);
  EXPECT_EQ((*r)->meta().losses.total(), lost_seen);
  std::filesystem::remove(path);
}

// A write error stops the background thread; destroying the recorder then,
// without Stop(), must join it rather than std::terminate.
TEST_F(SelfTrace, RecorderWhoseThreadFailedIsDestroyedWithoutStop) {
  const std::string path = testing::TempPath("efbig.jdw");
  auto rec = Make(path, 8u << 20);
  ASSERT_NE(rec, nullptr);
  ASSERT_TRUE(rec->StartBackground().ok());
  // The file may not grow past its header: the first flush fails (EFBIG).
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit tiny = old;
  tiny.rlim_cur = std::filesystem::file_size(path) + 64;
  auto old_xfsz = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tiny), 0);
  for (int round = 0; round < 2000 && rec->running(); ++round) {
    for (int i = 0; i < 1000; ++i) syscall(SYS_getppid);
    usleep(5000);
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_xfsz);
  EXPECT_FALSE(rec->running()) << "the write past RLIMIT_FSIZE should have failed the thread";
  rec.reset();  // before: std::terminate on a joinable thread
  std::filesystem::remove(path);
}

// Both attach modes record the same process tree with its tgids: tp_btf
// (this kernel's choice) and the raw_tp fallback (kernels that refuse tp_btf,
// forced here). The workload runs as a child of a shell, so the recording
// must follow a fork into a new process: the fork record carries the child's
// tgid, the child is admitted to the filter, its exec, syscalls, switches
// (next_tgid included) and exit are all there with the right tgid.
class AttachModes : public ::testing::TestWithParam<bool> {};

TEST_P(AttachModes, FollowsForkExecExitAndSwitchTgids) {
  JDW_REQUIRE_ROOT();
  const bool raw_tp = GetParam();
  const std::string path = testing::TempPath(raw_tp ? "fallback.jdw" : "btf.jdw");
  const std::string workload = testing::BinDir() + "/jackdaw-workload --getppid 5000 --pipe-rounds 200";
  // "; exit 0" keeps the shell from exec-ing the workload in place.
  PausedChild child({"/bin/sh", "-c", workload + "; exit 0"});
  capture::RecorderOptions ro;
  ro.output = path;
  ro.capture.groups = (1u << JDW_GROUP_SCHED) | (1u << JDW_GROUP_SYSCALL);
  ro.capture.filter_tgid = true;
  ro.capture.tgids = {static_cast<uint32_t>(child.pid())};
  ro.capture.force_tracepoints = raw_tp;
  auto rec = capture::Recorder::Create(ro);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  EXPECT_EQ((*rec)->session().attach_mode(JDW_GROUP_SCHED), raw_tp ? "raw_tp" : "tp_btf");
  EXPECT_EQ((*rec)->session().attach_mode(JDW_GROUP_SYSCALL), raw_tp ? "raw_tp" : "tp_btf");
  ASSERT_TRUE((*rec)->StartBackground().ok());
  const uint32_t shell = static_cast<uint32_t>(child.pid());  // Wait() forgets it
  child.Go();
  int code = -1;
  auto report = nlohmann::json::parse(child.Wait(&code));
  ASSERT_EQ(code, 0);
  ASSERT_TRUE((*rec)->Stop().ok());
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const uint32_t tid = report["getppid"]["tid"];
  // The workload process: forked by the shell, a new tgid.
  // Two passes: the file holds each CPU's records in order, not the
  // machine's, so the workload's own forks may come before the shell's.
  uint32_t wl = 0;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_TASK_FORK) return;
    const auto f = trace::PayloadAs<jdw_task_fork>(h);
    if (h.tgid == shell && f.child_tgid != shell) wl = f.child_tgid;
  });
  ASSERT_NE(wl, 0u) << "no fork record with the shell's child as a new process";
  std::set<uint32_t> wl_threads;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type == JDW_EVENT_TASK_FORK && h.tgid == wl) wl_threads.insert(trace::PayloadAs<jdw_task_fork>(h).child_tid);
  });
  EXPECT_EQ(tid, wl) << "getppid runs on the workload's main thread";
  EXPECT_FALSE(wl_threads.empty()) << "the workload's threads were not recorded with its tgid";
  uint64_t enters = 0, execs = 0, exits = 0, switches_in = 0, bad_next_tgid = 0;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    switch (h.type) {
      case JDW_EVENT_SYS_ENTER:
        enters += trace::PayloadAs<jdw_sys_enter>(h).nr == kNrGetppid && h.tid == tid && h.tgid == wl;
        break;
      case JDW_EVENT_TASK_EXEC: execs += h.tgid == wl; break;
      case JDW_EVENT_TASK_EXIT: exits += h.tgid == wl; break;
      case JDW_EVENT_SCHED_SWITCH: {
        const auto sw = trace::PayloadAs<jdw_sched_switch>(h);
        if (sw.next_tid == tid || wl_threads.count(sw.next_tid)) {
          ++switches_in;
          bad_next_tgid += sw.next_tgid != wl;
        }
        break;
      }
    }
  });
  EXPECT_EQ(enters, 5000u);
  EXPECT_GE(execs, 1u);
  EXPECT_GE(exits, 1u + wl_threads.size()) << "every thread of the workload ends";
  EXPECT_GT(switches_in, 0u);
  EXPECT_EQ(bad_next_tgid, 0u) << "switches into the workload must name its tgid";
  EXPECT_EQ((*r)->meta().losses.total(), 0u);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Capture, AttachModes, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "RawTp" : "TpBtf"; });

}  // namespace
}  // namespace jackdaw
