#include "capture/listeners.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace jackdaw::capture {
namespace {

uint16_t BoundPort(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

int Bound(int type) {
  const int fd = socket(AF_INET, type, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

bool Has(const std::vector<uint16_t>& v, uint16_t p) { return std::find(v.begin(), v.end(), p) != v.end(); }

TEST(ListeningPorts, ListenerAndBoundUdpAreFoundBoundTcpIsNot) {
  const int listener = Bound(SOCK_STREAM);
  ASSERT_EQ(listen(listener, 4), 0);
  const int udp = Bound(SOCK_DGRAM);
  const int idle = Bound(SOCK_STREAM);  // bound, never listening: no connections can arrive
  const auto ports = ListeningPortsOf(getpid());
  EXPECT_TRUE(Has(ports, BoundPort(listener)));
  EXPECT_TRUE(Has(ports, BoundPort(udp)));
  EXPECT_FALSE(Has(ports, BoundPort(idle)));
  close(listener);
  EXPECT_FALSE(Has(ListeningPortsOf(getpid()), BoundPort(listener)));
  close(udp);
  close(idle);
}

TEST(ListeningPorts, AProcessThatIsGoneHasNone) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int st;
  waitpid(child, &st, 0);
  EXPECT_TRUE(ListeningPortsOf(child).empty());
}

}  // namespace
}  // namespace jackdaw::capture
