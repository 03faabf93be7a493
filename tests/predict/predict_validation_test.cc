// jackdaw predict against measurement (issue 34): jackdaw-testserver
// recorded with eBPF at 2 closed-loop clients, 1 and 4 clients predicted
// from that trace, then the same load measured at 1 and 4 clients by
// jackdaw-load (its ground truth: client-side latency of every request and
// the run's throughput). Prints predicted against measured per request type.
//
// Asserted: the self-check (the recorded conditions simulated) within 10 %
// of the recording's throughput and CPU utilisation, always; the predicted
// throughputs within 25 % of the measured ones only when the recording had
// the machine nearly to itself (under half a CPU of other work: jackdaw's
// own reader and the load generator take some) and the recorded load,
// measured again unrecorded, moved by less than 10 %. Other work on a shared
// machine (a build beside the test) takes the CPUs in phases, and no model
// of one recording predicts the next phase (measured on this 2-CPU machine
// beside a build: the requests got 0.45 to 1.04 CPU from run to run at the
// same load): then the comparison, with both models of the other work
// (predict prints the second beside the first), is printed, not asserted.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pcap/two_host.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

using testing::RunCommand;

constexpr const char* kMix = "A:1,B:1,D:1";  // 30 ms, 15 ms of CPU, a 5 KB file

std::string Bin(const std::string& name) { return testing::BinDir() + "/" + name; }

bool Accepts(int port) { return testing::AcceptsOnLoopback(port); }

bool WaitAccepts(int port) {
  for (int i = 0; i < 200 && !Accepts(port); i++) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return Accepts(port);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// What jackdaw-load measured: per type, the median latency and the median
// CPU the server reported spending (X-Spin-Cpu-Ns); overall throughput.
struct Measured {
  std::map<std::string, double> p50_ms, cpu_ms;
  double throughput = 0;
};

Measured ReadTruth(const std::string& path) {
  Measured m;
  std::map<std::string, std::vector<double>> lat, cpu;
  uint64_t first = UINT64_MAX, last = 0;
  size_t n = 0;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("status", 0) != 200) continue;
    const std::string type = j["type"];
    lat[type].push_back(j["latency_ns"].get<double>() / 1e6);
    cpu[type].push_back(j["server_cpu_ns"].get<double>() / 1e6);
    first = std::min(first, j["send_mono_ns"].get<uint64_t>());
    last = std::max(last, j["recv_mono_ns"].get<uint64_t>());
    ++n;
  }
  for (auto& [t, v] : lat) m.p50_ms[t] = Median(v);
  for (auto& [t, v] : cpu) m.cpu_ms[t] = Median(v);
  if (last > first) m.throughput = static_cast<double>(n) / (static_cast<double>(last - first) / 1e9);
  return m;
}

Measured Load(int port, int clients, int requests, const std::string& truth) {
  auto r = RunCommand({Bin("jackdaw-load"), "--url", "http://127.0.0.1:" + std::to_string(port), "-n",
                       std::to_string(requests), "-c", std::to_string(clients), "--mix", kMix, "--ground-truth",
                       truth});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  Measured m = ReadTruth(truth);
  std::filesystem::remove(truth);
  return m;
}

nlohmann::json Predict(const std::string& trace, int clients, const std::string& other_work = "share") {
  const std::string out = testing::TempPath("predict-" + std::to_string(clients) + ".json");
  auto r = RunCommand({Bin("jackdaw"), "predict", trace, "--schema", "testserver", "--clients",
                       std::to_string(clients), "--requests", "50000", "--other-work", other_work, "--json", out});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  printf("$ jackdaw predict TRACE --schema testserver --clients %d --other-work %s\n%s%s", clients,
         other_work.c_str(), r.err.c_str(), r.out.c_str());
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  std::filesystem::remove(out);
  return j;
}

// The request type a kind stands for: the one whose server-reported CPU is
// nearest the kind's simulated CPU per request (A 30 ms, B 15 ms, D none).
std::string TypeOf(const nlohmann::json& kind, const Measured& recorded) {
  const double cpu = kind["time_ms"]["cpu"].get<double>();
  std::string best;
  double best_d = 1e300;
  for (const auto& [type, ms] : recorded.cpu_ms)
    if (std::abs(ms - cpu) < best_d) best_d = std::abs(ms - cpu), best = type;
  return best;
}

TEST(PredictValidation, RecordedAtTwoClientsPredictsOneAndFour) {
  JDW_REQUIRE_ROOT();
  const int port = 21000 + getpid() % 4000, quiet_port = port + 4000;
  const std::string trace = testing::TempPath("predict-c2.jdw");
  Measured recorded;
  {
    testing::RecordedServer server(trace, {Bin("jackdaw-testserver"), "--port", std::to_string(port)});
    ASSERT_TRUE(server.ok()) << "the test server did not start under jackdaw record";
    ASSERT_TRUE(WaitAccepts(port));
    recorded = Load(port, 2, 240, testing::TempPath("truth-c2.jsonl"));
    ASSERT_EQ(server.Stop(), 0);
  }
  std::map<int, nlohmann::json> predicted, alone;
  for (int clients : {1, 4}) {
    predicted[clients] = Predict(trace, clients);
    ASSERT_FALSE(predicted[clients].is_discarded());
    // As if the recording's other work (jackdaw's own reader among it) were
    // gone: what an unrecorded server on a quiet machine gets.
    alone[clients] = Predict(trace, clients, "none");
    ASSERT_FALSE(alone[clients].is_discarded());
  }
  std::filesystem::remove(trace);

  // The same server, not recorded, measured at 1 and 4 clients.
  std::map<int, Measured> measured;
  {
    testing::PausedChild server({Bin("jackdaw-testserver"), "--port", std::to_string(quiet_port)});
    server.Go();
    ASSERT_TRUE(WaitAccepts(quiet_port));
    measured[1] = Load(quiet_port, 1, 120, testing::TempPath("truth-c1.jsonl"));
    measured[4] = Load(quiet_port, 4, 300, testing::TempPath("truth-c4.jsonl"));
    measured[2] = Load(quiet_port, 2, 240, testing::TempPath("truth-c2-again.jsonl"));
  }

  const nlohmann::json& check = predicted[4]["self_check"];
  printf("\nself-check (2 clients simulated): throughput %+.1f %%, CPU utilisation %+.1f %%\n",
         100 * check["throughput"]["error"].get<double>(), 100 * check["cpu_utilisation"]["error"].get<double>());
  printf("%-8s %-5s %5s %12s %12s %8s\n", "CLIENTS", "TYPE", "KIND", "PREDICTED", "MEASURED", "ERROR");
  for (int clients : {1, 4}) {
    const nlohmann::json& p = predicted[clients];
    const Measured& m = measured[clients];
    std::map<std::string, bool> shown;
    // Kinds are largest first: a type's first kind is its main one.
    for (const auto& kind : p["kinds"]) {
      const std::string type = TypeOf(kind, recorded);
      if (shown[type] || !m.p50_ms.count(type)) continue;
      shown[type] = true;
      const double pred = kind["p50_ms"].get<double>(), meas = m.p50_ms.at(type);
      printf("%-8d %-5s %5s %9.3f ms %9.3f ms %+7.1f %%\n", clients, type.c_str(),
             kind["kind"].get<std::string>().c_str(), pred, meas, 100 * (pred - meas) / meas);
    }
    const double pred = p["throughput"].get<double>();
    printf("%-8d %-5s %5s %8.1f/s %8.1f/s %+7.1f %%\n", clients, "all", "", pred, m.throughput,
           100 * (pred - m.throughput) / m.throughput);
    if (p.contains("alternative")) {
      const double pt = p["alternative"]["throughput"].get<double>();
      printf("%-8d %-5s %5s %8.1f/s %8.1f/s %+7.1f %%  (other work as threads)\n", clients, "all", "", pt,
             m.throughput, 100 * (pt - m.throughput) / m.throughput);
    }
    const double pn = alone[clients]["throughput"].get<double>();
    printf("%-8d %-5s %5s %8.1f/s %8.1f/s %+7.1f %%  (no other work)\n", clients, "all", "", pn, m.throughput,
           100 * (pn - m.throughput) / m.throughput);
  }

  const double recorded_x = check["throughput"]["recorded"].get<double>();
  const double drift = (measured[2].throughput - recorded_x) / recorded_x;
  printf("2 clients recorded %.1f/s, measured again unrecorded %.1f/s (%+.1f %%)\n", recorded_x,
         measured[2].throughput, 100 * drift);
  EXPECT_LT(std::abs(check["throughput"]["error"].get<double>()), 0.10);
  EXPECT_LT(std::abs(check["cpu_utilisation"]["error"].get<double>()), 0.10);
  const double other_cpus = predicted[4]["other_work"]["cpus"].get<double>();
  if (other_cpus > 0.5) {
    printf("the recording shared the CPUs with other work (%.2f CPUs): predictions not asserted\n", other_cpus);
    return;
  }
  if (std::abs(drift) > 0.10) {
    printf("the machine's other work changed between recording and measurement: predictions not asserted\n");
    return;
  }
  for (int clients : {1, 4}) {
    const double pred = predicted[clients]["throughput"].get<double>(), meas = measured[clients].throughput;
    EXPECT_NEAR(pred, meas, 0.25 * meas) << clients << " clients";
  }
}

}  // namespace
}  // namespace jackdaw
