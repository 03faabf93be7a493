// jackdaw live under load: groups toggled at runtime through jackdaw ctl,
// the session's socket and pins, garbage on the socket, memory and delay.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "control/control_socket.h"
#include "control/pins.h"
#include "support/test_support.h"
#include "testserver/test_support.h"

namespace jackdaw {
namespace {

using testserver::testing::Child;
using testserver::testing::ServerProcess;

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

bool Exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

// A live session on the test server with the load driver running.
class LiveSession {
 public:
  void Start(int load_requests, double seconds) {
    ASSERT_TRUE(server_.Start().ok());
    load_ = std::make_unique<Child>();
    ASSERT_TRUE(load_->Spawn({JDW_LOAD_BIN, "--url", server_.url(), "-n", std::to_string(load_requests), "--mix",
                              "B:1,C:1,D:1", "-c", "2", "--rate", "100"})
                    .ok());
    live_ = std::make_unique<Child>();
    ASSERT_TRUE(live_->Spawn({testing::BinDir() + "/jackdaw", "live", "--schema", "tcp-threadpool", "--json",
                              "--duration", std::to_string(seconds), "--pid", std::to_string(ServerPid())})
                    .ok());
    // Drain the JSON lines so the session never blocks on its stdout.
    reader_ = std::thread([this] {
      for (;;) {
        std::string l = live_->ReadLine(60000);
        if (l.empty()) break;
        std::lock_guard<std::mutex> g(mu_);
        lines_.push_back(l);
      }
    });
    socket_ = control::kDefaultRunDir + std::string("/") + std::to_string(live_->pid()) + ".sock";
    for (int i = 0; i < 200 && !Exists(socket_); ++i) SleepMs(50);
    ASSERT_TRUE(Exists(socket_)) << live_->Stderr();
  }
  ~LiveSession() {
    if (live_) live_->Signal(SIGTERM), live_->Wait(10000);
    if (reader_.joinable()) reader_.join();
    if (load_) load_->Wait(1000);
  }
  pid_t ServerPid() {
    // ServerProcess does not expose the pid: ask which process listens.
    std::string cmd = "ss -Hltnp 'sport = :" + std::to_string(server_.port()) + "'";
    FILE* p = popen(cmd.c_str(), "r");
    char buf[512] = {0};
    std::string out;
    while (p && fgets(buf, sizeof(buf), p)) out += buf;
    if (p) pclose(p);
    auto at = out.find("pid=");
    return at == std::string::npos ? 0 : std::stoi(out.substr(at + 4));
  }
  nlohmann::json Ctl(const std::string& line) {
    auto r = control::SendRequest(socket_, line);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().message());
    if (!r.ok()) return {};
    return nlohmann::json::parse(*r);
  }
  uint64_t Events(const nlohmann::json& status, const std::string& group) {
    for (const auto& g : status["groups"])
      if (g["group"] == group) return g["events"].get<uint64_t>();
    return 0;
  }
  std::string socket_;
  std::unique_ptr<Child> live_, load_;
  ServerProcess server_;
  std::thread reader_;
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST(Live, GroupsToggleAtRuntimeUnderLoad) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  ASSERT_NO_FATAL_FAILURE(s.Start(3000, 25));
  SleepMs(1500);
  const pid_t pid = s.live_->pid();
  for (const std::string group : {"sched", "syscall", "block", "net"}) {
    nlohmann::json before = s.Ctl("status");
    ASSERT_TRUE(before["ok"].get<bool>());
    const uint64_t other_before = s.Events(before, group == "syscall" ? "sched" : "syscall");
    ASSERT_TRUE(s.Ctl("disable " + group)["ok"].get<bool>());
    // Records already in the ring when the group was disabled are drained
    // by the next poll; after that the count must not move.
    SleepMs(150);
    const uint64_t stopped = s.Events(s.Ctl("status"), group);
    SleepMs(600);
    nlohmann::json during = s.Ctl("status");
    EXPECT_EQ(s.Events(during, group), stopped) << group << " still emits after disable";
    EXPECT_GT(s.Events(during, group == "syscall" ? "sched" : "syscall"), other_before)
        << "disabling " << group << " disturbed the other groups";
    ASSERT_TRUE(s.Ctl("enable " + group)["ok"].get<bool>());
    SleepMs(600);
    nlohmann::json after = s.Ctl("status");
    bool enabled = false;
    for (const auto& g : after["groups"])
      if (g["group"] == group) enabled = g["enabled"].get<bool>();
    EXPECT_TRUE(enabled);
    // Block I/O happens only on page-cache misses; the other groups emit
    // continuously under this load.
    if (group != "block") {
      EXPECT_GT(s.Events(after, group), stopped) << group << " did not resume";
    }
    EXPECT_EQ(after["pid"].get<int>(), pid) << "the session restarted";
  }
  nlohmann::json st = s.Ctl("status");
  EXPECT_GT(st["requests"].get<uint64_t>(), 100u);
  // Pipeline delay: bounded by the reorder window (0.25 s) plus drain and
  // join latencies, whatever the load.
  EXPECT_LT(st["pipeline_delay_max_ms"].get<double>(), 1500.0);
}

TEST(Live, GarbageOnTheSocketGetsAnErrorAndTheSessionGoesOn) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  ASSERT_NO_FATAL_FAILURE(s.Start(400, 10));
  for (std::string garbage : {std::string("\xff\xfe\x00\x01", 4), std::string("disable"), std::string("enable nosuch"),
                              std::string("filter syscalls nosuchcall"), std::string(5000, 'A')}) {
    auto r = control::SendRequest(s.socket_, garbage);
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto j = nlohmann::json::parse(*r);
    EXPECT_FALSE(j["ok"].get<bool>()) << garbage.substr(0, 40);
    EXPECT_FALSE(j.value("error", "").empty());
  }
  EXPECT_TRUE(s.Ctl("status")["ok"].get<bool>());
  EXPECT_TRUE(s.Ctl("filter syscalls all")["ok"].get<bool>());
}

TEST(Live, NonRootUserCannotUseTheControlSocket) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  ASSERT_NO_FATAL_FAILURE(s.Start(200, 10));
  const std::string user = "jdwctl" + std::to_string(getpid() % 100000);
  ASSERT_EQ(system(("useradd -M -r -s /usr/sbin/nologin " + user).c_str()), 0);
  // As that user, `jackdaw ctl` must get nothing from the session (the
  // socket-level refusal is control_test's NonRootCannotConnect).
  auto r = testserver::testing::Run({"/usr/bin/setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups",
                                     testing::BinDir() + "/jackdaw", "ctl", "--session",
                                     std::to_string(s.live_->pid()), "status"});
  system(("userdel " + user).c_str());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out.find("\"ok\": true"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("root"), std::string::npos) << r.err;
  EXPECT_TRUE(s.Ctl("status")["ok"].get<bool>());
}

TEST(Live, PinsAndSocketDisappearAfterSigterm) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  ASSERT_NO_FATAL_FAILURE(s.Start(200, 30));
  const std::string pins = control::kDefaultPinRoot + std::string("/") + std::to_string(s.live_->pid());
  EXPECT_TRUE(Exists(pins + "/control"));
  EXPECT_TRUE(Exists(pins + "/lost"));
  const std::string snap = testing::TempPath("flight.jdw");
  nlohmann::json r = s.Ctl("snapshot " + snap);
  EXPECT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_GT(r.value("records", 0ull), 0u);
  auto dump = testserver::testing::Run({testing::BinDir() + "/jackdaw", "dump", snap, "--summary"});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  unlink(snap.c_str());
  s.live_->Signal(SIGTERM);
  EXPECT_EQ(s.live_->Wait(10000), 0);
  EXPECT_FALSE(Exists(pins)) << "pins left after SIGTERM";
  EXPECT_FALSE(Exists(s.socket_)) << "control socket left after SIGTERM";
  s.live_.reset();
}

TEST(Live, MemoryStaysFlatAtSteadyLoad) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  ASSERT_NO_FATAL_FAILURE(s.Start(100000, 20));
  SleepMs(8000);  // past the warm-up and a full flight-recorder span
  const double early = s.Ctl("status")["memory"]["rss_bytes"].get<double>();
  const uint64_t req_early = s.Ctl("status")["requests"].get<uint64_t>();
  SleepMs(10000);
  nlohmann::json late = s.Ctl("status");
  const double rss = late["memory"]["rss_bytes"].get<double>();
  EXPECT_GT(late["requests"].get<uint64_t>(), req_early + 200) << "the load did not run";
  // Flat: what grows in 10 s of steady load is bounded, not proportional.
  EXPECT_LT(rss, early * 1.2 + 8e6) << "rss grew from " << early / 1e6 << " MB to " << rss / 1e6 << " MB";
  RecordProperty("rss_mb_8s", std::to_string(early / 1e6));
  RecordProperty("rss_mb_18s", std::to_string(rss / 1e6));
}

}  // namespace
}  // namespace jackdaw
