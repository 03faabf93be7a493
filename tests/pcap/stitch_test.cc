// Cross-machine stitching on a real two-tier run: a web tier and a backend
// tier (two jackdaw-testservers) in two network namespaces joined by a veth
// pair, each recorded by its own jackdaw; the client runs on the web host.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pcap/two_host.h"
#include "support/test_support.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

using testing::RunCommand;

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }
std::string Server() { return testing::BinDir() + "/jackdaw-testserver"; }

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

class TwoTier : public ::testing::Test {
 protected:
  void SetUp() override {
    JDW_REQUIRE_ROOT();
    if (access("/usr/bin/ip", X_OK) != 0 && access("/sbin/ip", X_OK) != 0) FAIL() << "iproute2 (ip) missing";
    hosts_ = std::make_unique<testing::TwoHosts>();
    ASSERT_TRUE(hosts_->ok()) << hosts_->error();
    web_ = testing::TempPath("web.jdw");
    db_ = testing::TempPath("db.jdw");
    truth_ = testing::TempPath("truth.jsonl");
    const std::string db_port = "9000", web_port = "8080";
    {
      testing::RecordedServer db(db_, hosts_->In(1, {Server(), "--bind", hosts_->addr(1), "--port", db_port}));
      ASSERT_TRUE(db.ok()) << "backend did not start under jackdaw record";
      testing::RecordedServer web(web_, hosts_->In(0, {Server(), "--bind", hosts_->addr(0), "--port", web_port,
                                                       "--backend", hosts_->addr(1) + ":" + db_port}));
      ASSERT_TRUE(web.ok()) << "web tier did not start under jackdaw record";
      auto load = RunCommand(hosts_->In(0, {testing::BinDir() + "/jackdaw-load", "--url",
                                            "http://" + hosts_->addr(0) + ":" + web_port, "-n", "30", "--mix",
                                            "G:1,H:1", "--ground-truth", truth_}));
      ASSERT_EQ(load.exit_code, 0) << load.out << load.err;
      ASSERT_EQ(web.Stop(), 0);
      ASSERT_EQ(db.Stop(), 0);
    }
    std::ifstream in(truth_);
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << line;
      truth_types_[j.value("type", std::string())]++;
    }
  }
  void TearDown() override {
    hosts_.reset();
    for (const std::string& f : {web_, db_, truth_, out_}) std::filesystem::remove(f);
  }

  std::unique_ptr<testing::TwoHosts> hosts_;
  std::string web_, db_, truth_;
  std::string out_ = testing::TempPath("stitch.json");
  std::map<std::string, int> truth_types_;
};

TEST_F(TwoTier, OneEndToEndRequestPerClientRequestWithItsBackendCalls) {
  ASSERT_EQ(truth_types_["G"] + truth_types_["H"], 30);
  auto r = RunCommand({Jackdaw(), "stitch", web_, db_, "--schema", "testserver", "--json", out_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = ReadJson(out_);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["requests"].size(), 30u) << r.out;
  std::map<size_t, int> by_calls;
  std::map<int, std::set<size_t>> calls_in_cluster;
  for (const auto& q : j["requests"]) {
    const auto& frags = q["fragments"];
    ASSERT_GE(frags.size(), 2u);
    EXPECT_EQ(frags[0]["trace"], 0) << "the root is the web tier's fragment";
    for (size_t k = 1; k < frags.size(); ++k) {
      EXPECT_EQ(frags[k]["trace"], 1);
      EXPECT_EQ(frags[k]["caller"], 0);
    }
    by_calls[frags.size() - 1]++;
    calls_in_cluster[q["cluster"].get<int>()].insert(frags.size() - 1);
  }
  EXPECT_EQ(by_calls[1], truth_types_["G"]) << r.out;
  EXPECT_EQ(by_calls[3], truth_types_["H"]) << r.out;
  EXPECT_EQ(by_calls.size(), 2u) << r.out;
  // Clusters separate /book from /categories: none mixes the two.
  EXPECT_GE(calls_in_cluster.size(), 2u) << r.out;
  for (const auto& [c, calls] : calls_in_cluster) EXPECT_EQ(calls.size(), 1u) << "cluster " << c << "\n" << r.out;
  // Each backend call is its own backend fragment, stitched exactly once.
  size_t backend_fragments = 0;
  std::set<int> seen_backend_ids;
  for (const auto& q : j["requests"])
    for (size_t k = 1; k < q["fragments"].size(); ++k) {
      ++backend_fragments;
      EXPECT_TRUE(seen_backend_ids.insert(q["fragments"][k]["request_id"].get<int>()).second);
    }
  EXPECT_EQ(backend_fragments, size_t(truth_types_["G"] + 3 * truth_types_["H"]));
  // Both hosts share this machine's clock: the estimate must be near 0.
  const auto& off = j["traces"][1]["offset"];
  EXPECT_TRUE(off["estimated"].get<bool>());
  EXPECT_LT(std::abs(off["offset_ns"].get<int64_t>()), 50'000) << r.out;
}

// Both tiers run the same binary, so each recorder's USDT probes fire in
// both servers: each trace must hold only its own server's probe events (a
// leak once put the backend's dispatches into the web tier's requests).
TEST_F(TwoTier, EachRecordingHoldsOnlyItsOwnServersProbeEvents) {
  std::set<uint32_t> tgids[2];
  for (int k = 0; k < 2; ++k) {
    auto r = trace::TraceReader::Open(k == 0 ? web_ : db_);
    ASSERT_TRUE(r.ok()) << r.status().message();
    (*r)->ForEachRecord([&](const jdw_record_header& h) {
      if (h.type == JDW_EVENT_USDT) tgids[k].insert(h.tgid);
    });
    EXPECT_EQ(tgids[k].size(), 1u) << "trace " << k << " holds probe events of " << tgids[k].size()
                                   << " processes";
  }
  EXPECT_NE(tgids[0], tgids[1]);
}

TEST_F(TwoTier, ArtificialClockOffsetIsRecovered) {
  for (int64_t shift : {int64_t{1'234'567'890}, int64_t{-987'654'321}}) {
    auto r = RunCommand({Jackdaw(), "stitch", web_, db_, "--schema", "testserver", "--no-model", "--json", out_,
                         "--clock-shift", "1=" + std::to_string(shift)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const nlohmann::json j = ReadJson(out_);
    const auto& off = j["traces"][1]["offset"];
    ASSERT_TRUE(off["estimated"].get<bool>()) << r.out;
    EXPECT_LT(std::abs(off["offset_ns"].get<int64_t>() - shift), 50'000) << r.out;
    EXPECT_EQ(j["requests"].size(), 30u);
  }
}

TEST_F(TwoTier, TracesThatShareNoConnectionAreUnstitchable) {
  // The backend tier of this run against a web tier recorded on its own
  // (loopback, no backend): no segment of one is in the other.
  const std::string lone = testing::TempPath("lone.jdw");
  {
    testing::RecordedServer s(lone, {Server(), "--port", "0"});
    ASSERT_TRUE(s.ok());
    auto load = RunCommand({testing::BinDir() + "/jackdaw-load", "--url",
                            "http://127.0.0.1:" + std::to_string(s.port()), "-n", "10", "--mix", "D"});
    ASSERT_EQ(load.exit_code, 0) << load.err;
    ASSERT_EQ(s.Stop(), 0);
  }
  auto r = RunCommand({Jackdaw(), "stitch", lone, db_, "--schema", "testserver", "--json", out_});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("unstitchable"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out_)) << "nothing merged, nothing written";
  std::filesystem::remove(lone);
}

}  // namespace
}  // namespace jackdaw
