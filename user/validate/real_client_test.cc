// The suite's clients against a minimal loopback server written here: the
// ground truth they record must say what was sent on which connection.
#include "validate/real_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "validate/experiment.h"
#include "validate/pg_wire.h"

namespace jackdaw::validate {
namespace {

// Answers HTTP GETs (200 with the size from the kinds, 404 for the 404
// kind), memcached get/set, redis SET/GET (a real store: a GET of a key
// never SET is nil), or PostgreSQL's startup and simple queries (the
// kind's tag, one row of its bytes), one thread per connection.
class TinyServer {
 public:
  TinyServer(Protocol p, std::vector<RequestKind> kinds) : proto_(p), kinds_(std::move(kinds)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(fd_, 64);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        ++connections_;
        ++active_;
        std::thread([this, c] {
          Serve(c);
          --active_;
        }).detach();
      }
    });
  }
  ~TinyServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    acceptor_.join();
    while (active_ > 0) usleep(1000);  // clients have closed: their threads end
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_; }

 private:
  static std::string Msg(char type, const std::string& body) {
    const uint32_t n = uint32_t(body.size() + 4);
    return std::string(1, type) + char(n >> 24) + char(n >> 16) + char(n >> 8) + char(n) + body;
  }
  // One PostgreSQL message off buf: false when incomplete; *reply empty and
  // *close_after set on Terminate.
  bool ServePg(std::string& buf, bool& started, std::string* reply, bool* close_after) {
    if (!started) {
      if (buf.size() < 4) return false;
      const uint32_t len = uint32_t(uint8_t(buf[0])) << 24 | uint32_t(uint8_t(buf[1])) << 16 |
                           uint32_t(uint8_t(buf[2])) << 8 | uint8_t(buf[3]);
      if (buf.size() < len) return false;
      buf.erase(0, len);
      started = true;
      *reply = Msg('R', std::string(4, '\0')) + Msg('S', std::string("a\0b\0", 4)) + Msg('Z', "I");
      return true;
    }
    PgMessage m;
    auto whole = PgTakeMessage(&buf, &m);
    if (!whole.ok() || !*whole) return false;
    if (m.type == 'X') {
      *close_after = true;
      return true;
    }
    const std::string sql = m.body.substr(0, m.body.find('\0'));
    for (const auto& k : kinds_) {
      if (k.target != sql) continue;
      if (k.bytes) *reply += Msg('D', std::string(k.bytes, 'r'));
      *reply += Msg('C', k.op + '\0');
    }
    *reply += Msg('Z', "I");
    return true;
  }
  // One RESP array of bulk strings off buf: false when incomplete.
  bool ServeRedis(std::string& buf, std::string* reply) {
    size_t pos = 0;
    auto line = [&](std::string* out) {
      const size_t eol = buf.find("\r\n", pos);
      if (eol == std::string::npos) return false;
      *out = buf.substr(pos, eol - pos);
      pos = eol + 2;
      return true;
    };
    std::string l;
    if (!line(&l) || l.empty() || l[0] != '*') return false;
    std::vector<std::string> args(std::stoul(l.substr(1)));
    for (auto& a : args) {
      if (!line(&l) || l.empty() || l[0] != '$') return false;
      const size_t n = std::stoul(l.substr(1));
      if (buf.size() < pos + n + 2) return false;
      a = buf.substr(pos, n);
      pos += n + 2;
    }
    buf.erase(0, pos);
    std::lock_guard<std::mutex> lock(store_mu_);
    if (args.size() == 3 && args[0] == "SET") {
      store_[args[1]] = args[2];
      *reply = "+OK\r\n";
    } else if (args.size() == 2 && args[0] == "GET") {
      auto it = store_.find(args[1]);
      *reply = it == store_.end() ? "$-1\r\n"
                                  : "$" + std::to_string(it->second.size()) + "\r\n" + it->second + "\r\n";
    } else {
      *reply = "-ERR unknown command\r\n";
    }
    return true;
  }
  void Serve(int c) {
    std::string buf;
    bool pg_started = false;
    char tmp[65536];
    for (;;) {
      ssize_t n = recv(c, tmp, sizeof(tmp), 0);
      if (n <= 0) break;
      buf.append(tmp, size_t(n));
      while (true) {
        std::string reply;
        bool close_after = false;
        if (proto_ == Protocol::kPostgres) {
          if (!ServePg(buf, pg_started, &reply, &close_after)) break;
        } else if (proto_ == Protocol::kRedis) {
          if (!ServeRedis(buf, &reply)) break;
        } else if (proto_ == Protocol::kHttp) {
          auto end = buf.find("\r\n\r\n");
          if (end == std::string::npos) break;
          const std::string req = buf.substr(0, end);
          buf.erase(0, end + 4);
          const std::string path = req.substr(4, req.find(' ', 4) - 4);
          close_after = req.find("Connection: close") != std::string::npos;
          size_t bytes = 0;
          int status = 404;
          for (const auto& k : kinds_)
            if (k.target == path && k.http_status == 200) bytes = k.bytes, status = 200;
          reply = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(bytes) +
                  "\r\n\r\n" + std::string(bytes, 'b');
        } else {
          auto eol = buf.find("\r\n");
          if (eol == std::string::npos) break;
          const std::string line = buf.substr(0, eol);
          if (line.rfind("set ", 0) == 0) {
            size_t len = std::stoul(line.substr(line.rfind(' ') + 1));
            if (buf.size() < eol + 2 + len + 2) break;
            buf.erase(0, eol + 2 + len + 2);
            reply = "STORED\r\n";
          } else {
            buf.erase(0, eol + 2);
            const std::string key = line.substr(4);
            size_t bytes = 0;
            for (const auto& k : kinds_)
              if (k.target == key) bytes = k.bytes;
            reply = "VALUE " + key + " 0 " + std::to_string(bytes) + "\r\n" + std::string(bytes, 'v') +
                    "\r\nEND\r\n";
          }
        }
        send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
        if (close_after) {
          close(c);
          return;
        }
      }
    }
    close(c);
  }
  Protocol proto_;
  std::vector<RequestKind> kinds_;
  std::mutex store_mu_;
  std::map<std::string, std::string> store_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<int> active_{0};
  std::thread acceptor_;
};

std::vector<RequestKind> HttpKinds() {
  return {{"5K", "/5k.html", "get", 5120, 200}, {"256K", "/256k.html", "get", 262144, 200},
          {"404", "/missing.html", "get", 0, 404}};
}

std::string TruthPath(const char* stem) {
  return (std::filesystem::temp_directory_path() / (std::string(stem) + std::to_string(getpid()))).string();
}

TEST(RealClient, KeepAliveReusesOneConnectionPerClient) {
  TinyServer s(Protocol::kHttp, HttpKinds());
  ClientOptions o;
  o.port = s.port();
  o.kinds = HttpKinds();
  o.clients = 3;
  o.requests = 30;
  o.think_us = 0;
  o.truth_path = TruthPath("jdw_truth_ka");
  ASSERT_TRUE(RunClients(o).ok());
  auto truth = ReadGroundTruth(o.truth_path);
  ASSERT_TRUE(truth.ok());
  ASSERT_EQ(truth->size(), 30u);
  std::map<std::string, int> per_kind;
  std::set<uint16_t> ports;
  for (const auto& t : *truth) {
    ++per_kind[t.type];
    ports.insert(t.client_port);
    EXPECT_LT(t.send_mono_ns, t.recv_mono_ns);
  }
  EXPECT_EQ(per_kind, (std::map<std::string, int>{{"404", 10}, {"256K", 10}, {"5K", 10}}));
  EXPECT_EQ(ports.size(), 3u);
  EXPECT_EQ(s.connections(), 3);
  std::filesystem::remove(o.truth_path);
}

TEST(RealClient, ConnectionPerRequestUsesANewPortEachTime) {
  TinyServer s(Protocol::kHttp, HttpKinds());
  ClientOptions o;
  o.port = s.port();
  o.kinds = HttpKinds();
  o.clients = 2;
  o.requests = 12;
  o.keep_alive = false;
  o.think_us = 0;
  o.truth_path = TruthPath("jdw_truth_close");
  ASSERT_TRUE(RunClients(o).ok());
  auto truth = ReadGroundTruth(o.truth_path);
  ASSERT_TRUE(truth.ok());
  ASSERT_EQ(truth->size(), 12u);
  EXPECT_EQ(s.connections(), 12);
  std::filesystem::remove(o.truth_path);
}

TEST(RealClient, MemcacheGetsAndSetsAndTheSameSequenceTwice) {
  std::vector<RequestKind> kinds = {{"get-small", "small", "get", 100, 0}, {"set-50K", "up", "set", 51200, 0}};
  TinyServer s(Protocol::kMemcache, kinds);
  ASSERT_TRUE(PrepareMemcache(s.port(), kinds).ok());
  ClientOptions o;
  o.protocol = Protocol::kMemcache;
  o.port = s.port();
  o.kinds = kinds;
  o.clients = 1;
  o.requests = 10;
  o.think_us = 0;
  std::vector<std::string> seqs;
  for (int i = 0; i < 2; ++i) {
    o.truth_path = TruthPath("jdw_truth_mc");
    ASSERT_TRUE(RunClients(o).ok());
    auto truth = ReadGroundTruth(o.truth_path);
    ASSERT_TRUE(truth.ok());
    ASSERT_EQ(truth->size(), 10u);
    std::string seq;
    for (const auto& t : *truth) seq += t.type + ",";
    seqs.push_back(seq);
    std::filesystem::remove(o.truth_path);
  }
  EXPECT_EQ(seqs[0], seqs[1]);
}

TEST(RealClient, PostgresQueriesOnPersistentConnectionsStartupNotInTheTruth) {
  std::vector<RequestKind> kinds = {{"point", "SELECT 1", "SELECT 1", 0, 0},
                                    {"scan", "SELECT big", "SELECT 1", 4000, 0},
                                    {"insert1", "INSERT x", "INSERT 0 1", 0, 0}};
  TinyServer s(Protocol::kPostgres, kinds);
  ClientOptions o;
  o.protocol = Protocol::kPostgres;
  o.port = s.port();
  o.kinds = kinds;
  o.clients = 2;
  o.requests = 12;
  o.think_us = 0;
  o.truth_path = TruthPath("jdw_truth_pg");
  Status st = RunClients(o);
  ASSERT_TRUE(st.ok()) << st.message();
  auto truth = ReadGroundTruth(o.truth_path);
  ASSERT_TRUE(truth.ok());
  ASSERT_EQ(truth->size(), 12u);  // queries only: the startup exchanges are the connections'
  std::map<std::string, int> per_kind;
  std::set<uint16_t> ports;
  for (const auto& t : *truth) ++per_kind[t.type], ports.insert(t.client_port);
  EXPECT_EQ(per_kind, (std::map<std::string, int>{{"insert1", 4}, {"point", 4}, {"scan", 4}}));
  EXPECT_EQ(ports.size(), 2u);
  EXPECT_EQ(s.connections(), 2);
  std::filesystem::remove(o.truth_path);
  // A tag other than the kind's fails the run.
  o.kinds[2].op = "INSERT 0 500";
  st = RunClients(o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("expected INSERT 0 500"), std::string::npos) << st.message();
  std::filesystem::remove(o.truth_path);
}

TEST(RealClient, RedisGetsOfStoredValuesAndSetsOnPersistentConnections) {
  std::vector<RequestKind> kinds = {{"get-small", "small", "get", 100, 0},
                                    {"get-100K", "big", "get", 100 * 1024, 0},
                                    {"set-50K", "up", "set", 50 * 1024, 0}};
  TinyServer s(Protocol::kRedis, kinds);
  ClientOptions o;
  o.protocol = Protocol::kRedis;
  o.port = s.port();
  o.kinds = kinds;
  o.clients = 2;
  o.requests = 12;
  o.think_us = 0;
  o.truth_path = TruthPath("jdw_truth_redis");
  // Nothing stored yet: a GET answers nil, and the run fails saying so.
  Status st = RunClients(o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("was it stored?"), std::string::npos) << st.message();
  ASSERT_TRUE(PrepareKeyValue(Protocol::kRedis, s.port(), kinds).ok());
  st = RunClients(o);
  ASSERT_TRUE(st.ok()) << st.message();
  auto truth = ReadGroundTruth(o.truth_path);
  ASSERT_TRUE(truth.ok());
  ASSERT_EQ(truth->size(), 12u);
  std::map<std::string, int> per_kind;
  std::set<uint16_t> ports;
  for (const auto& t : *truth) ++per_kind[t.type], ports.insert(t.client_port);
  EXPECT_EQ(per_kind, (std::map<std::string, int>{{"get-100K", 4}, {"get-small", 4}, {"set-50K", 4}}));
  EXPECT_EQ(ports.size(), 2u);
  std::filesystem::remove(o.truth_path);
  EXPECT_EQ(RespCommand({"GET", "k"}), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
}

TEST(RealClient, AWrongResponseFailsTheRun) {
  auto kinds = HttpKinds();
  TinyServer s(Protocol::kHttp, kinds);
  kinds[0].bytes = 999;  // the server sends 5120
  ClientOptions o;
  o.port = s.port();
  o.kinds = kinds;
  o.clients = 1;
  o.requests = 3;
  o.truth_path = TruthPath("jdw_truth_bad");
  Status st = RunClients(o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("expected 999"), std::string::npos) << st.message();
  std::filesystem::remove(o.truth_path);
}

}  // namespace
}  // namespace jackdaw::validate
