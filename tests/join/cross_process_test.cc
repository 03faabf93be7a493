// Requests across processes on one host (Magpie §3; HotOS 2003 Figure 2): a
// front jackdaw-testserver calls a backend jackdaw-testserver on loopback,
// both recorded in one trace, joined with the kernel-only tcp-threadpool
// schema. Each client request must come out as one request holding both
// processes' work — its calls with their peer, the backend's CPU — and no
// backend exchange may come out as a request of its own. Once with a
// connection per backend call, once with pooled keep-alive backend
// connections that carry many requests' calls in turn.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pcap/two_host.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

using testing::RunCommand;

std::string Bin(const std::string& name) { return testing::BinDir() + "/" + name; }

bool Accepts(int port) { return testing::AcceptsOnLoopback(port); }

struct TwoTierRun {
  std::map<std::string, int> truth;  // client requests by type
  std::vector<nlohmann::json> requests;
  std::string analyze_out;
};

// Records backend + front (front calls backend), drives `n` requests of
// G (1 call), H (3 calls) and D (no call), analyzes.
void RecordTwoTiers(bool pooled, int n, TwoTierRun* run) {
  const int backend_port = 20000 + getpid() % 5000;
  const int front_port = backend_port + 5000;
  const std::string trace = testing::TempPath(pooled ? "tiers-pooled.jdw" : "tiers.jdw");
  const std::string truth = testing::TempPath("tiers-truth.jsonl");
  const std::string reqs = testing::TempPath("tiers-requests.jsonl");
  const std::string front = Bin("jackdaw-testserver") + " --port " + std::to_string(front_port) + " --backend 127.0.0.1:" +
                            std::to_string(backend_port) + (pooled ? " --backend-pool" : "");
  const std::string backend = Bin("jackdaw-testserver") + " --keepalive --port " + std::to_string(backend_port);
  {
    // One recording of both: the backend first (its "listening on" line
    // is the one RecordedServer waits for), then the front; the shell stops
    // both when the recorder stops it, so no server outlives the test (a
    // leftover would hold ctest's output pipe open).
    testing::RecordedServer servers(
        trace, {"/bin/sh", "-c",
                backend + " & b=$!; sleep 0.5; " + front + " & f=$!; trap 'kill $b $f; wait' INT TERM HUP; wait"});
    ASSERT_TRUE(servers.ok()) << "servers did not start under jackdaw record";
    for (int i = 0; i < 100 && !Accepts(front_port); i++) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(Accepts(front_port)) << "the front server is not listening on " << front_port;
    auto load = RunCommand({Bin("jackdaw-load"), "--url", "http://127.0.0.1:" + std::to_string(front_port), "-n",
                            std::to_string(n), "-c", "2", "--mix", "G:1,H:1,D:1", "--ground-truth", truth});
    ASSERT_EQ(load.exit_code, 0) << load.out << load.err;
    ASSERT_EQ(servers.Stop(), 0);
  }
  RunCommand({"pkill", "-f", "--", "jackdaw-testserver --keepalive --port " + std::to_string(backend_port)});
  std::ifstream tin(truth);
  for (std::string line; std::getline(tin, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    run->truth[j.value("type", std::string())]++;
  }
  auto r = RunCommand({Bin("jackdaw"), "analyze", trace, "--schema", "tcp-threadpool", "--requests", reqs});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  run->analyze_out = r.out + r.err;
  std::ifstream rin(reqs);
  for (std::string line; std::getline(rin, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    if (!j.contains("type")) run->requests.push_back(std::move(j));
  }
  for (const std::string& f : {trace, truth, reqs}) std::filesystem::remove(f);
}

void ExpectOneRequestPerClientRequest(const TwoTierRun& run, int n) {
  ASSERT_EQ(run.truth.at("G") + run.truth.at("H") + run.truth.at("D"), n);
  std::map<size_t, int> by_calls;
  uint32_t front = 0;
  for (const auto& q : run.requests) {
    const uint32_t tgid = q["tgid"].get<uint32_t>();
    if (!front) front = tgid;
    EXPECT_EQ(tgid, front) << "a request whose front is another process (a backend fragment):\n"
                           << q.dump().substr(0, 600);
    const auto& calls = q["calls"];
    by_calls[calls.size()]++;
    for (const auto& c : calls) {
      EXPECT_TRUE(c["answered"].get<bool>()) << c.dump();
      EXPECT_NE(c["peer_tgid"].get<uint32_t>(), 0u) << "the backend is traced: its exchange joins\n" << c.dump();
      EXPECT_FALSE(c["overlapped"].get<bool>()) << c.dump();
    }
    if (!calls.empty()) {
      // Both processes' parts, the front first, the backend one call away,
      // each with CPU of its own.
      ASSERT_EQ(q["processes"].size(), 2u) << q["processes"].dump() << "\n" << q.dump().substr(0, 600);
      EXPECT_EQ(q["processes"][0]["tgid"].get<uint32_t>(), front);
      EXPECT_EQ(q["processes"][0]["tier"].get<uint32_t>(), 0u);
      EXPECT_EQ(q["processes"][1]["tgid"].get<uint32_t>(), calls[0]["peer_tgid"].get<uint32_t>());
      EXPECT_EQ(q["processes"][1]["tier"].get<uint32_t>(), 1u);
      EXPECT_GT(q["processes"][1]["cpu_ns"].get<uint64_t>(), 0u);
    }
  }
  EXPECT_EQ(run.requests.size(), size_t(n)) << run.analyze_out;
  EXPECT_EQ(by_calls[0], run.truth.at("D")) << run.analyze_out;
  EXPECT_EQ(by_calls[1], run.truth.at("G")) << run.analyze_out;
  EXPECT_EQ(by_calls[3], run.truth.at("H")) << run.analyze_out;
}

TEST(CrossProcess, ConnectionPerCallJoinsTheBackendsWorkToItsRequest) {
  JDW_REQUIRE_ROOT();
  TwoTierRun run;
  ASSERT_NO_FATAL_FAILURE(RecordTwoTiers(false, 60, &run));
  ExpectOneRequestPerClientRequest(run, 60);
}

TEST(CrossProcess, PooledBackendConnectionsGiveEachCallToItsWriter) {
  JDW_REQUIRE_ROOT();
  TwoTierRun run;
  ASSERT_NO_FATAL_FAILURE(RecordTwoTiers(true, 60, &run));
  ExpectOneRequestPerClientRequest(run, 60);
}

}  // namespace
}  // namespace jackdaw
