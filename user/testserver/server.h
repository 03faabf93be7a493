// jackdaw-testserver's engine: the HTTP server of the validation workload
// (Magpie §6, Table 1; see request_types.h).
//
// Threads (all fixed at Start, like IIS's pool in the paper):
//   acceptor  accept()s and pushes each connection onto the work queue
//             (probe dispatch)
//   workers   pop a connection (probe worker_pickup), read requests, assign
//             each a request id, serve it (request_start ... request_end);
//             without keep-alive one request per connection
//   helpers   run the second thread's half of E (parspin) and F (rpcspin),
//             taken from their own queue
// A worker serving E or F blocks on a per-request completion (mutex +
// condvar) until its helper task finishes; if every helper is busy the task
// waits in the helper queue, so with more concurrent E/F requests than
// helpers the structure degrades to queueing, as in any fixed pool.
//
// Stop() wakes every blocked thread through one eventfd (never read, so it
// stays readable), lets in-flight requests finish and joins all threads.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"
#include "testserver/docroot.h"
#include "testserver/spin.h"

namespace jackdaw::testserver {

struct ServerOptions {
  std::string bind = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  int workers = 4;
  int helpers = 2;
  bool keepalive = false;
  uint64_t iters_per_ms = 0;  // spin speed (from Calibrate or --iters-per-ms)
  std::string docroot;        // "" = fresh dir under /var/tmp
  ReadMode read_mode = ReadMode::kCached;
  int idle_timeout_ms = 5000;  // keep-alive: close an idle connection
  bool verbose = false;        // one stderr line per request
  // G /book and H /categories call this server ("HOST:PORT", another
  // jackdaw-testserver); "" = those URLs answer 503.
  std::string backend;
  // Keep one HTTP/1.1 keep-alive connection to the backend per worker
  // thread, reused by its requests in turn (a pooled upstream, as a reverse
  // proxy's `keepalive`), instead of a connection per call.
  bool backend_pool = false;
  // Listen on this unix-domain stream socket instead of TCP (the socket
  // file is replaced at start and removed at stop): a backend behind a
  // unix socket, as php-fpm behind nginx. `backend` may then be
  // "unix:PATH" on the calling side.
  std::string unix_path;
};

// A blocking FIFO that can be closed; Pop returns nullopt once closed and
// drained.
template <typename T>
class BlockingQueue {
 public:
  void Push(T v) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      q_.push_back(std::move(v));
    }
    cv_.notify_one();
  }
  std::optional<T> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !q_.empty(); });
    if (q_.empty()) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    return v;
  }
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  // Removes what is left (after Close), for cleanup.
  std::deque<T> Drain() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(q_, {});
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> q_;
  bool closed_ = false;
};

class TestServer {
 public:
  explicit TestServer(ServerOptions opts) : opts_(std::move(opts)) {}
  ~TestServer();

  // Creates the docroot, binds and listens; port() is the bound port after.
  // Separate from Start so that a busy port fails before calibration.
  Status Listen();
  // Listen()s if not done yet, then starts all threads.
  Status Start();
  // Spin speed, if not known when the options were made (before Start).
  void set_iters_per_ms(uint64_t v) { opts_.iters_per_ms = v; }
  // Idempotent; returns when every thread has exited.
  void Stop();

  uint16_t port() const { return port_; }  // 0 on a unix socket
  const std::string& docroot_dir() const { return docroot_->dir(); }

 private:
  struct Response {
    int status = 200;
    std::string content_type = "text/plain";
    std::string body;
    std::vector<SpinRecord> spins;
  };

  void AcceptLoop();
  void WorkerLoop();
  void HelperLoop();
  void ServeConnection(int fd);
  Response Execute(uint64_t req_id, const std::string& method, const std::string& path);
  // One synchronous GET of kBackendPath on a new connection; the HTTP status.
  StatusOr<int> CallBackend();
  StatusOr<int> CallPooledBackend(const sockaddr* addr, socklen_t len);
  Status ListenUnix();

  ServerOptions opts_;
  std::unique_ptr<Docroot> docroot_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd; readable once Stop() began
  uint16_t port_ = 0;
  std::atomic<uint64_t> next_req_id_{1};
  std::atomic<bool> stopping_{false};
  BlockingQueue<int> conn_queue_;
  BlockingQueue<std::function<void()>> helper_queue_;
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::vector<std::thread> helpers_;
  bool listening_ = false;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace jackdaw::testserver
