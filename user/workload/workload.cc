// jackdaw-workload: a process whose kernel-visible behaviour is known
// exactly, used by the capture tests, the benchmarks and `jackdaw demo`.
// Prints a JSON report (thread ids, counts, bytes, ports) on stdout so a
// test can check a trace against it.
//
//   getppid:   N getppid() calls on one thread
//   direct-io: one O_DIRECT write then read of B bytes of a file in DIR
//   tcp:       a loopback TCP exchange: client sends C2S bytes, server
//              answers S2C bytes, both close
//   pipe:      two threads ping-pong one byte K times over two pipes
//   socketpair: K write+read round trips of 64 bytes on a unix socket pair
//   file:      K pwrite+pread of 4 KiB on a page-cached file in DIR
//   disk:      K O_DIRECT pwrite+pread of 4 KiB on a file in DIR
//   fd-reuse:  fd numbers reused for another object (socket closed then a
//              file opened at its number; dup2 of a file over an open
//              socket; close_range then reuse; a socket touched on one CPU,
//              replaced by a file on another, touched again on the first),
//              each touched by a read() whose byte count names the step
//              (fd cache tests)
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace {

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

[[noreturn]] void Die(const std::string& what) {
  fprintf(stderr, "jackdaw-workload: %s: %s\n", what.c_str(), strerror(errno));
  exit(1);
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= w;
  }
  return true;
}

size_t ReadExactly(int fd, char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += r;
  }
  return got;
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

nlohmann::json DoGetppid(uint64_t n) {
  const uint32_t tid = Tid();
  const uint64_t t0 = NowNs();
  for (uint64_t i = 0; i < n; ++i) syscall(SYS_getppid);
  const uint64_t t1 = NowNs();
  return {{"tid", tid}, {"calls", n}, {"elapsed_ns", t1 - t0}};
}

nlohmann::json DoDirectIo(const std::string& dir, size_t bytes) {
  const uint32_t tid = Tid();
  const std::string path = dir + "/jackdaw-workload-" + std::to_string(getpid()) + ".dat";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
  if (fd < 0) Die("O_DIRECT open of " + path + " (the directory must be on a block device, not tmpfs)");
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, bytes) != 0) Die("posix_memalign");
  memset(buf, 0xab, bytes);
  if (pwrite(fd, buf, bytes, 0) != static_cast<ssize_t>(bytes)) Die("O_DIRECT write");
  if (fdatasync(fd) != 0) Die("fdatasync");
  memset(buf, 0, bytes);
  if (pread(fd, buf, bytes, 0) != static_cast<ssize_t>(bytes)) Die("O_DIRECT read");
  close(fd);
  unlink(path.c_str());
  free(buf);
  return {{"tid", tid}, {"bytes", bytes}, {"path", path}};
}

nlohmann::json DoTcp(size_t c2s, size_t s2c) {
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(ls, 1) != 0) Die("listen");
  socklen_t al = sizeof(a);
  getsockname(ls, reinterpret_cast<sockaddr*>(&a), &al);
  const uint16_t server_port = ntohs(a.sin_port);
  uint32_t server_tid = 0;
  size_t server_got = 0;
  std::thread server([&] {
    server_tid = Tid();
    int c = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) Die("accept");
    std::vector<char> in(c2s);
    server_got = ReadExactly(c, in.data(), c2s);
    std::vector<char> out(s2c, 's');
    if (!WriteAll(c, out.data(), s2c)) Die("server write");
    close(c);
  });
  const uint32_t client_tid = Tid();
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) Die("connect");
  sockaddr_in local{};
  al = sizeof(local);
  getsockname(s, reinterpret_cast<sockaddr*>(&local), &al);
  std::vector<char> out(c2s, 'c');
  if (!WriteAll(s, out.data(), c2s)) Die("client write");
  std::vector<char> in(s2c);
  const size_t client_got = ReadExactly(s, in.data(), s2c);
  close(s);
  server.join();
  close(ls);
  return {{"client_tid", client_tid}, {"server_tid", server_tid}, {"server_port", server_port},
          {"client_port", ntohs(local.sin_port)}, {"c2s", c2s}, {"s2c", s2c},
          {"server_got", server_got}, {"client_got", client_got}};
}

nlohmann::json DoPipe(uint64_t rounds) {
  int ab[2], ba[2];
  if (pipe2(ab, O_CLOEXEC) != 0 || pipe2(ba, O_CLOEXEC) != 0) Die("pipe");
  uint32_t pong_tid = 0;
  std::thread pong([&] {
    pong_tid = Tid();
    char c;
    for (uint64_t i = 0; i < rounds; ++i) {
      if (read(ab[0], &c, 1) != 1) Die("pong read");
      if (write(ba[1], &c, 1) != 1) Die("pong write");
    }
  });
  const uint32_t ping_tid = Tid();
  char c = 'x';
  for (uint64_t i = 0; i < rounds; ++i) {
    if (write(ab[1], &c, 1) != 1) Die("ping write");
    if (read(ba[0], &c, 1) != 1) Die("ping read");
  }
  pong.join();
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) close(fd);
  return {{"ping_tid", ping_tid}, {"pong_tid", pong_tid}, {"rounds", rounds}};
}

nlohmann::json DoSocketpair(uint64_t rounds) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) Die("socketpair");
  char buf[64] = {};
  const uint64_t t0 = NowNs();
  for (uint64_t i = 0; i < rounds; ++i) {
    if (write(sv[0], buf, sizeof(buf)) != sizeof(buf)) Die("socketpair write");
    if (ReadExactly(sv[1], buf, sizeof(buf)) != sizeof(buf)) Die("socketpair read");
  }
  const uint64_t t1 = NowNs();
  close(sv[0]);
  close(sv[1]);
  return {{"tid", Tid()}, {"rounds", rounds}, {"elapsed_ns", t1 - t0}};
}

// 4 KiB at offset 0, written then read back, K times; O_DIRECT goes to the
// device each time, the page cache does not.
nlohmann::json DoFileRounds(const std::string& dir, uint64_t rounds, bool direct) {
  const std::string path = dir + "/jackdaw-workload-rw-" + std::to_string(getpid()) + ".dat";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0600);
  if (fd < 0) Die("open " + path + (direct ? " (O_DIRECT needs a block-backed directory, not tmpfs)" : ""));
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, 4096) != 0) Die("posix_memalign");
  memset(buf, 0x5a, 4096);
  const uint64_t t0 = NowNs();
  for (uint64_t i = 0; i < rounds; ++i) {
    if (pwrite(fd, buf, 4096, 0) != 4096) Die("pwrite");
    if (pread(fd, buf, 4096, 0) != 4096) Die("pread");
  }
  const uint64_t t1 = NowNs();
  close(fd);
  unlink(path.c_str());
  free(buf);
  return {{"tid", Tid()}, {"rounds", rounds}, {"elapsed_ns", t1 - t0}};
}

// A read() whose count marks the step; its result does not matter (a
// socket that is not connected fails, the enter record is what counts).
void Touch(int fd, size_t step) {
  static char buf[16384];  // above every step's count
  (void)!read(fd, buf, step);
}

nlohmann::json DoFdReuse() {
  nlohmann::json steps = nlohmann::json::array();
  auto step = [&](const char* what, int fd, size_t count, const char* kind) {
    Touch(fd, count);
    steps.push_back({{"what", what}, {"fd", fd}, {"count", count}, {"kind", kind}});
  };
  // 1. socket closed, a file opened at the same number.
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) Die("socket");
  step("socket", s, 1001, "socket");
  close(s);
  int f = open("/proc/self/exe", O_RDONLY);
  if (f != s) Die("the file did not reuse the socket's fd number");
  step("file at the socket's number", f, 1002, "file");
  close(f);
  // 2. dup2 of a file over an open socket.
  int s2 = socket(AF_INET, SOCK_STREAM, 0);
  int f2 = open("/proc/self/exe", O_RDONLY);
  if (s2 < 0 || f2 < 0) Die("socket/open");
  step("socket before dup2", s2, 2001, "socket");
  step("file", f2, 2002, "file");
  if (dup2(f2, s2) != s2) Die("dup2");
  step("file dup2-ed over the socket", s2, 2003, "file");
  close(s2);
  close(f2);
  // 3. close_range, then a pipe at the number.
  int s3 = socket(AF_INET, SOCK_STREAM, 0);
  if (s3 < 0) Die("socket");
  step("socket before close_range", s3, 3001, "socket");
  if (syscall(SYS_close_range, s3, s3, 0) != 0) Die("close_range");
  int p[2];
  if (pipe(p) != 0 || p[0] != s3) Die("pipe did not reuse the closed number");
  if (write(p[1], "x", 1) != 1) Die("pipe write");  // so the read below returns
  step("pipe at the closed number", p[0], 3002, "pipe");
  close(p[0]);
  close(p[1]);
  // 4. The socket is touched on CPU 0 (that CPU's memo of the fd cache now
  // holds it), closed and replaced by a file at its number on CPU 1, and
  // touched again on CPU 0: the change made on one CPU must reach the
  // other's memo. Needs two CPUs; without them the step is left out.
  if (std::thread::hardware_concurrency() >= 2) {
    auto pin = [](int cpu) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0) Die("sched_setaffinity");
    };
    int s4 = socket(AF_INET, SOCK_STREAM, 0);
    if (s4 < 0) Die("socket");
    pin(0);
    step("socket touched on cpu 0", s4, 4001, "socket");
    std::thread other([&] {
      pin(1);
      close(s4);
      if (open("/proc/self/exe", O_RDONLY) != s4) Die("the file did not reuse the socket's fd number");
    });
    other.join();
    step("file at its number, opened on cpu 1, touched on cpu 0", s4, 4002, "file");
    close(s4);
    // 5. and 6. A file's entry lives in the memo of the CPU that opened
    // it (not in the shared cache): replaced on CPU 1 by a socket, then
    // by another file, it must not answer on CPU 0 either time.
    int f5 = open("/proc/self/exe", O_RDONLY);
    if (f5 < 0) Die("open");
    step("file opened and touched on cpu 0", f5, 5001, "file");
    std::thread other5([&] {
      pin(1);
      close(f5);
      if (socket(AF_INET, SOCK_STREAM, 0) != f5) Die("the socket did not reuse the file's fd number");
    });
    other5.join();
    step("socket at its number, made on cpu 1, touched on cpu 0", f5, 5002, "socket");
    close(f5);
    int f6 = open("/proc/self/exe", O_RDONLY);
    if (f6 < 0) Die("open");
    step("file opened and touched on cpu 0 (again)", f6, 6001, "file");
    std::thread other6([&] {
      pin(1);
      close(f6);
      if (open("/proc/self/cmdline", O_RDONLY) != f6) Die("the file did not reuse the file's fd number");
    });
    other6.join();
    step("another file at its number, opened on cpu 1, touched on cpu 0", f6, 6002, "file");
    // 7. No close in between: dup2 on CPU 1 of another file over it.
    std::thread other7([&] {
      pin(1);
      int g = open("/proc/self/exe", O_RDONLY);
      if (g < 0 || dup2(g, f6) != f6) Die("dup2");
      close(g);
    });
    other7.join();
    step("a file dup2-ed over it on cpu 1, touched on cpu 0", f6, 7001, "file");
    close(f6);
    // 8. and 9. An fd that comes back without a call the fd cache sees: a
    // socket received over a unix socket (SCM_RIGHTS) at a closed file's
    // number. The file's close skips the cache's delete when this CPU's
    // memo says the cache never held it; in 8 a read on CPU 1 put it
    // there meanwhile (that insert must void the memo's word), in 9 it
    // was never there (the close's own memo entry must answer no lookup).
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
    auto receive_socket_at = [&](int want) {
      int give = socket(AF_INET, SOCK_STREAM, 0);
      if (give < 0) Die("socket");
      char data = 'f', cbuf[CMSG_SPACE(sizeof(int))] = {};
      iovec iov{&data, 1};
      msghdr m{};
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = cbuf;
      m.msg_controllen = sizeof(cbuf);
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(c), &give, sizeof(int));
      if (sendmsg(sv[0], &m, 0) != 1) Die("sendmsg");
      close(give);  // frees the number below `want` it took, if any
      memset(cbuf, 0, sizeof(cbuf));
      m.msg_controllen = sizeof(cbuf);
      if (recvmsg(sv[1], &m, 0) != 1) Die("recvmsg");
      int got = -1;
      if ((c = CMSG_FIRSTHDR(&m)) == nullptr) Die("no fd received");
      memcpy(&got, CMSG_DATA(c), sizeof(int));
      if (got != want) Die("the received socket did not take the file's fd number");
    };
    int f8 = open("/proc/self/exe", O_RDONLY);
    if (f8 < 0) Die("open");
    std::thread other8([&] {
      pin(1);
      Touch(f8, 8001);
    });
    other8.join();
    steps.push_back({{"what", "file opened on cpu 0, touched on cpu 1"}, {"fd", f8}, {"count", 8001}, {"kind", "file"}});
    close(f8);
    receive_socket_at(f8);
    step("socket received at its number on cpu 0", f8, 8002, "socket");
    close(f8);
    int f9 = open("/proc/self/exe", O_RDONLY);
    if (f9 < 0) Die("open");
    step("file opened, touched and closed on cpu 0", f9, 9001, "file");
    close(f9);
    receive_socket_at(f9);
    step("socket received at its number on cpu 0 (again)", f9, 9002, "socket");
    close(f9);
    close(sv[0]);
    close(sv[1]);
  }
  return steps;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"jackdaw-workload: a process with exactly known kernel behaviour (for tests and the demo).\n"
               "Prints a JSON report of thread ids, counts and bytes on stdout.\n"
               "  jackdaw-workload --getppid 1000 --pipe-rounds 100",
               "jackdaw-workload"};
  uint64_t getppid_calls = 0, pipe_rounds = 0;
  size_t direct_bytes = 0;
  std::string dir = "/var/tmp";
  std::vector<size_t> tcp;
  app.add_option("--getppid", getppid_calls, "getppid() calls");
  app.add_option("--direct-io", direct_bytes, "bytes written then read with O_DIRECT (multiple of 4096)")
      ->check([](const std::string& s) { return std::stoull(s) % 4096 ? "must be a multiple of 4096" : ""; });
  app.add_option("--dir", dir, "directory for the O_DIRECT file (must be block-backed)")->capture_default_str();
  app.add_option("--tcp", tcp, "C2S S2C: bytes client->server and server->client over loopback")
      ->expected(2);
  app.add_option("--pipe-rounds", pipe_rounds, "pipe ping-pong round trips between two threads");
  uint64_t socketpair_rounds = 0, file_rounds = 0, disk_rounds = 0;
  app.add_option("--socketpair-rounds", socketpair_rounds, "64-byte write+read round trips on a unix socket pair");
  app.add_option("--file-rounds", file_rounds, "4 KiB pwrite+pread round trips on a page-cached file in --dir");
  app.add_option("--disk-rounds", disk_rounds, "4 KiB O_DIRECT pwrite+pread round trips on a file in --dir");
  bool fd_reuse = false;
  app.add_flag("--fd-reuse", fd_reuse, "reuse fd numbers for other objects (socket, file, dup2, close_range)");
  CLI11_PARSE(app, argc, argv);
  nlohmann::json report = {{"pid", getpid()}};
  if (getppid_calls) report["getppid"] = DoGetppid(getppid_calls);
  if (direct_bytes) report["direct_io"] = DoDirectIo(dir, direct_bytes);
  if (tcp.size() == 2) report["tcp"] = DoTcp(tcp[0], tcp[1]);
  if (pipe_rounds) report["pipe"] = DoPipe(pipe_rounds);
  if (socketpair_rounds) report["socketpair"] = DoSocketpair(socketpair_rounds);
  if (file_rounds) report["file"] = DoFileRounds(dir, file_rounds, false);
  if (disk_rounds) report["disk"] = DoFileRounds(dir, disk_rounds, true);
  if (fd_reuse) report["fd_reuse"] = DoFdReuse();
  printf("%s\n", report.dump().c_str());
  return 0;
}
