// The control endpoint of a running session (`jackdaw record`, `jackdaw
// live`): one unix stream socket per session, <dir>/<session>.sock, with
// <dir> = /run/jackdaw (mode 0700) and the socket mode 0600, and every peer
// checked with SO_PEERCRED: only root (uid 0) is served, so a file-mode
// mistake alone does not open the session to other users.
//
// Protocol: the client sends one line of words ("status", "disable net",
// "filter syscalls read,write", "snapshot \"/tmp/my x.jdw\"") and reads one line
// of JSON back: {"ok":true,...} or {"ok":false,"error":"..."}. A line longer
// than kMaxRequestBytes, a connection that sends nothing for kClientTimeoutMs
// or bytes that are not text get an error reply (when the peer still
// listens) and are closed; the session goes on.
//
// ControlServer never blocks its caller: Serve() accepts and reads whatever
// is pending (non-blocking sockets) and answers complete lines; the session
// calls it from its main loop between drains. The session id is the pid of
// the process that owns the session, so a socket left by a process that is
// gone is recognisably stale (CleanStaleSessions).
#pragma once

#include <poll.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace jackdaw::control {

inline constexpr const char* kDefaultRunDir = "/run/jackdaw";
inline constexpr size_t kMaxRequestBytes = 4096;
inline constexpr int kClientTimeoutMs = 2000;
// Connections served at once; more wait in the listening socket's backlog.
inline constexpr size_t kMaxClients = 16;

// Answers one request (the line split into words, never empty). The
// returned object is sent with "ok": true; an error Status becomes
// {"ok": false, "error": message}.
using ControlHandler = std::function<StatusOr<nlohmann::json>(const std::vector<std::string>& words)>;

class ControlServer {
 public:
  // Creates <dir> (0700) if missing and listens on <dir>/<session>.sock.
  static StatusOr<std::unique_ptr<ControlServer>> Create(const std::string& dir,
                                                         const std::string& session,
                                                         ControlHandler handler);
  ~ControlServer();  // closes and unlinks the socket

  // Accepts pending connections and answers complete requests. Never blocks.
  void Serve();
  // The descriptors a session's loop waits on (POLLIN) so that a request
  // wakes it at once instead of at its next turn; Serve() is due when one
  // of them is ready or busy() (a client whose line is incomplete may time
  // out).
  void AppendPollFds(std::vector<pollfd>* fds) const;
  bool busy() const { return !clients_.empty(); }
  const std::string& path() const { return path_; }
  uint64_t requests_served() const { return served_; }
  uint64_t requests_rejected() const { return rejected_; }

 private:
  struct Client {
    int fd = -1;
    std::string buf;
    uint64_t since_ms = 0;
  };
  ControlServer() = default;
  void Answer(Client* c, const nlohmann::json& reply);
  void Close(size_t index);

  std::string path_;
  int listen_fd_ = -1;
  ControlHandler handler_;
  std::vector<Client> clients_;
  uint64_t served_ = 0, rejected_ = 0;
};

// Splits a request line into words (spaces and tabs); a word may be
// double-quoted, with \" and \\ inside, so it can hold spaces (a plain line
// of unquoted words reads as it always did). Fails on control characters,
// non-ASCII bytes or an unterminated quote.
StatusOr<std::vector<std::string>> SplitRequest(const std::string& line);
// The line SplitRequest() splits back into `words`: words quoted where
// needed.
std::string JoinRequest(const std::vector<std::string>& words);

// Sends one request and returns the reply line (without the newline).
StatusOr<std::string> SendRequest(const std::string& socket_path, const std::string& line,
                                  int timeout_ms = 5000);

struct SessionInfo {
  std::string id;  // the owning process' pid
  std::string socket;
  bool alive = false;
};
// Sessions with a socket in `dir`, ordered by id.
std::vector<SessionInfo> ListSessions(const std::string& dir = kDefaultRunDir);
// Whether process `id` (a pid in decimal) exists.
bool SessionAlive(const std::string& id);
// Removes the sockets of sessions whose process is gone; returns how many.
int CleanStaleSessions(const std::string& dir = kDefaultRunDir);

}  // namespace jackdaw::control
