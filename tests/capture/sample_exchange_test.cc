// Head sampling on the real kernel (bpf/jackdaw.bpf.h, "head sampling"): a
// rate changed while exchanges are in progress cuts none of them, since a
// connection's sample is decided only when a read begins its next exchange;
// and the exchanges of the connections left out are counted.
//
// A server in this process answers each 100-byte request with 200 bytes,
// 2 ms after reading it, on one thread per connection; its clients are a
// process forked before the recording starts, so only the server's calls
// are traced. While they run, the rate moves between 0.05 and 0.95 every
// 3 ms, so most exchanges see a change between their read and their write.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "capture/recorder.h"
#include "capture/session.h"
#include "support/test_support.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

constexpr uint16_t kNrRead = 0;
constexpr uint16_t kNrWrite = 1;
constexpr int kClients = 6;
constexpr int kExchanges = 60;
constexpr size_t kRequest = 100, kResponse = 200;

bool ReadFully(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) return false;
    got += size_t(r);
  }
  return true;
}

// The clients, in a child forked before the probes attach: each connects,
// waits for the go byte on `go_fd`, then makes its exchanges.
pid_t ForkClients(uint16_t port, int go_fd) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  char go;
  if (read(go_fd, &go, 1) != 1) _exit(2);
  std::vector<std::thread> clients;
  std::atomic<int> failed{0};
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&] {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return void(++failed);
      char req[kRequest] = {}, resp[kResponse];
      for (int i = 0; i < kExchanges; ++i)
        if (write(fd, req, kRequest) != ssize_t(kRequest) || !ReadFully(fd, resp, kResponse)) return void(++failed);
      close(fd);
    });
  for (auto& t : clients) t.join();
  _exit(failed ? 1 : 0);
}

TEST(SampleExchanges, ARateChangedMidExchangeCutsNoExchangeAndTheLeftOutAreCounted) {
  JDW_REQUIRE_ROOT();
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener, kClients), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t clients = ForkClients(ntohs(a.sin_port), go[0]);
  ASSERT_GT(clients, 0);

  const std::string path = testing::TempPath("sample_exchanges.jdw");
  capture::RecorderOptions ro;
  ro.output = path;
  ro.capture.groups = 1u << JDW_GROUP_SYSCALL;
  ro.capture.filter_tgid = true;
  ro.capture.tgids = {static_cast<uint32_t>(getpid())};
  ro.capture.sample = true;
  ro.capture.sample_rate = 0.95;
  auto rec = capture::Recorder::Create(ro);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_TRUE((*rec)->StartBackground().ok());

  std::vector<std::thread> servers;
  std::atomic<bool> done{false};
  std::thread flipper([&] {
    for (int i = 0; !done; ++i) {
      EXPECT_TRUE((*rec)->session().SetSampleRate(i % 2 ? 0.95 : 0.05).ok());
      usleep(3000);
    }
  });
  ASSERT_EQ(write(go[1], "g", 1), 1);
  for (int c = 0; c < kClients; ++c) {
    const int fd = accept(listener, nullptr, nullptr);
    ASSERT_GE(fd, 0);
    servers.emplace_back([fd] {
      char req[kRequest], resp[kResponse] = {};
      for (int i = 0; i < kExchanges; ++i) {
        if (!ReadFully(fd, req, kRequest)) break;
        usleep(2000);  // mid-exchange: the rate changes here most of the time
        if (write(fd, resp, kResponse) != ssize_t(kResponse)) break;
      }
      close(fd);
    });
  }
  for (auto& t : servers) t.join();
  int status = 0;
  ASSERT_EQ(waitpid(clients, &status, 0), clients);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  done = true;
  flipper.join();
  close(listener);
  ASSERT_TRUE((*rec)->Stop().ok());

  // Per connection fd, the server's recorded reads and writes in time order.
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::map<int32_t, std::vector<std::pair<uint64_t, uint16_t>>> calls;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_SYS_ENTER) return;
    const auto e = trace::PayloadAs<jdw_sys_enter>(h);
    if ((e.nr == kNrRead && e.arg == kRequest) || (e.nr == kNrWrite && e.arg == kResponse))
      calls[e.fd].emplace_back(h.ts, e.nr);
  });
  ASSERT_EQ((*r)->meta().losses.total(), 0u);
  uint64_t recorded = 0, cut = 0;
  for (auto& [fd, seq] : calls) {
    std::sort(seq.begin(), seq.end());
    // A whole exchange is a read then a write: anything else is one cut.
    for (size_t i = 0; i < seq.size();) {
      if (seq[i].second == kNrRead && i + 1 < seq.size() && seq[i + 1].second == kNrWrite) {
        ++recorded;
        i += 2;
      } else {
        ++cut;
        ++i;
      }
    }
  }
  const uint64_t left_out = (*r)->meta().sampling.left_out_exchanges.value_or(0);
  printf("exchanges: %llu recorded whole, %llu cut, %llu left out (counted) of %d\n",
         static_cast<unsigned long long>(recorded), static_cast<unsigned long long>(cut),
         static_cast<unsigned long long>(left_out), kClients * kExchanges);
  EXPECT_EQ(cut, 0u);
  EXPECT_GT(recorded, 0u);
  EXPECT_GT(left_out, 0u);
  // Every exchange is either recorded whole or counted as left out. A
  // ReadFully that took two reads would count once: the requests are small
  // enough on loopback to arrive whole.
  EXPECT_EQ(recorded + left_out, uint64_t(kClients * kExchanges));
}

}  // namespace
}  // namespace jackdaw
