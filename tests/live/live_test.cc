// jackdaw live under load: groups toggled at runtime through jackdaw ctl,
// the session's socket and pins, garbage on the socket, memory and delay.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "control/control_socket.h"
#include "control/pins.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"
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

// The process listening on `port` (0: none): ServerProcess does not expose
// its pid.
pid_t ListeningPid(uint16_t port) {
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
  };
  void Start(int load_requests, double seconds) { Start(load_requests, seconds, Options{}); }
  void Start(int load_requests, double seconds, const Options& o) {
    ASSERT_TRUE(server_.Start().ok());
    live_ = std::make_unique<Child>();
    std::vector<std::string> live_argv = {testing::BinDir() + "/jackdaw", "live", "--schema", "tcp-threadpool",
                                          "--json", "--duration", std::to_string(seconds)};
    if (o.replace_selection.empty()) {
      live_argv.push_back("--pid");
      live_argv.push_back(std::to_string(ServerPid()));
    }
    live_argv.insert(live_argv.end(), o.replace_selection.begin(), o.replace_selection.end());
    live_argv.insert(live_argv.end(), o.live_extra.begin(), o.live_extra.end());
    ASSERT_TRUE(live_->Spawn(live_argv).ok());
    load_ = std::make_unique<Child>();
    std::vector<std::string> load_argv = {JDW_LOAD_BIN, "--url",  server_.url(), "-n",     std::to_string(load_requests),
                                          "--mix",      o.mix,   "-c",          "2",      "--rate",
                                          o.rate};
    load_argv.insert(load_argv.end(), o.load_extra.begin(), o.load_extra.end());
    ASSERT_TRUE(load_->Spawn(load_argv).ok());
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
  pid_t ServerPid() { return ListeningPid(server_.port()); }
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
                              std::string("filter syscalls nosuchcall"), std::string(5000, 'A'),
                              // no interact group in this session
                              std::string("granularity class")}) {
    auto r = control::SendRequest(s.socket_, garbage);
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto j = nlohmann::json::parse(*r);
    EXPECT_FALSE(j["ok"].get<bool>()) << garbage.substr(0, 40);
    EXPECT_FALSE(j.value("error", "").empty());
  }
  EXPECT_TRUE(s.Ctl("status")["ok"].get<bool>());
  EXPECT_TRUE(s.Ctl("filter syscalls all")["ok"].get<bool>());
}

TEST(Live, InteractGranularitySwitchesAtRuntime) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  LiveSession::Options o;
  o.mix = "C:1,D:1";
  o.live_extra = {"--probes", "sched,syscall,net,interact"};
  ASSERT_NO_FATAL_FAILURE(s.Start(3000, 30, o));
  SleepMs(2000);
  const pid_t pid = s.live_->pid();
  EXPECT_GT(s.Events(s.Ctl("status"), "interact"), 0u) << "no interaction records under load";
  EXPECT_FALSE(s.Ctl("granularity sideways")["ok"].get<bool>());
  EXPECT_FALSE(s.Ctl("granularity class --window 0")["ok"].get<bool>());
  nlohmann::json r = s.Ctl("granularity class --window 1");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["granularity"], "class");
  // Per class, the kernel sums interactions instead of emitting records.
  SleepMs(300);
  const uint64_t stopped = s.Events(s.Ctl("status"), "interact");
  SleepMs(2500);
  nlohmann::json st = s.Ctl("status");
  EXPECT_EQ(s.Events(st, "interact"), stopped) << "interaction records still emitted per class";
  ASSERT_TRUE(st["interact"].contains("last_window")) << st.dump();
  EXPECT_GT(st["interact"]["last_window"]["interactions"].get<uint64_t>(), 0u) << st["interact"].dump();
  EXPECT_NEAR(st["interact"]["last_window"]["window_s"].get<double>(), 1.0, 0.5);
  r = s.Ctl("granularity interaction");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  SleepMs(1500);
  st = s.Ctl("status");
  EXPECT_GT(s.Events(st, "interact"), stopped) << "records did not resume per interaction";
  EXPECT_EQ(st["interact"]["granularity"], "interaction");
  EXPECT_EQ(st["pid"].get<int>(), pid) << "the session restarted";
}

TEST(Live, SelectsTheServerByComm) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  LiveSession::Options o;
  o.mix = "C:1,D:1";
  // Not --pid: the process selection record uses, by name.
  o.replace_selection = {"--comm", "jackdaw-testser"};
  ASSERT_NO_FATAL_FAILURE(s.Start(2000, 20, o));
  SleepMs(4000);
  nlohmann::json st = s.Ctl("status");
  EXPECT_GT(st["requests"].get<uint64_t>(), 50u) << st.dump();
  EXPECT_NE(s.live_->Stderr().find("processes named jackdaw-testser"), std::string::npos) << s.live_->Stderr();
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

TEST(Live, StalePinsOfAKilledSessionAreCleanedByTheNext) {
  JDW_REQUIRE_ROOT();
  std::string stale_pins, stale_socket;
  {
    LiveSession first;
    ASSERT_NO_FATAL_FAILURE(first.Start(100, 30));
    stale_pins = control::kDefaultPinRoot + std::string("/") + std::to_string(first.live_->pid());
    stale_socket = first.socket_;
    ASSERT_TRUE(Exists(stale_pins + "/control"));
    // SIGKILL: no handler runs, the pins and the socket stay behind.
    first.live_->Signal(SIGKILL);
    first.live_->Wait(10000);
    if (first.reader_.joinable()) first.reader_.join();  // it reads the child's stdout until EOF
    first.live_.reset();
    EXPECT_TRUE(Exists(stale_pins)) << "nothing was left to clean (the test would prove nothing)";
  }
  LiveSession next;
  ASSERT_NO_FATAL_FAILURE(next.Start(100, 30));
  EXPECT_FALSE(Exists(stale_pins)) << "the killed session's pins survived the next session's start";
  EXPECT_FALSE(Exists(stale_socket)) << "the killed session's socket survived the next session's start";
  EXPECT_TRUE(Exists(control::kDefaultPinRoot + std::string("/") + std::to_string(next.live_->pid()) + "/control"));
}

// `jackdaw record` serves the same control socket: status, and a group
// disabled and enabled again while it records.
TEST(Live, RecordTakesTheSameControlSocket) {
  JDW_REQUIRE_ROOT();
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  const pid_t pid = ListeningPid(server.port());
  ASSERT_GT(pid, 0) << "no process listens on the test server's port";
  const std::string server_pid = std::to_string(pid);
  const std::string trace = testing::TempPath("ctl-record.jdw");
  Child rec;
  ASSERT_TRUE(rec.Spawn({testing::BinDir() + "/jackdaw", "record", "--pid", server_pid, "--duration", "30", "-o",
                         trace, "-q"})
                  .ok());
  Child load;
  ASSERT_TRUE(load.Spawn({JDW_LOAD_BIN, "--url", server.url(), "-n", "3000", "--mix", "C:1,D:1", "-c", "2", "--rate",
                          "200"})
                  .ok());
  const std::string rec_pid = std::to_string(rec.pid());
  const std::string sock = control::kDefaultRunDir + std::string("/") + rec_pid + ".sock";
  for (int i = 0; i < 200 && !Exists(sock); ++i) SleepMs(50);
  ASSERT_TRUE(Exists(sock)) << rec.Stderr();
  auto ctl = [&](const std::string& line) {
    auto r = control::SendRequest(sock, line);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().message());
    return r.ok() ? nlohmann::json::parse(*r) : nlohmann::json{};
  };
  auto group = [](const nlohmann::json& st, const std::string& g) {
    for (const auto& e : st["groups"])
      if (e["group"] == g) return e;
    return nlohmann::json{};
  };
  SleepMs(1500);
  nlohmann::json st = ctl("status");
  ASSERT_TRUE(st["ok"].get<bool>()) << st.dump();
  EXPECT_GT(st.value("records", 0ull), 0u) << st.dump();
  ASSERT_TRUE(ctl("disable syscall")["ok"].get<bool>());
  SleepMs(300);
  st = ctl("status");
  EXPECT_FALSE(group(st, "syscall").value("enabled", true)) << st.dump();
  const uint64_t stopped = group(st, "syscall").value("events", 0ull);
  SleepMs(800);
  st = ctl("status");
  EXPECT_EQ(group(st, "syscall").value("events", 0ull), stopped) << "syscall records still written after disable";
  ASSERT_TRUE(ctl("enable syscall")["ok"].get<bool>());
  SleepMs(800);
  st = ctl("status");
  EXPECT_TRUE(group(st, "syscall").value("enabled", false)) << st.dump();
  EXPECT_GT(group(st, "syscall").value("events", 0ull), stopped) << "syscall records did not resume";
  rec.Signal(SIGTERM);
  EXPECT_EQ(rec.Wait(10000), 0) << rec.Stderr();
  EXPECT_FALSE(Exists(sock)) << "record's control socket left after SIGTERM";
  EXPECT_FALSE(Exists(control::kDefaultPinRoot + std::string("/") + rec_pid)) << "record's pins left after SIGTERM";
  load.Signal(SIGTERM);
  load.Wait(5000);
  auto dump = testserver::testing::Run({testing::BinDir() + "/jackdaw", "dump", trace, "--summary"});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  unlink(trace.c_str());
}

TEST(Live, MemoryStaysFlatAtSteadyLoad) {
  JDW_REQUIRE_ROOT();
  LiveSession s;
  ASSERT_NO_FATAL_FAILURE(s.Start(100000, 80));
  SleepMs(10000);  // past the warm-up and a full flight-recorder span
  nlohmann::json early = s.Ctl("status");
  const double rss_early = early["memory"]["rss_bytes"].get<double>();
  const uint64_t req_early = early["requests"].get<uint64_t>();
  // A minute of steady load (the figure): what grows is bounded by
  // the model (clusters x sample, the flight recorder's span), not by the
  // requests seen.
  SleepMs(60000);
  nlohmann::json late = s.Ctl("status");
  const double rss = late["memory"]["rss_bytes"].get<double>();
  EXPECT_GT(late["requests"].get<uint64_t>(), req_early + 3000) << "the load did not run";
  EXPECT_LT(rss, rss_early * 1.2 + 8e6) << "rss grew from " << rss_early / 1e6 << " MB to " << rss / 1e6 << " MB";
  RecordProperty("rss_mb_10s", std::to_string(rss_early / 1e6));
  RecordProperty("rss_mb_70s", std::to_string(rss / 1e6));
  RecordProperty("requests_10s_to_70s", std::to_string(late["requests"].get<uint64_t>() - req_early));
}


// A private Prometheus (Debian's package) on loopback, with its own config
// and data directory, scrapes `jackdaw live --metrics` while the load
// driver runs at a fixed rate; the request rate Prometheus computes from
// jackdaw's counter must be the rate the driver's ground truth shows.
class PrivatePrometheus {
 public:
  ~PrivatePrometheus() {
    if (proc_) proc_->Signal(SIGTERM), proc_->Wait(10000);
    if (!dir_.empty()) system(("rm -rf " + dir_).c_str());
  }
  void Start(const std::string& target) {
    char tmpl[] = "/tmp/jdw-prom-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    port_ = FreePort();
    std::ofstream(dir_ + "/prometheus.yml") << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                               "scrape_configs:\n  - job_name: jackdaw\n    static_configs:\n"
                                               "      - targets: ['"
                                            << target << "']\n";
    proc_ = std::make_unique<Child>();
    ASSERT_TRUE(proc_->Spawn({"/usr/bin/prometheus", "--config.file=" + dir_ + "/prometheus.yml",
                              "--storage.tsdb.path=" + dir_ + "/data",
                              "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"})
                    .ok());
    for (int i = 0; i < 300; ++i) {
      auto r = testserver::testing::Get(port_, "/-/ready");
      if (r.ok() && r->status == 200) return;
      SleepMs(100);
    }
    FAIL() << "prometheus did not become ready: " << proc_->Stderr();
  }
  // The value of an instant query at wall time `t` (seconds), or -1.
  double Query(const std::string& promql, double t) {
    std::string enc;
    for (unsigned char c : promql) {
      if (isalnum(c) || c == '_' || c == '.') enc += static_cast<char>(c);
      else enc += fmt::format("%{:02X}", c);
    }
    auto r = testserver::testing::Get(port_, fmt::format("/api/v1/query?query={}&time={:.3f}", enc, t));
    if (!r.ok() || r->status != 200) return -1;
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded() || j["data"]["result"].empty()) return -1;
    return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
  }
  static uint16_t FreePort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
  }

 private:
  std::string dir_;
  uint16_t port_ = 0;
  std::unique_ptr<Child> proc_;
};

TEST(Live, PrometheusScrapesTheRequestRateTheLoadProduced) {
  JDW_REQUIRE_ROOT();
  ASSERT_EQ(access("/usr/bin/prometheus", X_OK), 0) << "prometheus missing: run scripts/install-deps.sh";
  const std::string truth = testing::TempPath("truth.jsonl");
  LiveSession s;
  LiveSession::Options o;
  // Small static pages: the server keeps up with the rate on a loaded host.
  o.mix = "C:1,D:1";
  o.rate = "150";
  o.load_extra = {"--ground-truth", truth};
  o.live_extra = {"--metrics", "127.0.0.1:0"};
  ASSERT_NO_FATAL_FAILURE(s.Start(150 * 30, 60, o));
  std::string target;
  for (int i = 0; i < 100 && target.empty(); ++i) {
    const std::string err = s.live_->Stderr();
    const std::string key = "metrics at http://";
    if (auto at = err.find(key); at != std::string::npos)
      target = err.substr(at + key.size(), err.find("/metrics", at + key.size()) - at - key.size());
    else SleepMs(50);
  }
  ASSERT_FALSE(target.empty()) << s.live_->Stderr();
  // What jackdaw serves is valid exposition format by Prometheus' own linter.
  const uint16_t mport = static_cast<uint16_t>(std::stoi(target.substr(target.rfind(':') + 1)));
  auto scrape = testserver::testing::Get(mport, "/metrics");
  ASSERT_TRUE(scrape.ok());
  EXPECT_EQ(scrape->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string body_path = testing::TempPath("metrics.txt");
  std::ofstream(body_path) << scrape->body;
  auto lint = testserver::testing::Run({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + body_path});
  unlink(body_path.c_str());
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;

  PrivatePrometheus prom;
  ASSERT_NO_FATAL_FAILURE(prom.Start(target));
  ASSERT_EQ(s.load_->Wait(120000), 0) << s.load_->Stderr();
  SleepMs(3000);  // the last requests through the pipeline and one more scrape

  // The driver's completions per wall-clock second, from its ground truth.
  std::vector<double> done;
  std::ifstream in(truth);
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l, nullptr, false);
    if (!j.is_discarded() && j.value("status", 0) == 200) done.push_back(j["recv_wall_ns"].get<double>() / 1e9);
  }
  unlink(truth.c_str());
  ASSERT_GT(done.size(), 4000u);
  std::sort(done.begin(), done.end());
  // A 15 s window well inside the load: its start is past the probes'
  // attach and the model's warm-up, its end before the driver's last request.
  const double window = 15;
  const double t = done.back() - 4;
  ASSERT_GT(t - window, done.front() + 5) << "the load ran too briefly";
  const double driver = double(std::upper_bound(done.begin(), done.end(), t) -
                               std::upper_bound(done.begin(), done.end(), t - window)) /
                        window;
  const double seen = prom.Query("rate(jackdaw_schema_requests_total[15s])", t);
  RecordProperty("driver_req_per_s", std::to_string(driver));
  RecordProperty("prometheus_req_per_s", std::to_string(seen));
  ASSERT_GT(seen, 0) << "prometheus has no rate for jackdaw_schema_requests_total";
  EXPECT_NEAR(seen, driver, driver * 0.10) << "driver " << driver << " req/s, prometheus " << seen << " req/s";
  // The per-cluster counters add up to the same rate.
  const double clusters = prom.Query("sum(rate(jackdaw_cluster_requests_total[15s]))", t);
  EXPECT_NEAR(clusters, driver, driver * 0.10);
  EXPECT_GE(prom.Query("sum(jackdaw_probe_events_total)", t), 1.0);
}

// `jackdaw record --metrics`: the same endpoint, scraped by Prometheus while
// the test server is recorded under load. What it counted must be what the
// trace holds: per probe group, the events of the last scrape are at most
// the trace's records of that group and no fewer than it held a moment
// before (the recording went on between the two), and records and bytes
// written only grow.
TEST(Live, RecordServesPrometheusMetricsThatMatchTheTrace) {
  JDW_REQUIRE_ROOT();
  ASSERT_EQ(access("/usr/bin/prometheus", X_OK), 0) << "prometheus missing: run scripts/install-deps.sh";
  testserver::testing::ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  const std::string trace_path = testing::TempPath("metrics-record.jdw");
  std::string cmd = "ss -Hltnp 'sport = :" + std::to_string(server.port()) + "'";
  auto ss = testserver::testing::Run({"/bin/sh", "-c", cmd});
  const auto at = ss.out.find("pid=");
  ASSERT_NE(at, std::string::npos) << ss.out;
  const std::string pid = std::to_string(std::stoi(ss.out.substr(at + 4)));
  Child rec;
  ASSERT_TRUE(rec.Spawn({testing::BinDir() + "/jackdaw", "record", "--pid", pid, "-q", "-o", trace_path,
                         "--metrics", "127.0.0.1:0", "--duration", "30"})
                  .ok());
  std::string target;
  for (int i = 0; i < 200 && target.empty(); ++i) {
    const std::string err = rec.Stderr();
    const std::string key = "metrics at http://";
    if (auto k = err.find(key); k != std::string::npos)
      target = err.substr(k + key.size(), err.find("/metrics", k + key.size()) - k - key.size());
    else SleepMs(50);
  }
  ASSERT_FALSE(target.empty()) << rec.Stderr();
  const uint16_t mport = static_cast<uint16_t>(std::stoi(target.substr(target.rfind(':') + 1)));
  Child load;
  ASSERT_TRUE(load.Spawn({JDW_LOAD_BIN, "--url", server.url(), "-n", "3000", "--mix", "C:1,D:1", "-c", "2", "--rate",
                          "200"})
                  .ok());
  PrivatePrometheus prom;
  ASSERT_NO_FATAL_FAILURE(prom.Start(target));
  ASSERT_EQ(load.Wait(120000), 0) << load.Stderr();
  SleepMs(2500);  // two more scrapes by Prometheus

  // name{labels} -> value of one scrape.
  auto scrape = [&] {
    std::map<std::string, double> out;
    auto r = testserver::testing::Get(mport, "/metrics");
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return out;
    EXPECT_EQ(r->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    std::stringstream in(r->body);
    for (std::string l; std::getline(in, l);)
      if (!l.empty() && l[0] != '#') out[l.substr(0, l.rfind(' '))] = std::stod(l.substr(l.rfind(' ') + 1));
    return out;
  };
  const auto first = scrape();
  SleepMs(300);
  const auto last = scrape();
  {
    auto r = testserver::testing::Get(mport, "/metrics");
    ASSERT_TRUE(r.ok());
    const std::string body_path = testing::TempPath("record-metrics.txt");
    std::ofstream(body_path) << r->body;
    auto lint = testserver::testing::Run({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + body_path});
    unlink(body_path.c_str());
    EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
  }
  const double now_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(prom.Query("rate(jackdaw_probe_events_total{group=\"syscall\"}[5s])", now_s - 3), 0);
  EXPECT_GT(prom.Query("jackdaw_record_written_bytes_total", now_s - 1), 0);
  EXPECT_GE(prom.Query("jackdaw_ring_fill_ratio", now_s - 1), 0);
  rec.Signal(SIGTERM);
  ASSERT_EQ(rec.Wait(30000), 0) << rec.Stderr();

  ASSERT_GT(last.at("jackdaw_records_total"), 3000);
  EXPECT_GE(last.at("jackdaw_records_total"), first.at("jackdaw_records_total"));
  EXPECT_GE(last.at("jackdaw_record_written_bytes_total"), first.at("jackdaw_record_written_bytes_total"));
  auto reader = trace::TraceReader::Open(trace_path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::map<std::string, double> in_trace;
  std::vector<std::string> kGroupNames;
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) kGroupNames.push_back(trace::GroupName(g));
  double total = 0;
  (*reader)->ForEachRecord([&](const jdw_record_header& h) {
    const trace::EventDesc* d = trace::FindEvent(h.type);
    if (d) in_trace[trace::GroupName(d->group)] += 1;
    total += 1;
  });
  EXPECT_LE(last.at("jackdaw_records_total"), total);
  for (const char* g : {"sched", "syscall"}) {
    const std::string k = std::string("jackdaw_probe_events_total{group=\"") + g + "\"}";
    ASSERT_TRUE(last.count(k)) << k;
    EXPECT_GT(first.at(k), 0) << k;
    EXPECT_LE(last.at(k), in_trace[g]) << k;
    EXPECT_GE(last.at(k), first.at(k)) << k;
    // Losses are cumulative: the footer has at least what was scraped.
    const uint32_t gid = static_cast<uint32_t>(
        std::find(kGroupNames.begin(), kGroupNames.end(), std::string(g)) - kGroupNames.begin());
    uint64_t footer_lost = 0;
    for (const auto& cpu : (*reader)->meta().losses.lost)
      if (gid < cpu.size()) footer_lost += cpu[gid];
    EXPECT_LE(last.at(std::string("jackdaw_probe_lost_total{group=\"") + g + "\"}"), double(footer_lost)) << g;
  }
  unlink(trace_path.c_str());
}

}  // namespace
}  // namespace jackdaw
