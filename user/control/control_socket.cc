#include "control/control_socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace jackdaw::control {
namespace {

uint64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

StatusOr<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path))
    return ErrStatus("control socket path too long: %s (use a shorter directory)", path.c_str());
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

bool IsDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

StatusOr<std::vector<std::string>> SplitRequest(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false, quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if ((c < 0x20 && c != '\t') || c >= 0x7f)
      return ErrStatus("request is not a line of text (byte 0x%02x): send e.g. 'status'", c);
    if (quoted) {
      if (c == '"') {
        quoted = false;
      } else if (c == '\\' && i + 1 < line.size() && (line[i + 1] == '"' || line[i + 1] == '\\')) {
        cur.push_back(line[++i]);
      } else {
        cur.push_back(static_cast<char>(c));
      }
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(cur)), cur.clear();
      in_word = false;
    } else {
      in_word = true;
      if (c == '"') quoted = true;
      else cur.push_back(static_cast<char>(c));
    }
  }
  if (quoted) return ErrStatus("unterminated quote in the request: close it with \" (jackdaw ctl quotes for you)");
  if (in_word) words.push_back(std::move(cur));
  if (words.empty()) return ErrStatus("empty request: send e.g. 'status'");
  return words;
}

std::string JoinRequest(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& w : words) {
    if (!line.empty()) line.push_back(' ');
    if (!w.empty() && w.find_first_of(" \t\"") == std::string::npos) {
      line += w;
      continue;
    }
    line.push_back('"');
    for (char c : w) {
      if (c == '"' || c == '\\') line.push_back('\\');
      line.push_back(c);
    }
    line.push_back('"');
  }
  return line;
}

StatusOr<std::unique_ptr<ControlServer>> ControlServer::Create(const std::string& dir,
                                                               const std::string& session,
                                                               ControlHandler handler) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return ErrStatus("cannot create %s: %s (run as root)", dir.c_str(), strerror(errno));
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return ErrStatus("%s is not a directory: remove it so jackdaw can create its control directory",
                     dir.c_str());
  if (st.st_uid != geteuid() || (st.st_mode & 0077)) {
    // Only the owner may reach the sockets inside.
    if (chmod(dir.c_str(), 0700) != 0)
      return ErrStatus("cannot restrict %s to its owner: %s", dir.c_str(), strerror(errno));
  }
  std::unique_ptr<ControlServer> s(new ControlServer());
  s->path_ = dir + "/" + session + ".sock";
  s->handler_ = std::move(handler);
  ASSIGN_OR_RETURN(sockaddr_un addr, Address(s->path_));
  s->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return ErrStatus("cannot create the control socket: %s", strerror(errno));
  unlink(s->path_.c_str());  // a stale socket of a dead process with our pid
  // The socket is created with the umask applied; 0177 makes it 0600 from
  // the start, so there is no window in which others may connect.
  mode_t old = umask(0177);
  int rc = bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  umask(old);
  if (rc != 0) return ErrStatus("cannot bind %s: %s", s->path_.c_str(), strerror(errno));
  // Connections beyond the served ones wait in the backlog (Serve()).
  if (chmod(s->path_.c_str(), 0600) != 0 || listen(s->listen_fd_, SOMAXCONN) != 0)
    return ErrStatus("cannot listen on %s: %s", s->path_.c_str(), strerror(errno));
  return s;
}

ControlServer::~ControlServer() {
  for (Client& c : clients_) close(c.fd);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(path_.c_str());
  }
}

void ControlServer::Answer(Client* c, const nlohmann::json& reply) {
  std::string line = reply.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + "\n";
  // Replies are small; a peer that does not read gets what fits.
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = send(c->fd, line.data() + off, line.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

void ControlServer::Close(size_t index) {
  close(clients_[index].fd);
  clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(index));
}

void ControlServer::AppendPollFds(std::vector<pollfd>* fds) const {
  // A full house leaves the rest queued: the listening socket would only
  // wake the loop for nothing.
  if (clients_.size() < kMaxClients) fds->push_back({listen_fd_, POLLIN, 0});
  for (const Client& c : clients_) fds->push_back({c.fd, POLLIN, 0});
}

void ControlServer::Serve() {
  const uint64_t now = NowMs();
  // Beyond kMaxClients, connections stay in the kernel's backlog and are
  // taken as served ones close: queued, not refused.
  while (clients_.size() < kMaxClients) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;
    ucred cred{};
    socklen_t len = sizeof(cred);
    Client c{fd, {}, now};
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != 0) {
      ++rejected_;
      Answer(&c, {{"ok", false}, {"error", "permission denied: only root may control a jackdaw session"}});
      close(fd);
      continue;
    }
    clients_.push_back(std::move(c));
  }
  for (size_t i = clients_.size(); i-- > 0;) {
    Client& c = clients_[i];
    char buf[1024];
    bool closed = false;
    for (;;) {
      ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        c.buf.append(buf, static_cast<size_t>(n));
        if (c.buf.size() > kMaxRequestBytes) break;
        continue;
      }
      if (n == 0) closed = true;
      break;
    }
    const size_t nl = c.buf.find('\n');
    // Measured to the newline: one read can bring a whole over-long line.
    const bool too_long = (nl == std::string::npos ? c.buf.size() : nl) > kMaxRequestBytes;
    if (nl == std::string::npos && !too_long && !closed &&
        now - c.since_ms < static_cast<uint64_t>(kClientTimeoutMs))
      continue;
    nlohmann::json reply;
    if (too_long) {
      reply = {{"ok", false}, {"error", "request longer than 4096 bytes: send one short line"}};
    } else if (nl == std::string::npos && !closed) {
      reply = {{"ok", false}, {"error", "no complete request line within 2 s: end it with a newline"}};
    } else {
      std::string line = c.buf.substr(0, nl == std::string::npos ? c.buf.size() : nl);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      auto words = SplitRequest(line);
      if (!words.ok()) {
        reply = {{"ok", false}, {"error", words.status().message()}};
      } else {
        auto r = handler_(*words);
        if (r.ok()) {
          reply = nlohmann::json::object();
          reply["ok"] = true;
          for (auto& [k, v] : r->items()) reply[k] = v;
        } else {
          reply = {{"ok", false}, {"error", r.status().message()}};
        }
      }
    }
    if (reply.value("ok", false)) ++served_;
    else ++rejected_;
    Answer(&c, reply);
    Close(i);
  }
}

namespace {

// One connection, one request, one reply line.
StatusOr<std::string> ExchangeOnce(const std::string& socket_path, const std::string& line, int timeout_ms) {
  ASSIGN_OR_RETURN(sockaddr_un addr, Address(socket_path));
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrStatus("cannot create a socket: %s", strerror(errno));
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    close(fd);
    if (e == EAGAIN)  // the backlog stayed full for the whole timeout
      return ErrStatus("%s is busy: no room in its queue within %d ms (retry later)", socket_path.c_str(),
                       timeout_ms);
    if (e == EACCES || e == EPERM)
      return ErrStatus("cannot connect to %s: permission denied (jackdaw ctl needs root)", socket_path.c_str());
    return ErrStatus("cannot connect to %s: %s (is the session still running? jackdaw ctl list)",
                     socket_path.c_str(), strerror(e));
  }
  std::string out = line + "\n";
  if (send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
    close(fd);
    return ErrStatus("cannot send to %s: %s", socket_path.c_str(), strerror(errno));
  }
  std::string reply;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
    if (reply.find('\n') != std::string::npos) break;
  }
  close(fd);
  if (reply.empty()) return ErrStatus("no reply from %s within %d ms", socket_path.c_str(), timeout_ms);
  if (reply.back() == '\n') reply.pop_back();
  return reply;
}

}  // namespace

StatusOr<std::string> SendRequest(const std::string& socket_path, const std::string& line,
                                  int timeout_ms) {
  // Sessions of older builds refuse connections beyond their limit with
  // this reply instead of queueing them: retried until the deadline.
  constexpr const char* kRefused = "too many control connections";
  const uint64_t deadline = NowMs() + static_cast<uint64_t>(std::max(timeout_ms, 1));
  for (int backoff_ms = 5;; backoff_ms = std::min(backoff_ms * 2, 100)) {
    const int left = static_cast<int>(deadline - std::min(deadline, NowMs()));
    auto reply = ExchangeOnce(socket_path, line, std::max(left, 1));
    if (!reply.ok()) return reply;
    const auto j = nlohmann::json::parse(*reply, nullptr, false);
    if (!j.is_object() || j.value("error", std::string()).rfind(kRefused, 0) != 0) return reply;
    if (NowMs() + static_cast<uint64_t>(backoff_ms) >= deadline) return reply;
    usleep(static_cast<useconds_t>(backoff_ms) * 1000);
  }
}

bool SessionAlive(const std::string& id) {
  if (!IsDigits(id) || id.size() > 9) return false;
  pid_t pid = static_cast<pid_t>(std::stol(id));
  return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

std::vector<SessionInfo> ListSessions(const std::string& dir) {
  std::vector<SessionInfo> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= 5 || name.substr(name.size() - 5) != ".sock") continue;
    std::string id = name.substr(0, name.size() - 5);
    if (!IsDigits(id)) continue;
    out.push_back({id, dir + "/" + name, SessionAlive(id)});
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const SessionInfo& a, const SessionInfo& b) {
    return a.id.size() != b.id.size() ? a.id.size() < b.id.size() : a.id < b.id;
  });
  return out;
}

int CleanStaleSessions(const std::string& dir) {
  int n = 0;
  for (const SessionInfo& s : ListSessions(dir))
    if (!s.alive && unlink(s.socket.c_str()) == 0) ++n;
  return n;
}

}  // namespace jackdaw::control
