// SocketTracker's unix-domain half: pairing the two ends of a unix stream
// connection. A unix socket has no address pair to look its peer up by;
// the capture names the peer socket itself (unix_sk(sk)->peer), which is
// the identity the peer's own syscalls and sock_info carry. Each end's
// description is enough to find the other (PeerOf); when both are
// described, each also learns which process holds the other, which is
// more exact than SO_PEERCRED (that names the process that called listen()
// or connect(), not one that inherited the socket: a php-fpm worker's
// accepted socket is the worker's, the listener the master's).
#include <cstring>

#include "join/endpoint_format.h"
#include "join/socket_tracker.h"

namespace jackdaw::join {

void SocketTracker::PairUnix(SockEntry& e, const jdw_sock_info& si, uint32_t tgid) {
  e.peer_sk = si.peer_sk;
  e.owner_tgid = tgid;
  e.peer_tgid = si.peer_tgid;
  e.unix_flags = si.unix_flags;
  e.path_len = si.path_len;
  memcpy(e.path, si.path, sizeof(e.path));
  const uint32_t* pi = si.peer_sk && si.peer_sk != si.sk ? index_.Find(si.peer_sk) : nullptr;
  if (!pi) return;
  SockEntry& p = socks_[*pi];
  // The peer's memory may already serve another connection: only a peer
  // that names this socket back is this connection's other end.
  if (p.family != kAfUnix || p.peer_sk != si.sk) return;
  if (p.owner_tgid) e.peer_tgid = p.owner_tgid;
  if (tgid && p.peer_tgid != tgid) {
    p.peer_tgid = tgid;
    epoch_++;  // sets holding a copy of p refresh it (NoteInSet)
  }
}

}  // namespace jackdaw::join
