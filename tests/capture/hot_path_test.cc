// The capture hot path on the real kernel: the fd cache never reports an
// fd's old object after the number is reused, and with a process filter the
// net group keeps the traced process's packets and only those.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "capture/recorder.h"
#include "capture/session.h"
#include "support/test_support.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

using testing::PausedChild;

constexpr int kNrRead = 0;

// Records the child started with `args` under a filter on its pid; returns
// its JSON report. `during` runs in this (untraced) process meanwhile.
nlohmann::json RecordChild(const std::string& path, uint32_t groups, const std::vector<std::string>& args,
                           const std::function<void()>& during = {}) {
  std::vector<std::string> argv = {testing::BinDir() + "/jackdaw-workload"};
  argv.insert(argv.end(), args.begin(), args.end());
  PausedChild child(argv);
  capture::RecorderOptions ro;
  ro.output = path;
  ro.capture.groups = groups;
  ro.capture.filter_tgid = true;
  ro.capture.tgids = {static_cast<uint32_t>(child.pid())};
  auto rec = capture::Recorder::Create(ro);
  EXPECT_TRUE(rec.ok()) << rec.status().message();
  if (!rec.ok()) return {};
  EXPECT_TRUE((*rec)->StartBackground().ok());
  child.Go();
  if (during) during();
  int code = -1;
  const std::string out = child.Wait(&code);
  EXPECT_EQ(code, 0) << out;
  Status st = (*rec)->Stop();
  EXPECT_TRUE(st.ok()) << st.message();
  return code == 0 ? nlohmann::json::parse(out) : nlohmann::json{};
}

// On a kernel with BTF-typed tracepoints (this one) every group's tp_btf
// programs pass the verifier, with a process filter and without (the
// filter's code is verified only with it): a refused one falls back to
// raw_tp without failing anything, and costs a probe read per field.
TEST(HotPath, EveryGroupLoadsAsTpBtfWithAndWithoutAProcessFilter) {
  JDW_REQUIRE_ROOT();
  for (bool filter : {false, true}) {
    SCOPED_TRACE(filter ? "with --pid" : "without a filter");
    capture::CaptureOptions o;
    o.filter_tgid = filter;
    if (filter) o.tgids = {static_cast<uint32_t>(getpid())};
    auto s = capture::CaptureSession::Create(o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (uint32_t g : {JDW_GROUP_SCHED, JDW_GROUP_SYSCALL, JDW_GROUP_BLOCK, JDW_GROUP_NET})
      EXPECT_EQ((*s)->attach_mode(g), "tp_btf") << trace::GroupName(g);
    EXPECT_TRUE((*s)->warnings().empty()) << (*s)->warnings().front();
  }
}

TEST(FdCache, ReusedFdNumberIsNeverReportedAsItsOldObject) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("fdreuse.jdw");
  const auto report = RecordChild(path, 1u << JDW_GROUP_SYSCALL, {"--fd-reuse"});
  ASSERT_TRUE(report.contains("fd_reuse"));
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The read() that marks each step: its byte count is unique.
  std::map<uint64_t, jdw_sys_enter> by_count;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_SYS_ENTER) return;
    auto e = trace::PayloadAs<jdw_sys_enter>(h);
    if (e.nr == kNrRead && e.arg >= 1000 && e.arg < 10000) by_count[e.arg] = e;
  });
  const std::map<std::string, uint8_t> kinds = {
      {"socket", JDW_OBJ_SOCKET}, {"file", JDW_OBJ_FILE}, {"pipe", JDW_OBJ_PIPE}};
  for (const auto& step : report["fd_reuse"]) {
    const uint64_t count = step["count"];
    auto it = by_count.find(count);
    ASSERT_NE(it, by_count.end()) << step["what"];
    EXPECT_EQ(it->second.fd, step["fd"].get<int>()) << step["what"];
    EXPECT_EQ(it->second.obj_kind, kinds.at(step["kind"])) << step["what"];
    EXPECT_NE(it->second.obj, 0u) << step["what"];
  }
  // Same number, another object: another identity.
  EXPECT_NE(by_count[1001].obj, by_count[1002].obj);
  EXPECT_NE(by_count[3001].obj, by_count[3002].obj);
  // dup2 of the file over the socket: the file's identity, not the socket's.
  EXPECT_EQ(by_count[2003].obj, by_count[2002].obj);
  EXPECT_NE(by_count[2003].obj, by_count[2001].obj);
  // Replaced on another CPU: the first CPU's memo does not answer with the
  // socket (the workload leaves this step out on one CPU).
  if (std::thread::hardware_concurrency() >= 2) {
    ASSERT_EQ(report["fd_reuse"].size(), 18u);
    EXPECT_NE(by_count[4002].obj, by_count[4001].obj);
    // A file opened on one CPU (its entry in that CPU's memo only),
    // replaced on the other: by a socket, then by another file.
    EXPECT_NE(by_count[5002].obj, by_count[5001].obj);
    EXPECT_NE(by_count[6002].obj, by_count[6001].obj);
    EXPECT_EQ(by_count[7001].obj, by_count[5001].obj);  // /proc/self/exe again
    EXPECT_NE(by_count[7001].obj, by_count[6002].obj);
    // A socket received (SCM_RIGHTS) at a closed file's number: the
    // socket, whether another CPU had put the file in the shared cache
    // (8) or not (9).
    EXPECT_NE(by_count[8002].obj, by_count[8001].obj);
    EXPECT_NE(by_count[9002].obj, by_count[9001].obj);
  }
  std::filesystem::remove(path);
}

// A loopback exchange of `bytes` in this process; returns both ports.
std::pair<uint16_t, uint16_t> UntracedExchange(size_t bytes) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(listen(ls, 1), 0);
  socklen_t al = sizeof(a);
  getsockname(ls, reinterpret_cast<sockaddr*>(&a), &al);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  int s = accept(ls, nullptr, nullptr);
  sockaddr_in local{};
  al = sizeof(local);
  getsockname(c, reinterpret_cast<sockaddr*>(&local), &al);
  std::vector<char> buf(bytes, 'u');
  EXPECT_EQ(write(c, buf.data(), bytes), static_cast<ssize_t>(bytes));
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = read(s, buf.data(), bytes - got);
    if (n <= 0) break;
    got += n;
  }
  close(c);
  close(s);
  close(ls);
  return {ntohs(a.sin_port), ntohs(local.sin_port)};
}

TEST(NetFilter, WithAPidFilterOnlyTheTracedProcessPacketsAreRecorded) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("netfilter.jdw");
  std::pair<uint16_t, uint16_t> untraced{};
  const auto report =
      RecordChild(path, (1u << JDW_GROUP_SYSCALL) | (1u << JDW_GROUP_NET), {"--tcp", "20000", "7000"},
                  [&] { untraced = UntracedExchange(30000); });
  ASSERT_TRUE(report.contains("tcp"));
  const uint16_t sport = report["tcp"]["server_port"], cport = report["tcp"]["client_port"];
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  uint64_t traced_xmit = 0, traced_recv = 0, syn_to_server = 0, foreign = 0, recv_at_client = 0;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_NET_XMIT && h.type != JDW_EVENT_NET_RECV) return;
    auto p = trace::PayloadAs<jdw_net_packet>(h);
    const bool ours = (p.sport == sport && p.dport == cport) || (p.sport == cport && p.dport == sport);
    if (ours) {
      (h.type == JDW_EVENT_NET_XMIT ? traced_xmit : traced_recv) += 1;
      // The SYN reaches a traced listener before accept() returns.
      syn_to_server += h.type == JDW_EVENT_NET_RECV && p.dport == sport && (p.tcp_flags & 0x12) == 0x02;
      // The client's port is no listener: its packets are kept through
      // the flow learned from the client socket's own sends.
      recv_at_client += h.type == JDW_EVENT_NET_RECV && p.dport == cport;
    }
    foreign += p.sport == untraced.first || p.dport == untraced.first || p.sport == untraced.second ||
               p.dport == untraced.second;
  });
  EXPECT_GT(traced_xmit, 0u);
  EXPECT_GT(traced_recv, 0u);
  EXPECT_EQ(syn_to_server, 1u);
  EXPECT_GT(recv_at_client, 0u);
  EXPECT_EQ(foreign, 0u) << "packets of the untraced exchange on ports " << untraced.first << "/"
                         << untraced.second;
  std::filesystem::remove(path);
}

// A server listening since before the session: user space puts its port
// in the filter's port table (CaptureSession::AddTgid, through the table's
// mapping), so the SYN of a client that is not traced is kept on arrival.
// Only the net group runs: no bind() or listen() of the session can have
// marked the port.
TEST(NetFilter, AListenerFromBeforeTheSessionHasItsClientsSynRecorded) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("netfilter_listener.jdw");
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(ls, 4), 0);
  socklen_t al = sizeof(a);
  ASSERT_EQ(getsockname(ls, reinterpret_cast<sockaddr*>(&a), &al), 0);
  const uint16_t port = ntohs(a.sin_port);
  // Started (paused) before the session: not a child the session follows.
  PausedChild client({"/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) + " && echo connected"});
  capture::RecorderOptions ro;
  ro.output = path;
  ro.capture.groups = 1u << JDW_GROUP_NET;
  ro.capture.filter_tgid = true;
  ro.capture.tgids = {static_cast<uint32_t>(getpid())};
  auto rec = capture::Recorder::Create(ro);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_TRUE((*rec)->StartBackground().ok());
  client.Go();
  int code = -1;
  EXPECT_EQ(client.Wait(&code), "connected\n");
  EXPECT_EQ(code, 0);
  int s = accept(ls, nullptr, nullptr);
  Status st = (*rec)->Stop();
  ASSERT_TRUE(st.ok()) << st.message();
  if (s >= 0) close(s);
  close(ls);
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  uint64_t syn = 0, to_port = 0;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_NET_RECV) return;
    auto p = trace::PayloadAs<jdw_net_packet>(h);
    if (p.dport != port) return;
    ++to_port;
    syn += (p.tcp_flags & 0x12) == 0x02;
  });
  EXPECT_EQ(syn, 1u);
  EXPECT_GE(to_port, 2u) << "the SYN and the handshake's last ACK";
  std::filesystem::remove(path);
}

// Two producers at full speed into rings far too small for them (64 KiB
// per CPU), drained in place: the rings wrap thousands of times, every
// record read is whole (the reader validates each), nothing is lost
// silently (each getppid enter is either in the trace or in the loss
// counters), and the losses reach the trace's metadata. With rings this
// small some loss is expected on any machine; how many is not asserted.
TEST(Drain, TwoProducersIntoTinyRingsLoseNothingSilently) {
  JDW_REQUIRE_ROOT();
  constexpr uint64_t kCalls = 200000;
  const std::string path = testing::TempPath("drain.jdw");
  const std::vector<std::string> argv = {testing::BinDir() + "/jackdaw-workload", "--getppid",
                                         std::to_string(kCalls)};
  PausedChild a(argv), b(argv);
  capture::RecorderOptions ro;
  ro.output = path;
  ro.capture.groups = 1u << JDW_GROUP_SYSCALL;
  ro.capture.filter_tgid = true;
  ro.capture.tgids = {static_cast<uint32_t>(a.pid()), static_cast<uint32_t>(b.pid())};
  ro.capture.ring_bytes_per_cpu = 64 << 10;
  auto rec = capture::Recorder::Create(ro);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_TRUE((*rec)->StartBackground().ok());
  a.Go();
  b.Go();
  int ca = -1, cb = -1;
  const auto ra = nlohmann::json::parse(a.Wait(&ca));
  const auto rb = nlohmann::json::parse(b.Wait(&cb));
  ASSERT_EQ(ca, 0);
  ASSERT_EQ(cb, 0);
  ASSERT_TRUE((*rec)->Stop().ok());
  const auto st = (*rec)->stats();
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const uint32_t ta = ra["getppid"]["tid"], tb = rb["getppid"]["tid"];
  uint64_t enters = 0, records = 0;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    ++records;
    if (h.type == JDW_EVENT_SYS_ENTER && trace::PayloadAs<jdw_sys_enter>(h).nr == 110 && (h.tid == ta || h.tid == tb)) ++enters;
  });
  const uint64_t lost = (*r)->meta().losses.total();
  EXPECT_EQ(lost, st.lost) << "the trace's loss counters are the recorder's";
  EXPECT_EQ(records, st.records);
  EXPECT_LE(enters, 2 * kCalls);
  EXPECT_GE(enters + lost, 2 * kCalls) << "an enter is neither recorded nor counted lost";
  printf("drain into 64 KiB rings: %llu of %llu getppid enters recorded, %llu records lost\n",
         static_cast<unsigned long long>(enters), static_cast<unsigned long long>(2 * kCalls),
         static_cast<unsigned long long>(lost));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace jackdaw
