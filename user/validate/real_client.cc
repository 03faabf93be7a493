#include "validate/real_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "validate/dns_wire.h"
#include "validate/mysql_wire.h"
#include "validate/pg_wire.h"
#include "validate/tls.h"

namespace jackdaw::validate {
namespace {

StatusOr<int> Connect(uint16_t port, uint16_t* local_port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrStatus("socket: %s", strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    const int e = errno;
    close(fd);
    return ErrStatus("connect to 127.0.0.1:%u: %s", port, strerror(e));
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in l{};
  socklen_t len = sizeof(l);
  getsockname(fd, reinterpret_cast<sockaddr*>(&l), &len);
  *local_port = ntohs(l.sin_port);
  return fd;
}

Status SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrStatus("send: %s", n < 0 ? strerror(errno) : "connection closed");
    off += size_t(n);
  }
  return Status::Ok();
}

// Buffered reads on one connection; what a read returns beyond the current
// response stays for the next.
class Conn {
 public:
  // `ssl`: the connection's TLS session (owned), null for plain TCP.
  explicit Conn(int fd, SSL* ssl = nullptr) : fd_(fd), ssl_(ssl) {}
  ~Conn() {
    if (ssl_) {
      SSL_shutdown(ssl_);  // close_notify, as a browser ends a connection
      SSL_free(ssl_);
    }
    if (fd_ >= 0) close(fd_);
  }
  SSL* ssl() const { return ssl_; }
  Status Send(const std::string& data) {
    if (!ssl_) return SendAll(fd_, data);
    for (size_t off = 0; off < data.size();) {
      const int n = SSL_write(ssl_, data.data() + off, static_cast<int>(data.size() - off));
      if (n <= 0) return ErrStatus("TLS write: %s", TlsError().c_str());
      off += size_t(n);
    }
    return Status::Ok();
  }
  // Until `delim` is buffered; returns everything up to and including it.
  StatusOr<std::string> ReadUntil(const std::string& delim) {
    size_t pos;
    while ((pos = buf_.find(delim)) == std::string::npos) RETURN_IF_ERROR(Fill());
    std::string out = buf_.substr(0, pos + delim.size());
    buf_.erase(0, pos + delim.size());
    return out;
  }
  // One PostgreSQL backend message.
  StatusOr<PgMessage> ReadPg() {
    PgMessage m;
    for (;;) {
      ASSIGN_OR_RETURN(bool whole, PgTakeMessage(&buf_, &m));
      if (whole) return m;
      RETURN_IF_ERROR(Fill());
    }
  }
  // One MySQL packet.
  StatusOr<MyPacket> ReadMy() {
    MyPacket p;
    for (;;) {
      ASSIGN_OR_RETURN(bool whole, MyTakePacket(&buf_, &p));
      if (whole) return p;
      RETURN_IF_ERROR(Fill());
    }
  }
  Status Skip(size_t n) {
    while (buf_.size() < n) RETURN_IF_ERROR(Fill());
    buf_.erase(0, n);
    return Status::Ok();
  }

 private:
  Status Fill() {
    char tmp[65536];
    ssize_t n;
    if (ssl_) {
      n = SSL_read(ssl_, tmp, sizeof(tmp));
      if (n < 0 || (n == 0 && SSL_get_error(ssl_, 0) != SSL_ERROR_ZERO_RETURN))
        return ErrStatus("TLS read: %s", TlsError().c_str());
    } else {
      do n = recv(fd_, tmp, sizeof(tmp), 0);
      while (n < 0 && errno == EINTR);
    }
    if (n < 0) return ErrStatus("recv: %s", strerror(errno));
    if (n == 0) return ErrStatus("the server closed the connection mid-response");
    buf_.append(tmp, size_t(n));
    return Status::Ok();
  }
  int fd_;
  SSL* ssl_;
  std::string buf_;
};

// server_cpu_ns: the X-Spin-Cpu-Ns header when the response carries one
// (jackdaw-testserver behind a proxy measures its spins' thread CPU), else 0.
Status HttpExchange(Conn& c, const RequestKind& k, bool keep_alive, uint64_t* server_cpu_ns) {
  RETURN_IF_ERROR(c.Send("GET " + k.target + " HTTP/1.1\r\nHost: localhost\r\nConnection: " +
                                      (keep_alive ? "keep-alive" : "close") + "\r\n\r\n"));
  ASSIGN_OR_RETURN(std::string head, c.ReadUntil("\r\n\r\n"));
  int status = 0;
  if (sscanf(head.c_str(), "HTTP/1.%*d %d", &status) != 1) return ErrStatus("not an HTTP response");
  if (status != k.http_status)
    return ErrStatus("GET %s: status %d, expected %d", k.target.c_str(), status, k.http_status);
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  const auto cl = lower.find("\r\ncontent-length:");
  if (cl == std::string::npos) return ErrStatus("GET %s: no Content-Length", k.target.c_str());
  const size_t len = strtoull(head.c_str() + cl + 17, nullptr, 10);
  static constexpr char kSpinHeader[] = "\r\nx-spin-cpu-ns:";
  const auto spin = lower.find(kSpinHeader);
  *server_cpu_ns = spin == std::string::npos ? 0 : strtoull(head.c_str() + spin + sizeof(kSpinHeader) - 1, nullptr, 10);
  if (k.http_status == 200 && len != k.bytes)
    return ErrStatus("GET %s: %zu bytes, expected %zu", k.target.c_str(), len, k.bytes);
  return c.Skip(len);
}

Status MemcacheExchange(Conn& c, const RequestKind& k, const std::string& value) {
  if (k.op == "set") {
    RETURN_IF_ERROR(c.Send("set " + k.target + " 0 0 " + std::to_string(value.size()) + "\r\n" +
                                        value + "\r\n"));
    ASSIGN_OR_RETURN(std::string line, c.ReadUntil("\r\n"));
    if (line != "STORED\r\n") return ErrStatus("set %s: %s", k.target.c_str(), line.c_str());
    return Status::Ok();
  }
  RETURN_IF_ERROR(c.Send("get " + k.target + "\r\n"));
  ASSIGN_OR_RETURN(std::string line, c.ReadUntil("\r\n"));
  size_t len = 0;
  if (sscanf(line.c_str(), "VALUE %*s %*u %zu", &len) != 1)
    return ErrStatus("get %s: %s (was it stored?)", k.target.c_str(), line.c_str());
  if (len != k.bytes) return ErrStatus("get %s: %zu bytes, expected %zu", k.target.c_str(), len, k.bytes);
  RETURN_IF_ERROR(c.Skip(len + 2));
  ASSIGN_OR_RETURN(std::string end, c.ReadUntil("\r\n"));
  if (end != "END\r\n") return ErrStatus("get %s: no END", k.target.c_str());
  return Status::Ok();
}

// SET answers +OK; GET a bulk string of exactly the kind's size.
Status RedisExchange(Conn& c, const RequestKind& k, const std::string& value) {
  if (k.op == "set") {
    RETURN_IF_ERROR(c.Send(RespCommand({"SET", k.target, value})));
    ASSIGN_OR_RETURN(std::string line, c.ReadUntil("\r\n"));
    if (line != "+OK\r\n") return ErrStatus("SET %s: %s", k.target.c_str(), line.c_str());
    return Status::Ok();
  }
  RETURN_IF_ERROR(c.Send(RespCommand({"GET", k.target})));
  ASSIGN_OR_RETURN(std::string line, c.ReadUntil("\r\n"));
  long long len = -1;
  if (sscanf(line.c_str(), "$%lld", &len) != 1 || len < 0)
    return ErrStatus("GET %s: %s (was it stored?)", k.target.c_str(), line.c_str());
  if (size_t(len) != k.bytes) return ErrStatus("GET %s: %lld bytes, expected %zu", k.target.c_str(), len, k.bytes);
  return c.Skip(size_t(len) + 2);
}

// The startup exchange: protocol 3.0, user and database postgres, trust.
Status PgStartup(Conn& c) {
  RETURN_IF_ERROR(c.Send(PgStartupMessage("postgres", "postgres")));
  std::vector<PgMessage> reply;
  do {
    ASSIGN_OR_RETURN(PgMessage m, c.ReadPg());
    reply.push_back(std::move(m));
  } while (reply.back().type != 'Z' && reply.back().type != 'E');
  return PgCheckStartup(reply);
}

// One simple query, read up to ReadyForQuery; its last CommandComplete tag
// must be `tag` (when given) and its rows at least `min_row_bytes`.
Status PgExchange(Conn& c, const std::string& sql, const std::string& tag, size_t min_row_bytes) {
  RETURN_IF_ERROR(c.Send(PgQueryMessage(sql)));
  PgResult r;
  for (;;) {
    ASSIGN_OR_RETURN(PgMessage m, c.ReadPg());
    if (PgAccumulate(m, &r)) break;
  }
  if (!r.error.empty()) return ErrStatus("postgres: %s: %s", sql.c_str(), r.error.c_str());
  if (!tag.empty() && (r.tags.empty() || r.tags.back() != tag))
    return ErrStatus("postgres: %s: %s, expected %s", sql.c_str(), r.tags.empty() ? "no result" : r.tags.back().c_str(),
                     tag.c_str());
  if (r.row_bytes < min_row_bytes)
    return ErrStatus("postgres: %s: %llu bytes of rows, expected at least %zu", sql.c_str(),
                     static_cast<unsigned long long>(r.row_bytes), min_row_bytes);
  return Status::Ok();
}

// The server's greeting, then our login and its OK: the connection's set-up.
Status MysqlLogin(Conn& c) {
  ASSIGN_OR_RETURN(MyPacket greeting, c.ReadMy());
  RETURN_IF_ERROR(MyCheckGreeting(greeting));
  RETURN_IF_ERROR(c.Send(MyLoginPacket("jackdaw")));
  ASSIGN_OR_RETURN(MyPacket ok, c.ReadMy());
  return MyCheckLoginReply(ok);
}

// One COM_QUERY read to the end of its reply; its summary must be `expect`
// ("rows 1", "affected 500") when given, and its rows at least
// `min_row_bytes`.
Status MysqlExchange(Conn& c, const std::string& sql, const std::string& expect, size_t min_row_bytes) {
  RETURN_IF_ERROR(c.Send(MyQueryPacket(sql)));
  MyReplyReader r;
  for (;;) {
    ASSIGN_OR_RETURN(MyPacket p, c.ReadMy());
    if (r.Add(p)) break;
  }
  if (!r.error().empty()) return ErrStatus("mariadb: %s: %s", sql.c_str(), r.error().c_str());
  if (!expect.empty() && r.summary() != expect)
    return ErrStatus("mariadb: %s: %s, expected %s", sql.c_str(), r.summary().c_str(), expect.c_str());
  if (r.row_bytes() < min_row_bytes)
    return ErrStatus("mariadb: %s: %llu bytes of rows, expected at least %zu", sql.c_str(),
                     static_cast<unsigned long long>(r.row_bytes()), min_row_bytes);
  return Status::Ok();
}

struct Truth {
  std::string kind;
  uint16_t port;
  uint64_t send_ns, recv_ns;
  uint64_t id;
  bool setup = false;  // a connection's set-up exchange, not a request
  uint64_t server_cpu_ns = 0;
};

}  // namespace

std::string RespCommand(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

Status PrepareKeyValue(Protocol protocol, uint16_t port, const std::vector<RequestKind>& kinds) {
  if (protocol != Protocol::kMemcache && protocol != Protocol::kRedis)
    return ErrStatus("PrepareKeyValue: not a key-value protocol");
  uint16_t lp;
  ASSIGN_OR_RETURN(int fd, Connect(port, &lp));
  Conn c(fd);
  for (const auto& k : kinds) {
    if (k.op != "get") continue;
    RequestKind set = k;
    set.op = "set";
    const std::string value(k.bytes, 'v');
    RETURN_IF_ERROR(protocol == Protocol::kRedis ? RedisExchange(c, set, value) : MemcacheExchange(c, set, value));
  }
  return Status::Ok();
}

Status PrepareMemcache(uint16_t port, const std::vector<RequestKind>& kinds) {
  return PrepareKeyValue(Protocol::kMemcache, port, kinds);
}

Status PreparePostgres(uint16_t port) {
  uint16_t lp;
  ASSIGN_OR_RETURN(int fd, Connect(port, &lp));
  Conn c(fd);
  RETURN_IF_ERROR(PgStartup(c));
  // Each its own Query: VACUUM and CHECKPOINT cannot run in the implicit
  // transaction of a multi-statement one. The checkpoint comes last so the
  // recorded writes start from clean pages, as they would mid-life.
  for (const char* sql : {
           "CREATE TABLE kv (k int PRIMARY KEY, v text)",
           "INSERT INTO kv SELECT g, md5(g::text) FROM generate_series(1, 10000) g",
           "CREATE TABLE wide (id int PRIMARY KEY, pad text)",
           "INSERT INTO wide SELECT g, repeat(chr(97 + g % 26), 96) FROM generate_series(1, 1000) g",
           "CREATE TABLE log (id bigserial PRIMARY KEY, at timestamptz DEFAULT now(), pad text)",
           "VACUUM ANALYZE",
           "CHECKPOINT",
       })
    RETURN_IF_ERROR(PgExchange(c, sql, "", 0));
  return c.Send(PgTerminateMessage());
}

Status PrepareMysql(uint16_t port, const std::vector<std::string>& statements) {
  uint16_t lp;
  ASSIGN_OR_RETURN(int fd, Connect(port, &lp));
  Conn c(fd);
  RETURN_IF_ERROR(MysqlLogin(c));
  for (const auto& sql : statements) RETURN_IF_ERROR(MysqlExchange(c, sql, "", 0));
  return c.Send(MyQuitPacket());
}

// One DNS client: its own UDP socket, a query at a time, each answer
// checked (id, response code, an answer for a name that exists).
static Status DnsClient(const ClientOptions& o, const std::vector<size_t>& seq, size_t first, std::vector<Truth>* out) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrStatus("socket: %s", strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(o.port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in l{};
  socklen_t len = sizeof(l);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&l), &len) != 0) {
    const int e = errno;
    close(fd);
    return ErrStatus("UDP to 127.0.0.1:%u: %s", o.port, strerror(e));
  }
  const uint16_t port = ntohs(l.sin_port);
  Status st = Status::Ok();
  for (size_t i = first; i < seq.size() && st.ok(); i += size_t(o.clients)) {
    const RequestKind& k = o.kinds[seq[i]];
    const uint16_t type = k.op == "TXT" ? kDnsTypeTxt : k.op == "AAAA" ? kDnsTypeAaaa : kDnsTypeA;
    const std::string q = DnsQuery(static_cast<uint16_t>(i), k.target, type);
    char buf[4096];
    const uint64_t t0 = MonotonicNs();
    if (send(fd, q.data(), q.size(), 0) != ssize_t(q.size())) {
      st = ErrStatus("DNS query %s: send: %s", k.target.c_str(), strerror(errno));
      break;
    }
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    const uint64_t t1 = MonotonicNs();
    if (n < 0) {
      st = ErrStatus("DNS query %s: no answer: %s", k.target.c_str(), strerror(errno));
      break;
    }
    auto head = ParseDnsAnswerHead(std::string(buf, size_t(n)));
    if (!head.ok()) {
      st = head.status();
    } else if (head->id != uint16_t(i) || head->rcode != k.http_status || (k.http_status == 0 && !head->answers)) {
      st = ErrStatus("DNS query %s: id %u rcode %u with %u answers, expected id %u rcode %d", k.target.c_str(),
                     head->id, head->rcode, head->answers, unsigned(uint16_t(i)), k.http_status);
    } else {
      out->push_back(Truth{k.name, port, t0, t1, i});
      if (o.think_us) usleep(o.think_us);
    }
  }
  close(fd);
  return st;
}

Status RunClients(const ClientOptions& o) {
  if (o.kinds.empty() || o.clients <= 0 || o.requests <= 0) return ErrStatus("empty client workload");
  std::vector<size_t> seq(size_t(o.requests));
  for (size_t i = 0; i < seq.size(); ++i) seq[i] = i % o.kinds.size();
  std::mt19937 rng(o.seed);
  std::shuffle(seq.begin(), seq.end(), rng);

  std::unique_ptr<TlsClientContext> tls;
  if (o.tls) {
    ASSIGN_OR_RETURN(tls, TlsClientContext::Create(o.tls));
    // OpenSSL writes with write(2): a close_notify to a server that already
    // closed must not kill the process.
    signal(SIGPIPE, SIG_IGN);
  }
  std::vector<std::vector<Truth>> truth(size_t(o.clients));
  std::vector<Status> status(size_t(o.clients), Status::Ok());
  std::vector<std::thread> threads;
  for (int ci = 0; ci < o.clients; ++ci) {
    threads.emplace_back([&, ci] {
      auto& out = truth[size_t(ci)];
      if (o.protocol == Protocol::kDns) {
        status[size_t(ci)] = DnsClient(o, seq, size_t(ci), &out);
        return;
      }
      std::unique_ptr<Conn> conn;
      uint16_t port = 0;
      SSL_SESSION* session = nullptr;  // the last connection's, offered to the next
      for (size_t i = size_t(ci); i < seq.size(); i += size_t(o.clients)) {
        const RequestKind& k = o.kinds[seq[i]];
        const std::string value = k.op == "set" ? std::string(k.bytes, char('a' + i % 26)) : std::string();
        if (!conn) {
          auto fd = Connect(o.port, &port);
          if (!fd.ok()) {
            status[size_t(ci)] = fd.status();
            return;
          }
          if (tls) {
            // Timed as the connection's set-up, like a database login.
            const uint64_t s0 = MonotonicNs();
            auto ssl = tls->Handshake(*fd, session);
            if (!ssl.ok()) {
              close(*fd);
              status[size_t(ci)] = ssl.status();
              return;
            }
            out.push_back(Truth{"tls-handshake", port, s0, MonotonicNs(), 0, true});
            conn = std::make_unique<Conn>(*fd, *ssl);
          } else {
            conn = std::make_unique<Conn>(*fd);
          }
          if (o.protocol == Protocol::kPostgres || o.protocol == Protocol::kMysql) {
            // Timed too, as the connection's set-up (not a request), so
            // the scoring can say what an extra request was.
            const uint64_t s0 = MonotonicNs();
            const bool pg = o.protocol == Protocol::kPostgres;
            Status st = pg ? PgStartup(*conn) : MysqlLogin(*conn);
            if (!st.ok()) {
              status[size_t(ci)] = st;
              return;
            }
            out.push_back(Truth{pg ? "pg-startup" : "mysql-login", port, s0, MonotonicNs(), 0, true});
          }
        }
        const uint64_t t0 = MonotonicNs();
        uint64_t server_cpu_ns = 0;
        Status st = o.protocol == Protocol::kHttp       ? HttpExchange(*conn, k, o.keep_alive, &server_cpu_ns)
                    : o.protocol == Protocol::kMemcache ? MemcacheExchange(*conn, k, value)
                    : o.protocol == Protocol::kRedis    ? RedisExchange(*conn, k, value)
                    : o.protocol == Protocol::kMysql    ? MysqlExchange(*conn, k.target, k.op, k.bytes)
                                                        : PgExchange(*conn, k.target, k.op, k.bytes);
        const uint64_t t1 = MonotonicNs();
        if (!st.ok()) {
          status[size_t(ci)] = st;
          return;
        }
        out.push_back(Truth{k.name, port, t0, t1, i, false, server_cpu_ns});
        if (!o.keep_alive) {
          if (conn->ssl()) {
            if (session) SSL_SESSION_free(session);
            session = SSL_get1_session(conn->ssl());
          }
          conn.reset();
        }
        if (o.think_us) usleep(o.think_us);
      }
      // PostgreSQL's and MariaDB's goodbye: a one-way message, the connection's.
      if (conn && o.protocol == Protocol::kPostgres) (void)conn->Send(PgTerminateMessage());
      if (conn && o.protocol == Protocol::kMysql) (void)conn->Send(MyQuitPacket());
      conn.reset();
      if (session) SSL_SESSION_free(session);
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& st : status) RETURN_IF_ERROR(st);
  std::ofstream f(o.truth_path);
  for (const auto& per : truth) {
    for (const Truth& t : per) {
      nlohmann::json j = {{"type", t.kind}, {"local_port", t.port}, {"send_mono_ns", t.send_ns},
                          {"recv_mono_ns", t.recv_ns}, {"req_id", t.id}};
      if (t.setup) j["setup"] = true;
      if (t.server_cpu_ns) j["server_cpu_ns"] = t.server_cpu_ns;
      f << j.dump() << "\n";
    }
  }
  if (!f) return ErrStatus("cannot write %s", o.truth_path.c_str());
  return Status::Ok();
}

}  // namespace jackdaw::validate
