// Integration tests of jackdaw-load against a real jackdaw-testserver.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <sstream>

#include "testserver/load.h"
#include "testserver/request_types.h"
#include "testserver/test_support.h"

namespace jackdaw::testserver {
namespace {

using ::testing::HasSubstr;
using testing::RunResult;
using testing::ServerProcess;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Body size each type must return.
size_t ExpectedBytes(char letter) {
  const RequestType& t = *TypeByLetter(letter);
  return t.kind == RequestKind::kStatic ? t.file_bytes : t.name.size() + 4;  // "<name> ok\n"
}

TEST(LoadTest, GroundTruthListsEveryRequestExactlyOnce) {
  ServerProcess server;
  ASSERT_TRUE(server.Start({"--iters-per-ms", "20000"}).ok());  // short spins: fast test
  const testing::ScopedPath truth_file("truth.jsonl");
  const std::string& truth = truth_file.path();
  const std::string mix = "A:1,B:1,C:1,D:1,E:1,F:1";
  RunResult r = testing::Run({JDW_LOAD_BIN, "--url", server.url(), "-n", "50", "-c", "5",
                              "--mix", mix, "--seed", "7", "--ground-truth", truth});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("requests: 50  errors: 0"));
  EXPECT_THAT(r.out, HasSubstr("p99 ms"));

  std::vector<std::string> lines = Lines(testing::ReadFileOrEmpty(truth));
  ASSERT_EQ(lines.size(), 50u);
  auto sequence = GenerateSequence(*ParseMix(mix), 50, 7);
  std::set<uint64_t> seqs, req_ids;
  std::set<int> clients;
  std::set<std::pair<int, int>> ports;  // (client, local_port)
  std::set<char> types;
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json j = nlohmann::json::parse(lines[i]);
    SCOPED_TRACE(lines[i]);
    uint64_t seq = j["seq"];
    EXPECT_EQ(seq, i) << "records are in sequence order";
    seqs.insert(seq);
    std::string type = j["type"];
    ASSERT_EQ(type.size(), 1u);
    EXPECT_EQ(type[0], sequence[seq]->letter) << "type follows --mix/--seed";
    types.insert(type[0]);
    EXPECT_EQ(j["url"], server.url() + std::string(TypeByLetter(type[0])->path));
    EXPECT_EQ(j["status"], 200);
    EXPECT_EQ(j["error"], "");
    EXPECT_EQ(j["bytes"], ExpectedBytes(type[0]));
    EXPECT_GT(j["wire_bytes"].get<uint64_t>(), j["bytes"].get<uint64_t>());
    uint64_t send = j["send_mono_ns"], recv = j["recv_mono_ns"];
    uint64_t send_wall = j["send_wall_ns"], recv_wall = j["recv_wall_ns"];
    EXPECT_LT(send, recv);
    EXPECT_EQ(j["latency_ns"].get<uint64_t>(), recv - send);
    EXPECT_LT(send_wall, recv_wall);
    // The two clocks tell the same story to within a millisecond.
    EXPECT_NEAR(static_cast<double>(recv_wall - send_wall), static_cast<double>(recv - send), 1e6);
    EXPECT_EQ(j["sched_mono_ns"], 0u);
    int client = j["client"];
    EXPECT_GE(client, 0);
    EXPECT_LT(client, 5);
    clients.insert(client);
    int port = j["local_port"];
    EXPECT_GT(port, 0);
    ports.insert({client, port});
    uint64_t req_id = j["req_id"];
    EXPECT_GT(req_id, 0u);
    req_ids.insert(req_id);
    const bool spins = TypeByLetter(type[0])->kind != RequestKind::kStatic;
    EXPECT_EQ(j["server_cpu_ns"].get<uint64_t>() > 0, spins);
  }
  EXPECT_EQ(seqs.size(), 50u);
  EXPECT_EQ(req_ids.size(), 50u) << "each request reached the server exactly once";
  EXPECT_EQ(ports.size(), 50u) << "a new connection per request";
  // Every client normally serves some requests; a thread starved at start on
  // a busy machine may not, so only "more than one" is firm.
  EXPECT_GE(clients.size(), 2u);
  EXPECT_GE(types.size(), 5u);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(LoadTest, CsvGroundTruthHasHeaderAndOneRowPerRequest) {
  ServerProcess server;
  ASSERT_TRUE(server.Start({"--iters-per-ms", "1000"}).ok());
  const testing::ScopedPath truth_file("truth.csv");
  const std::string& truth = truth_file.path();
  RunResult r = testing::Run({JDW_LOAD_BIN, "--url", server.url(), "-n", "12", "--mix",
                              "C:1,D:1", "--format", "csv", "--ground-truth", truth});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(testing::ReadFileOrEmpty(truth));
  ASSERT_EQ(lines.size(), 13u);
  EXPECT_EQ(lines[0] + "\n", CsvHeader());
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind(std::to_string(i - 1) + ",", 0), 0u) << lines[i];
    EXPECT_THAT(lines[i], ::testing::AnyOf(HasSubstr(",C,"), HasSubstr(",D,")));
    EXPECT_THAT(lines[i], ::testing::AnyOf(HasSubstr(",200,12288,"), HasSubstr(",200,5120,")));
  }
  EXPECT_EQ(server.Stop(), 0);
}

TEST(LoadTest, RateSchedulesArrivals) {
  ServerProcess server;
  ASSERT_TRUE(server.Start({"--iters-per-ms", "1000"}).ok());
  const testing::ScopedPath truth_file("truth.jsonl");
  const std::string& truth = truth_file.path();
  RunResult r = testing::Run({JDW_LOAD_BIN, "--url", server.url(), "-n", "6", "--mix", "D",
                              "--rate", "50", "--ground-truth", truth});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("rate: 50/s"));
  std::vector<std::string> lines = Lines(testing::ReadFileOrEmpty(truth));
  ASSERT_EQ(lines.size(), 6u);
  uint64_t sched0 = nlohmann::json::parse(lines[0])["sched_mono_ns"];
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json j = nlohmann::json::parse(lines[i]);
    uint64_t sched = j["sched_mono_ns"], send = j["send_mono_ns"];
    EXPECT_EQ(sched - sched0, i * 20000000u);  // 1/50 s apart
    EXPECT_GE(send, sched);
  }
  EXPECT_EQ(server.Stop(), 0);
}

TEST(LoadTest, KeepAliveReusesOneConnectionPerClient) {
  ServerProcess server;
  ASSERT_TRUE(server.Start({"--keepalive", "--iters-per-ms", "1000"}).ok());
  const testing::ScopedPath truth_file("truth.jsonl");
  const std::string& truth = truth_file.path();
  RunResult r = testing::Run({JDW_LOAD_BIN, "--url", server.url(), "-n", "20", "-c", "2",
                              "--mix", "B:1,D:1", "--keepalive", "--ground-truth", truth});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, std::set<int>> ports;  // client -> local ports
  std::vector<std::string> lines = Lines(testing::ReadFileOrEmpty(truth));
  EXPECT_EQ(lines.size(), 20u);
  for (const std::string& line : lines) {
    nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["status"], 200);
    ports[j["client"].get<int>()].insert(j["local_port"].get<int>());
  }
  // On a busy machine one client may take every request before the other
  // starts, so only the per-client property is checked.
  ASSERT_GE(ports.size(), 1u);
  for (const auto& [client, set] : ports) EXPECT_EQ(set.size(), 1u) << "client " << client;
  EXPECT_EQ(server.Stop(), 0);
}

TEST(LoadTest, BadMixIsRejectedWithOneLine) {
  RunResult r = testing::Run({JDW_LOAD_BIN, "--url", "http://127.0.0.1:1", "--mix", "A:x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "jackdaw-load: bad --mix 'A:x': expected TYPE:WEIGHT[,TYPE:WEIGHT...] with TYPE in "
            "A-H and WEIGHT > 0\n");
  r = testing::Run({JDW_LOAD_BIN, "--mix", "A:1,Z:2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("bad --mix 'Z:2'"));
}

TEST(LoadTest, ConnectionRefusedIsReportedClearly) {
  // A port nobody listens on: bind one, note it, close it.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string port = std::to_string(ntohs(addr.sin_port));
  close(fd);
  RunResult r = testing::Run({JDW_LOAD_BIN, "--url", "http://127.0.0.1:" + port, "-n", "5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "jackdaw-load: cannot connect to 127.0.0.1:" + port +
                       ": connection refused (is jackdaw-testserver running there? it prints "
                       "\"listening on ADDR:PORT\" once ready)\n");
}

TEST(LoadTest, BadArgumentsExitOne) {
  EXPECT_EQ(testing::Run({JDW_LOAD_BIN, "--url", "ftp://x"}).exit_code, 1);
  EXPECT_EQ(testing::Run({JDW_LOAD_BIN, "-c", "0"}).exit_code, 1);
  EXPECT_EQ(testing::Run({JDW_LOAD_BIN, "--format", "xml"}).exit_code, 1);
}

TEST(LoadTest, HelpTeachesWithExamples) {
  RunResult r = testing::Run({JDW_LOAD_BIN, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples:"));
  EXPECT_THAT(r.out, HasSubstr("--ground-truth"));
  EXPECT_THAT(r.out, HasSubstr("A:0.5,B:0.5"));
}

}  // namespace
}  // namespace jackdaw::testserver
