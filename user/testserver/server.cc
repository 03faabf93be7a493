#include "testserver/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

#include "testserver/http.h"
#include "testserver/probes.h"
#include "testserver/request_types.h"

namespace jackdaw::testserver {
namespace {

// The worker's side of a hand-off to a helper thread. Shared with the task so
// the helper may notify after unlocking (one futex wake, a clean causal edge
// in a trace) without outliving the waiter's storage.
struct HelperCall {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  SpinRecord spin;

  void Finish() {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_one();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
};

std::string Ms(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.3fms", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace

TestServer::~TestServer() { Stop(); }

Status TestServer::Listen() {
  JDW_CHECK(!listening_);
  ASSIGN_OR_RETURN(docroot_, Docroot::Create(opts_.docroot, opts_.read_mode));

  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return ErrStatus("eventfd: %s", strerror(errno));
  if (!opts_.unix_path.empty()) return ListenUnix();

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(opts_.port);
  if (inet_pton(AF_INET, opts_.bind.c_str(), &addr.sin_addr) != 1)
    return ErrStatus("bad --bind '%s': expected an IPv4 address such as 127.0.0.1 or 0.0.0.0",
                     opts_.bind.c_str());
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return ErrStatus("socket: %s", strerror(errno));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno == EADDRINUSE)
      return ErrStatus(
          "cannot bind %s:%u: address already in use (pick another --port, or 0 for any free "
          "port)",
          opts_.bind.c_str(), opts_.port);
    return ErrStatus("cannot bind %s:%u: %s", opts_.bind.c_str(), opts_.port, strerror(errno));
  }
  if (listen(listen_fd_, 1024) != 0) return ErrStatus("listen: %s", strerror(errno));
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  listening_ = true;
  return Status::Ok();
}

Status TestServer::ListenUnix() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (opts_.unix_path.size() >= sizeof(addr.sun_path))
    return ErrStatus("--unix %s: a unix socket path is at most %zu bytes", opts_.unix_path.c_str(),
                     sizeof(addr.sun_path) - 1);
  memcpy(addr.sun_path, opts_.unix_path.c_str(), opts_.unix_path.size());
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return ErrStatus("socket: %s", strerror(errno));
  // A socket file left by a server that did not stop cleanly would make
  // bind fail; nothing else listens there once its server is gone.
  unlink(opts_.unix_path.c_str());
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    return ErrStatus("cannot bind unix socket %s: %s", opts_.unix_path.c_str(), strerror(errno));
  if (listen(listen_fd_, 1024) != 0) return ErrStatus("listen: %s", strerror(errno));
  listening_ = true;
  return Status::Ok();
}

Status TestServer::Start() {
  JDW_CHECK(!started_);
  JDW_CHECK(opts_.workers > 0 && opts_.helpers > 0 && opts_.iters_per_ms > 0);
  if (!listening_) RETURN_IF_ERROR(Listen());
  started_ = true;
  for (int i = 0; i < opts_.helpers; ++i) helpers_.emplace_back([this] { HelperLoop(); });
  for (int i = 0; i < opts_.workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void TestServer::Stop() {
  if (!started_ || stopped_) {
    if (stop_fd_ >= 0 && !started_) close(std::exchange(stop_fd_, -1));
    if (listen_fd_ >= 0 && !started_) close(std::exchange(listen_fd_, -1));
    return;
  }
  stopped_ = true;
  stopping_ = true;
  uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof(one)) < 0) perror("jackdaw-testserver: eventfd write");
  acceptor_.join();
  close(std::exchange(listen_fd_, -1));
  // Workers drain the queue (their reads see the stop fd and give up), then
  // helpers, which workers may still be waiting for, go last.
  conn_queue_.Close();
  for (std::thread& t : workers_) t.join();
  for (int fd : conn_queue_.Drain()) close(fd);
  helper_queue_.Close();
  for (std::thread& t : helpers_) t.join();
  close(std::exchange(stop_fd_, -1));
  if (!opts_.unix_path.empty()) unlink(opts_.unix_path.c_str());
}

void TestServer::AcceptLoop() {
  pollfd pfd[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    int n = poll(pfd, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      perror("jackdaw-testserver: poll");
      return;
    }
    if (pfd[1].revents) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        fprintf(stderr, "jackdaw-testserver: accept: %s\n", strerror(errno));
        usleep(10000);
      }
      continue;  // EINTR, ECONNABORTED, ...: try again
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    JDW_TS_PROBE2(dispatch, 0, fd);
    conn_queue_.Push(fd);
  }
}

void TestServer::WorkerLoop() {
  while (std::optional<int> fd = conn_queue_.Pop()) {
    JDW_TS_PROBE2(worker_pickup, 0, *fd);
    ServeConnection(*fd);
    close(*fd);
  }
}

void TestServer::HelperLoop() {
  while (std::optional<std::function<void()>> task = helper_queue_.Pop()) (*task)();
}

void TestServer::ServeConnection(int fd) {
  std::string buf;
  for (;;) {
    // A fresh connection gets as long as an idle keep-alive one to send its
    // request; either way Stop() cuts the wait short.
    StatusOr<std::string> head = ReadHead(fd, buf, opts_.idle_timeout_ms, stop_fd_);
    if (!head.ok() || head->empty()) return;  // EOF, timeout, stop, reset
    uint64_t req_id = next_req_id_.fetch_add(1, std::memory_order_relaxed);
    StatusOr<HttpRequest> req = ParseRequestHead(*head);
    char type_char = kUnknownTypeChar;
    if (req.ok()) {
      if (const RequestType* t = TypeByPath(req->path)) type_char = t->letter;
    }
    JDW_TS_PROBE3(request_start, req_id, type_char, fd);

    Response resp;
    bool keep = false;
    if (!req.ok()) {
      resp.status = 400;
      resp.body = "bad request: " + req.status().message() + "\n";
    } else {
      if (req->content_length > 0 &&
          !ReadBody(fd, buf, req->content_length, nullptr, opts_.idle_timeout_ms).ok()) {
        JDW_TS_PROBE3(request_end, req_id, 400, uint64_t{0});  // client went away
        return;
      }
      resp = Execute(req_id, req->method, req->path);
      keep = opts_.keepalive && req->want_keepalive && !stopping_;
    }

    std::string out = "HTTP/1.1 ";
    out += StatusText(resp.status);
    out += "\r\nContent-Type: " + resp.content_type;
    out += "\r\nContent-Length: " + std::to_string(resp.body.size());
    out += keep ? "\r\nConnection: keep-alive" : "\r\nConnection: close";
    out += std::string("\r\n") + kHeaderRequestId + ": " + std::to_string(req_id);
    if (!resp.spins.empty()) {
      uint64_t cpu = 0;
      for (const SpinRecord& s : resp.spins) cpu += s.cpu_ns;
      out += std::string("\r\n") + kHeaderSpinCpuNs + ": " + std::to_string(cpu);
      out += std::string("\r\n") + kHeaderSpinTrace + ": " + FormatSpinTrace(resp.spins);
    }
    out += "\r\n\r\n";
    out += resp.body;
    Status written = WriteAll(fd, out);
    uint64_t bytes_sent = written.ok() ? out.size() : 0;
    JDW_TS_PROBE3(request_end, req_id, resp.status, bytes_sent);

    if (opts_.verbose) {
      std::string spins;
      for (const SpinRecord& s : resp.spins)
        spins += " " + s.label + "@" + std::to_string(s.tid) + "=" + Ms(s.cpu_ns);
      fprintf(stderr, "req %llu %c %s %d %llu bytes worker %d%s\n",
              static_cast<unsigned long long>(req_id), type_char,
              req.ok() ? req->path.c_str() : "-", resp.status,
              static_cast<unsigned long long>(bytes_sent), gettid(), spins.c_str());
    }
    if (!written.ok() || !keep) return;
  }
}

TestServer::Response TestServer::Execute(uint64_t req_id, const std::string& method,
                                         const std::string& path) {
  Response resp;
  if (method != "GET") {
    resp.status = 405;
    resp.body = "only GET is served\n";
    return resp;
  }
  const RequestType* type = TypeByPath(path);
  if (!type) {
    resp.status = 404;
    resp.body = "no such URL: " + path + " (served:";
    for (const RequestType& t : kRequestTypes) resp.body += " " + std::string(t.path);
    resp.body += ")\n";
    return resp;
  }
  const uint64_t ipm = opts_.iters_per_ms;
  switch (type->kind) {
    case RequestKind::kSpin:
      resp.spins.push_back(Spin("spin", type->spin_us[0], ipm));
      break;

    case RequestKind::kStatic: {
      StatusOr<std::string> data = docroot_->Read(*type);
      if (!data.ok()) {
        fprintf(stderr, "jackdaw-testserver: %s\n", data.status().message().c_str());
        resp.status = 500;
        resp.body = data.status().message() + "\n";
        return resp;
      }
      resp.content_type = "application/octet-stream";
      resp.body = std::move(data.value());
      return resp;
    }

    case RequestKind::kParSpin: {
      // Fork one half to a helper, spin the other half here, join.
      auto call = std::make_shared<HelperCall>();
      const uint32_t helper_us = type->spin_us[1];
      JDW_TS_PROBE1(par_fork, req_id);
      helper_queue_.Push([call, req_id, helper_us, ipm] {
        JDW_TS_PROBE1(par_begin, req_id);
        call->spin = Spin("helper", helper_us, ipm);
        JDW_TS_PROBE1(par_end, req_id);
        call->Finish();
      });
      resp.spins.push_back(Spin("worker", type->spin_us[0], ipm));
      call->Wait();
      JDW_TS_PROBE1(par_join, req_id);
      resp.spins.push_back(call->spin);
      break;
    }

    case RequestKind::kRpcSpin: {
      // Synchronous RPC: spin, call the helper and block, spin again.
      resp.spins.push_back(Spin("spin1", type->spin_us[0], ipm));
      auto call = std::make_shared<HelperCall>();
      const uint32_t helper_us = type->spin_us[1];
      JDW_TS_PROBE1(rpc_signal, req_id);
      helper_queue_.Push([call, req_id, helper_us, ipm] {
        JDW_TS_PROBE1(rpc_begin, req_id);
        call->spin = Spin("helper", helper_us, ipm);
        JDW_TS_PROBE1(rpc_reply, req_id);
        call->Finish();
      });
      JDW_TS_PROBE1(rpc_wait, req_id);
      call->Wait();
      JDW_TS_PROBE1(rpc_resume, req_id);
      resp.spins.push_back(call->spin);
      resp.spins.push_back(Spin("spin2", type->spin_us[2], ipm));
      break;
    }

    case RequestKind::kBackend: {
      if (opts_.backend.empty()) {
        resp.status = 503;
        resp.body = path + " calls a backend: start the server with --backend HOST:PORT\n";
        return resp;
      }
      for (uint32_t call = 0; call < type->backend_calls; ++call) {
        JDW_TS_PROBE2(backend_call, req_id, call);
        StatusOr<int> status = CallBackend();
        JDW_TS_PROBE2(backend_reply, req_id, status.ok() ? *status : 0);
        if (!status.ok() || *status != 200) {
          resp.status = 502;
          resp.body = "backend " + opts_.backend + ": " +
                      (status.ok() ? std::string("answered ") + StatusText(*status) : status.status().message()) +
                      "\n";
          return resp;
        }
      }
      break;
    }
  }
  resp.body = std::string(type->name) + " ok\n";
  return resp;
}

StatusOr<int> TestServer::CallBackend() {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (opts_.backend.rfind("unix:", 0) == 0) {
    const std::string path = opts_.backend.substr(5);
    auto* un = reinterpret_cast<sockaddr_un*>(&ss);
    if (path.empty() || path.size() >= sizeof(un->sun_path))
      return ErrStatus("--backend %s: want unix:PATH, PATH 1 to %zu bytes", opts_.backend.c_str(),
                       sizeof(un->sun_path) - 1);
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, path.c_str(), path.size());
    len = sizeof(*un);
  } else {
    const size_t colon = opts_.backend.rfind(':');
    const int port = colon == std::string::npos ? 0 : atoi(opts_.backend.c_str() + colon + 1);
    if (port <= 0 || port > 65535) return ErrStatus("--backend %s: want HOST:PORT or unix:PATH", opts_.backend.c_str());
    ASSIGN_OR_RETURN(sockaddr_in addr, ResolveIpv4(opts_.backend.substr(0, colon), static_cast<uint16_t>(port)));
    memcpy(&ss, &addr, sizeof(addr));
    len = sizeof(addr);
  }
  const sockaddr* addr = reinterpret_cast<const sockaddr*>(&ss);
  if (opts_.backend_pool) return CallPooledBackend(addr, len);
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrStatus("socket: %s", strerror(errno));
  Status s = Status::Ok();
  int status = 0;
  if (connect(fd, addr, len) != 0) {
    s = ErrStatus("connect: %s", strerror(errno));
  } else {
    s = WriteAll(fd, "GET " + std::string(kBackendPath) + " HTTP/1.0\r\n\r\n");
    if (s.ok()) {
      std::string buf;
      StatusOr<HttpResponse> r = ReadResponse(fd, buf, opts_.idle_timeout_ms);
      if (r.ok()) status = r->status;
      else s = r.status();
    }
  }
  close(fd);
  if (!s.ok()) return s;
  return status;
}

// One keep-alive connection per worker thread, kept across its requests. A
// connection the backend closed while idle is found out by the next call,
// which reconnects once.
StatusOr<int> TestServer::CallPooledBackend(const sockaddr* addr, socklen_t len) {
  struct Pooled {
    int fd = -1;
    std::string buf;
    ~Pooled() {
      if (fd >= 0) close(fd);
    }
    void Drop() {
      if (fd >= 0) close(fd);
      fd = -1;
      buf.clear();
    }
  };
  thread_local Pooled pooled;
  Status last = Status::Ok();
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = pooled.fd >= 0;
    if (!reused) {
      pooled.fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (pooled.fd < 0) return ErrStatus("socket: %s", strerror(errno));
      if (connect(pooled.fd, addr, len) != 0) {
        last = ErrStatus("connect: %s", strerror(errno));
        pooled.Drop();
        return last;
      }
    }
    last = WriteAll(pooled.fd, "GET " + std::string(kBackendPath) + " HTTP/1.1\r\nHost: backend\r\n\r\n");
    if (last.ok()) {
      StatusOr<HttpResponse> r = ReadResponse(pooled.fd, pooled.buf, opts_.idle_timeout_ms);
      if (r.ok()) {
        if (!r->keepalive) pooled.Drop();
        return r->status;
      }
      last = r.status();
    }
    pooled.Drop();
    if (!reused) break;  // a fresh connection failed: the backend is down
  }
  return last;
}

}  // namespace jackdaw::testserver
