// The unix-domain half of SocketTracker and the endpoints it names: the
// two ends of a unix stream connection pair by identity, whichever is
// described first; each end learns which process holds the other; reused
// socket memory is another connection; unix sockets never claim a
// packet's connection.
#include <cstring>
#include <string>
#include <unordered_map>

#include <gtest/gtest.h>

#include "join/endpoint_format.h"
#include "join/sock_endpoint.h"
#include "join/socket_tracker.h"

namespace jackdaw::join {
namespace {

constexpr uint64_t kClient = 0xc1, kServer = 0x5e;
constexpr uint32_t kListenerPid = 10, kWorkerPid = 11, kClientPid = 20;

jdw_sock_info Unix(uint64_t sk, uint64_t peer, uint32_t peercred, uint8_t flags, const std::string& path) {
  jdw_sock_info si{};
  si.sk = sk;
  si.family = kAfUnix;
  si.sock_type = 1;
  si.peer_sk = peer;
  si.peer_tgid = peercred;
  si.unix_flags = path.empty() ? 0 : flags;
  si.path_len = static_cast<uint16_t>(path.empty() ? 0 : path.size() + 1);  // the kernel counts a path's NUL
  memcpy(si.path, path.data(), std::min(path.size(), sizeof(si.path)));
  return si;
}

// connect() in the client: SO_PEERCRED names the process that listened.
jdw_sock_info ClientEnd() { return Unix(kClient, kServer, kListenerPid, JDW_UNIX_PATH_PEER, "/run/app.sock"); }
// accept() in a worker: the accepted socket carries its listener's name.
jdw_sock_info ServerEnd() { return Unix(kServer, kClient, kClientPid, JDW_UNIX_PATH_OWN, "/run/app.sock"); }

TEST(UnixSockets, EndsPairByIdentityAndNameEachOthersProcess) {
  SocketTracker t;
  EXPECT_EQ(t.OnSockInfo(ClientEnd(), 100, kClientPid), 0u) << "no packet ever names a unix connection";
  EXPECT_EQ(t.OnSockInfo(ServerEnd(), 200, kWorkerPid), 0u);
  EXPECT_EQ(t.PeerOf(kClient), kServer);
  EXPECT_EQ(t.PeerOf(kServer), kClient);
  // The worker that accepted, not the master SO_PEERCRED names.
  EXPECT_EQ(t.Current(kClient)->peer_tgid, kWorkerPid);
  EXPECT_EQ(t.Current(kServer)->peer_tgid, kClientPid);
}

TEST(UnixSockets, OneDescribedEndIsEnoughToFindThePeer) {
  SocketTracker t;
  t.OnSockInfo(ServerEnd(), 200, kWorkerPid);
  EXPECT_EQ(t.PeerOf(kServer), kClient);
  EXPECT_EQ(t.Current(kServer)->peer_tgid, kClientPid) << "SO_PEERCRED while the peer is not described";
  EXPECT_EQ(t.PeerOf(kClient), 0u) << "the client's own end was never described";
}

TEST(UnixSockets, ServerDescribedFirstLearnsTheClientsProcessLater) {
  SocketTracker t;
  t.OnSockInfo(Unix(kServer, kClient, 0, JDW_UNIX_PATH_OWN, "/run/app.sock"), 100, kWorkerPid);
  EXPECT_EQ(t.Current(kServer)->peer_tgid, 0u);
  t.OnSockInfo(ClientEnd(), 200, kClientPid);
  EXPECT_EQ(t.Current(kServer)->peer_tgid, kClientPid);
  EXPECT_EQ(t.Current(kClient)->peer_tgid, kWorkerPid);
}

TEST(UnixSockets, ReusedMemoryIsAnotherConnectionAndAStalePeerIsNotBelieved) {
  SocketTracker t;
  t.OnSockInfo(ServerEnd(), 100, kWorkerPid);
  const uint32_t gen = t.Current(kServer)->gen;
  // The same memory accepts another client: a new generation, its peer new.
  t.OnSockInfo(Unix(kServer, 0xc2, 21, JDW_UNIX_PATH_OWN, "/run/app.sock"), 300, kWorkerPid);
  EXPECT_GT(t.Current(kServer)->gen, gen);
  EXPECT_EQ(t.PeerOf(kServer), 0xc2u);
  // The old client still names kServer, but kServer no longer names it
  // back: the old client learns no process from it.
  t.OnSockInfo(ClientEnd(), 400, kClientPid);
  EXPECT_EQ(t.Current(kClient)->peer_tgid, kListenerPid);
  EXPECT_EQ(t.Current(kServer)->peer_tgid, 21u);
}

TEST(UnixSockets, SwappedEndsOfAReusedPairAreAnotherConnection) {
  SocketTracker t;
  // A worker's accepted end (kServer) of a connection from kClient; then
  // both are freed and handed out again swapped: kServer's memory is the
  // next client's end, its peer kClient's memory, now the accepted end.
  t.OnSockInfo(ServerEnd(), 100, kWorkerPid);
  const uint32_t gen = t.Current(kServer)->gen;
  const jdw_sock_info next_client = Unix(kServer, kClient, kListenerPid, JDW_UNIX_PATH_PEER, "/run/app.sock");
  EXPECT_TRUE(t.DescribesAnother(next_client));
  t.OnSockInfo(next_client, 300, kClientPid);
  EXPECT_GT(t.Current(kServer)->gen, gen);
}

TEST(UnixSockets, SameDescriptionAgainIsTheSameConnection) {
  SocketTracker t;
  t.OnSockInfo(ServerEnd(), 100, kWorkerPid);
  const uint32_t gen = t.Current(kServer)->gen;
  t.OnSockInfo(ServerEnd(), 200, kWorkerPid);
  EXPECT_EQ(t.Current(kServer)->gen, gen);
  EXPECT_EQ(t.ConnectedSince(kServer), 100u);
}

TEST(UnixSockets, NeverClaimAPacketsConnection) {
  SocketTracker t;
  t.OnSockInfo(ServerEnd(), 100, kWorkerPid);
  t.OnSockInfo(ClientEnd(), 100, kClientPid);
  const uint8_t zero[16] = {};
  EXPECT_EQ(t.SocketOf(ConnKey(kAfUnix, zero, 0, zero, 0)), 0u);
  EXPECT_EQ(t.SocketOf(ConnKey(kAfInet, zero, 0, zero, 0)), 0u);
}

TEST(UnixSockets, ASetsCopyLearnsThePeersProcess) {
  SocketTracker t;
  t.OnSockInfo(Unix(kServer, kClient, 0, JDW_UNIX_PATH_OWN, "/run/app.sock"), 100, kWorkerPid);
  Set s;
  t.NoteInSet(s, kServer, nullptr, false);
  ASSERT_EQ(s.socks.size(), 1u);
  EXPECT_EQ(s.socks[0].conn.peer_tgid, 0u);
  t.OnSockInfo(ClientEnd(), 200, kClientPid);
  t.NoteInSet(s, kServer, nullptr, false);
  ASSERT_EQ(s.socks.size(), 1u) << "the same connection, noted once";
  EXPECT_EQ(s.socks[0].conn.peer_tgid, kClientPid);
}

TEST(UnixEndpoints, NameEachEndAndThePeerProcess) {
  SocketTracker t;
  t.OnSockInfo(ServerEnd(), 100, kWorkerPid);
  t.OnSockInfo(ClientEnd(), 100, kClientPid);
  const std::unordered_map<uint32_t, std::string> comms = {{kClientPid, "nginx"}, {kWorkerPid, "php-fpm8.2"}};
  const model::Endpoint server = EndpointOf(*t.Current(kServer), &comms);
  EXPECT_EQ(server.local, "unix:/run/app.sock");
  EXPECT_EQ(server.remote, "unix:");
  EXPECT_EQ(server.peer_tgid, kClientPid);
  EXPECT_EQ(server.peer_comm, "nginx");
  const model::Endpoint client = EndpointOf(*t.Current(kClient), &comms);
  EXPECT_EQ(client.local, "unix:");
  EXPECT_EQ(client.remote, "unix:/run/app.sock");
  EXPECT_EQ(client.peer_tgid, kWorkerPid);
  EXPECT_EQ(client.peer_comm, "php-fpm8.2");
  // A peer the trace never named: its pid, no name.
  EXPECT_EQ(EndpointOf(*t.Current(kServer), nullptr).peer_comm, "");
}

TEST(UnixEndpoints, AbstractCutAndUnnamedNames) {
  SockEntry e;
  e.family = kAfUnix;
  const std::string abstract("\0jackdaw", 8);
  e.path_len = static_cast<uint16_t>(abstract.size());
  memcpy(e.path, abstract.data(), abstract.size());
  EXPECT_EQ(UnixName(e), "@jackdaw");
  SockEntry cut;
  cut.family = kAfUnix;
  const std::string longer(JDW_UNIX_PATH_LEN + 20, 'x');
  cut.path_len = static_cast<uint16_t>(longer.size());
  memcpy(cut.path, longer.data(), sizeof(cut.path));
  EXPECT_EQ(UnixName(cut), std::string(JDW_UNIX_PATH_LEN, 'x') + "...");
  // A path that fills the field exactly, its NUL counted: whole.
  SockEntry full;
  full.family = kAfUnix;
  full.path_len = JDW_UNIX_PATH_LEN + 1;
  memset(full.path, 'y', sizeof(full.path));
  EXPECT_EQ(UnixName(full), std::string(JDW_UNIX_PATH_LEN, 'y'));
  SockEntry pair;  // a socketpair: no name either end
  pair.family = kAfUnix;
  EXPECT_EQ(UnixName(pair), "");
  const model::Endpoint ep = EndpointOf(pair, nullptr);
  EXPECT_EQ(ep.local, "unix:");
  EXPECT_EQ(ep.remote, "unix:");
  // IP endpoints are as before: no peer process.
  SockEntry ip;
  ip.family = kAfInet;
  ip.sport = 80;
  ip.dport = 40000;
  ip.saddr[0] = ip.daddr[0] = 127;
  ip.saddr[3] = ip.daddr[3] = 1;
  const model::Endpoint tcp = EndpointOf(ip, nullptr);
  EXPECT_EQ(tcp.local, "127.0.0.1:80");
  EXPECT_EQ(tcp.remote, "127.0.0.1:40000");
  EXPECT_EQ(tcp.peer_tgid, 0u);
}

}  // namespace
}  // namespace jackdaw::join
