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
#include <arpa/inet.h>
#include <fcntl.h>
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
  CLI11_PARSE(app, argc, argv);
  nlohmann::json report = {{"pid", getpid()}};
  if (getppid_calls) report["getppid"] = DoGetppid(getppid_calls);
  if (direct_bytes) report["direct_io"] = DoDirectIo(dir, direct_bytes);
  if (tcp.size() == 2) report["tcp"] = DoTcp(tcp[0], tcp[1]);
  if (pipe_rounds) report["pipe"] = DoPipe(pipe_rounds);
  printf("%s\n", report.dump().c_str());
  return 0;
}
