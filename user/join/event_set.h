// The join's event sets (Magpie §3: the union-find classes that become
// requests) and what they hold, shared by the extractor, which builds them,
// the trackers that add to them (early packets) and the request builder,
// which turns a finished one into a model::Request.
//
// An event is stored compactly (Ev): its symbol as an id into the join's
// SymbolTable, its off-CPU period as an index into the set's offs, and the
// resources it consumed. Sequence numbers follow processing order, which is
// timestamp order, so (ts, seq) orders a set's events.
#pragma once

#include <cstdint>
#include <vector>

#include "jackdaw/abi.h"
#include "join/flat_map.h"
#include "request/request.h"

namespace jackdaw::join {

// An open valid-interval's key: (attribute, value). Also keys pending SYNC
// sources, with the statement's index as `attr`.
struct IKey {
  uint64_t value;
  uint32_t attr;
  uint32_t pad;  // no initializer: the join keeps 16 of these on its stack per event
  bool operator==(const IKey& o) const { return value == o.value && attr == o.attr; }
};
struct IKeyHash {
  uint64_t operator()(const IKey& k) const { return Mix64(k.value ^ (uint64_t{k.attr} << 48) ^ k.attr); }
};

enum EvFlags : uint8_t {
  kEvIrq = 1,
  kEvWait = 2,
  kEvNetIn = 4,
  kEvNetOut = 8,
  kEvDisk = 16,
  kEvPush = 32,  // a TCP segment with PSH (the end of a peer's write)
};

// Off-CPU time is split by model::BlockReason; this many reasons exist.
inline constexpr int kBlockReasons = 6;

struct Ev {
  uint64_t seq;
  uint64_t ts;
  uint64_t cpu_ns;
  uint32_t tid;
  uint32_t tgid;
  uint32_t symbol;
  uint32_t bytes;
  uint32_t payload;  // TCP payload bytes of a packet (in the struct's padding)
  uint32_t off;  // 1 + index into Set::offs, 0 = none
  uint16_t cpu;
  uint16_t record_type;
  uint8_t synth;  // model::SyntheticKind
  uint8_t flags;  // EvFlags
};

// An off-CPU period ending right before an event.
struct OffCpu {
  uint64_t off_from;  // switch-out
  uint64_t wake;      // end of blocked part (== off_from when preempted)
  uint64_t run;       // switch-in
  uint8_t reason;     // model::BlockReason of the blocked part
  // Earlier periods since the thread's previous joined event, summed; only
  // charged if they all lie inside the request.
  uint64_t early_from;
  uint64_t early_runq;
  uint64_t early_blocked[kBlockReasons];
};

// Off-CPU time already clipped and summed (off_cpu.h), by what
// RequestBuilder reports: blocked time per model::BlockReason, run-queue wait.
struct OffCpuSums {
  uint64_t runq = 0;
  uint64_t blocked[kBlockReasons] = {};
  void Add(const OffCpuSums& o) {
    runq += o.runq;
    for (int r = 0; r < kBlockReasons; r++) blocked[r] += o.blocked[r];
  }
};

// A causal edge candidate: materialised only if both ends are in the
// emitted request.
struct EdgeCand {
  uint64_t from_seq;
  uint64_t to_seq;
  uint64_t sig_ts;
  uint32_t from_tid;
  uint16_t from_cpu;
  uint8_t is_sync;
};

// A socket's current connection, as its last sock_info named it.
struct SockEntry {
  uint16_t family = 0;
  uint16_t sport = 0, dport = 0;
  uint8_t saddr[16] = {}, daddr[16] = {};
  uint64_t info_ts = 0;
  // Bumped when a sock_info gives this sk another connection: the kernel
  // reuses a freed socket's memory for the next accept at once.
  uint32_t gen = 0;
  uint64_t since = 0;  // when it got its current connection
  uint64_t sk = 0;     // owner of the slot
  // AF_UNIX (family 1; see jdw_sock_info): the peer socket, the process
  // whose sock_info described this socket, the process at the other end
  // (the one that described peer_sk when it is traced, else SO_PEERCRED's),
  // and the connection's name.
  uint64_t peer_sk = 0;
  uint32_t owner_tgid = 0;
  uint32_t peer_tgid = 0;
  uint8_t unix_flags = 0;
  uint16_t path_len = 0;
  char path[JDW_UNIX_PATH_LEN] = {};
};

// A connection a set used, copied when it joined: by the time the set is
// emitted its sk may already serve the next connection.
struct SetSock {
  uint64_t sk;
  uint32_t slot;     // socket table slot it was copied from (checked against sk/gen before use)
  uint64_t checked;  // socket epoch when last found current
  SockEntry conn;
};

struct Set {
  std::vector<Ev> events;
  std::vector<IKey> open_keys;
  std::vector<OffCpu> offs;
  // Periods settled out of offs (off_cpu.h), and the offs size at which
  // the extractor settles again (0: the default mark).
  OffCpuSums settled;
  size_t settle_at = 0;
  std::vector<EdgeCand> edges;
  std::vector<SetSock> socks;
  uint32_t open = 0;
  bool live = false;
  bool seed = false;
  uint32_t seed_tgid = 0;
  uint64_t first_ts = 0, last_ts = 0;
  // The message exchange this set is (schemas with `messages`), filled in
  // when the exchange ends: a request's connection and place on it; or,
  // for an exchange that is the connection's (a last message never
  // answered), the socket whose connection takes its resources.
  bool has_msg = false;
  bool pipelined = false;
  uint32_t msg_index = 0;
  uint64_t msg_conn = 0;
  uint64_t msg_in = 0, msg_out = 0;
  uint64_t conn_sk = 0;
  // The exchange whose start seeded the set (its message key; 0 when the
  // seed was no exchange's start): the front of a request that crossed
  // processes. Other exchanges in the set are the peers' parts of its calls.
  uint64_t seed_msg = 0;
  // Calls its threads made on connections they opened (call_tracker.h),
  // and its share of its front connection's life.
  std::vector<model::Call> calls;
  // Calls begun in this set that have not ended yet (their connection's
  // socket and key): a set emitted first takes them as they stand.
  struct CallRef {
    uint64_t conn, key;
  };
  std::vector<CallRef> open_calls;
  uint64_t connection_cpu_ns = 0;
  // The connection whose life the first thread that joined this set had
  // just worked on (Thread::life_sk): a set that uses no socket and is
  // discarded is that thread's work on it, up to its sleep.
  uint64_t life_sk = 0, life_conn = 0;
};

}  // namespace jackdaw::join
