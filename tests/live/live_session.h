// Shared by the jackdaw live integration tests: a live session on the test
// server under load, driven through its control socket.
#ifndef JACKDAW_TESTS_LIVE_LIVE_SESSION_H_
#define JACKDAW_TESTS_LIVE_LIVE_SESSION_H_

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "control/control_socket.h"
#include "support/test_support.h"
#include "testserver/test_support.h"

namespace jackdaw {
namespace live_testing {

using testserver::testing::Child;
using testserver::testing::ServerProcess;

inline void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

inline bool Exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

// The process listening on `port` (0: none): ServerProcess does not expose
// its pid.
inline pid_t ListeningPid(uint16_t port) {
  std::string cmd = "ss -Hltnp 'sport = :" + std::to_string(port) + "'";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512] = {0};
  std::string out;
  while (p && fgets(buf, sizeof(buf), p)) out += buf;
  if (p) pclose(p);
  auto at = out.find("pid=");
  return at == std::string::npos ? 0 : std::stoi(out.substr(at + 4));
}

// A live session on the test server with the load driver running.
class LiveSession {
 public:
  struct Options {
    std::string mix = "B:1,C:1,D:1";
    std::string rate = "100";
    std::vector<std::string> load_extra;  // more jackdaw-load arguments
    std::vector<std::string> live_extra;  // more jackdaw live arguments
    std::vector<std::string> replace_selection;  // instead of --pid SERVER
    bool second_server = false;  // another server and driver, also selected by --pid
    // Start the driver once the session's probes are attached (its first
    // JSON line is out: the control socket comes before the attach), so
    // that every request it sends is modelled.
    bool load_when_ready = false;
  };
  void Start(int load_requests, double seconds) { Start(load_requests, seconds, Options{}); }
  void Start(int load_requests, double seconds, const Options& o) {
    ASSERT_TRUE(server_.Start().ok());
    if (o.second_server) {
      ASSERT_TRUE(server2_.Start().ok());
    }
    live_ = std::make_unique<Child>();
    std::vector<std::string> live_argv = {testing::BinDir() + "/jackdaw", "live", "--schema", "tcp-threadpool",
                                          "--json", "-", "--duration", std::to_string(seconds)};
    if (o.replace_selection.empty()) {
      live_argv.push_back("--pid");
      live_argv.push_back(std::to_string(ServerPid()));
      if (o.second_server) {
        live_argv.push_back("--pid");
        live_argv.push_back(std::to_string(ListeningPid(server2_.port())));
      }
    }
    live_argv.insert(live_argv.end(), o.replace_selection.begin(), o.replace_selection.end());
    live_argv.insert(live_argv.end(), o.live_extra.begin(), o.live_extra.end());
    ASSERT_TRUE(live_->Spawn(live_argv).ok());
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
    const auto await_socket = [&] {
      for (int i = 0; i < 200 && !Exists(socket_); ++i) SleepMs(50);
    };
    if (o.load_when_ready) {
      for (int i = 0; i < 200; ++i) {
        {
          std::lock_guard<std::mutex> g(mu_);
          if (!lines_.empty()) break;
        }
        SleepMs(50);
      }
    }
    load_ = std::make_unique<Child>();
    std::vector<std::string> load_argv = {JDW_LOAD_BIN, "--url",  server_.url(), "-n",     std::to_string(load_requests),
                                          "--mix",      o.mix,   "-c",          "2",      "--rate",
                                          o.rate};
    load_argv.insert(load_argv.end(), o.load_extra.begin(), o.load_extra.end());
    ASSERT_TRUE(load_->Spawn(load_argv).ok());
    if (o.second_server) {
      load2_ = std::make_unique<Child>();
      load_argv[2] = server2_.url();
      ASSERT_TRUE(load2_->Spawn(load_argv).ok());
    }
    await_socket();
    ASSERT_TRUE(Exists(socket_)) << live_->Stderr();
  }
  ~LiveSession() {
    if (live_) live_->Signal(SIGTERM), live_->Wait(10000);
    if (reader_.joinable()) reader_.join();
    if (load_) load_->Wait(1000);
    if (load2_) load2_->Wait(1000);
  }
  pid_t ServerPid() { return ListeningPid(server_.port()); }
  nlohmann::json Ctl(const std::string& line) {
    auto r = control::SendRequest(socket_, line);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().message());
    if (!r.ok()) return {};
    return nlohmann::json::parse(*r);
  }
  uint64_t Events(const nlohmann::json& status, const std::string& group) { return Field(status, group, "events"); }
  // The timestamp of the group's newest record the session has read
  // (CLOCK_MONOTONIC, the records' own clock; 0: none yet).
  uint64_t LastEventNs(const nlohmann::json& status, const std::string& group) {
    return Field(status, group, "last_event_ns");
  }
  uint64_t Field(const nlohmann::json& status, const std::string& group, const char* key) {
    for (const auto& g : status["groups"])
      if (g["group"] == group) return g[key].get<uint64_t>();
    return 0;
  }
  std::string socket_;
  // The JSON lines the session printed so far.
  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> g(mu_);
    return lines_;
  }
  std::unique_ptr<Child> live_, load_, load2_;
  ServerProcess server_, server2_;
  std::thread reader_;
  std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace live_testing
}  // namespace jackdaw

#endif  // JACKDAW_TESTS_LIVE_LIVE_SESSION_H_
