#include "join/extractor.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "join/flat_map.h"
#include "reorder/reorderer.h"

namespace jackdaw::join {

// Extractor::Impl — the temporal join.
//
// Data structures (Magpie Figure 7, with union-find instead of lists):
//  - live_: (attribute, value) -> set slot, one entry per OPEN valid-interval.
//    Closed intervals are simply erased: nothing can join through them again,
//    which is the whole point of temporal joins.
//  - sets_: slab of event sets. A set owns its events, the keys of its open
//    intervals (lazily pruned), off-CPU records, causal-edge candidates and
//    sockets. Sets are the union-find classes; instead of parent pointers a
//    union moves the smaller set into the larger and re-points the smaller
//    one's open intervals (small-to-large, O(n log n) overall), so every live_
//    entry always names a root and a finished set's slot can be reused at
//    once. A set is finished when its count of open intervals drops to 0.
//  - threads_: per-thread kernel state kept for every thread regardless of
//    the schema: run state from sched_switch (for CPU and off-CPU time), the
//    syscall it is in (block reason, sys_exit fallbacks), its last socket,
//    a pending wakeup edge, the last values it bound for SYNC attributes.
//
// Per record, in global timestamp order:
//  1. kernel bookkeeping that must precede the event (CPU charged up to now);
//  2. match the schema's definitions for this record (first match wins) and
//     read each binding's value; value 0 means "absent" and skips the binding
//     (tid 0 is the idle task, arg0 = 0 is "no request id yet", obj 0 is "no
//     object"); header tid/tgid are absent in interrupt context (they name
//     the interrupted task, not the event's owner);
//  3. join: the sets of every open interval hit by a BASIC or STOP binding
//     are unioned (a START does not join the interval it replaces); if there
//     is none a new set is created. Then intervals are updated in binding
//     order: START closes the open interval (its old set may finish) and
//     opens a new one in this set; BASIC with no open interval opens one (so
//     a thread already running when tracing began, or an attribute whose
//     first sighting is not a START, still joins what follows — until a STOP
//     or a START closes it); STOP closes the interval it joined, and is a
//     no-op (joins nothing) when none is open;
//  4. charge resources to the event (below) and append it to its set;
//  5. if the set has no open interval left it is finished: emitted iff it
//     holds a seed event, otherwise discarded.
//
// Resource accounting:
//  - CPU: a thread's run time (between its switch-in and switch-out) accrues
//    as "pending"; each event of that thread that joins a set takes the
//    pending time (RequestEvent::cpu_ns). Pending time does not survive a
//    blocking switch-out that was not itself joined: it is dropped and
//    counted (cpu_dropped_ns), because it is not known to belong to the set
//    the thread joins after it wakes. Preemption keeps it.
//  - Off-CPU: a thread's last off-CPU period before a joined event (blocked
//    from switch-out to wakeup, runnable from wakeup or preemption to
//    switch-in) is attached to that event; when the request is emitted the
//    period is clipped to the request's start, so idle time of a pool thread
//    waiting for work is not charged to the request that wakes it. Blocked
//    time is split by the syscall the thread was in when it blocked.
//  - Interrupt context: records with ctx != TASK never charge the
//    interrupted task's CPU to their set; see Options::irq_burst_gap_ns.
//  - Disk bytes from block_complete, packet bytes from net_xmit/net_recv, to
//    the set that record joins.
//
// Causality: a sched_wakeup in task context records (waker event, ts) on the
// wakee; the wakee's next joined event becomes the edge's target. SYNC
// sources leave (statement, attribute value) -> source event; a destination
// with the same value consumes it. Either way the candidate edge is stored in
// the target's set and materialised (Signal after the source, Resume before
// the target, CausalEdge between them) only if both ends are in the emitted
// request.
//
// Memory: sets, intervals, pending syncs and sockets are freed when they
// finish or time out; thread state on task_exit or after a long silence.
// Nothing grows with trace length.
class Extractor::Impl {
 public:
  Impl(const schema::Schema& schema, const trace::TraceMeta& meta, Options opts, RequestSink sink);
  Status Init();
  void Push(const jdw_record_header* rec);
  void Finish();
  const Stats& stats() const { return stats_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr size_t kMaxBindings = 16;
  static constexpr uint8_t kDirIn = 1, kDirOut = 2;

  struct IKey {
    uint64_t value;
    uint32_t attr;
    uint32_t pad;  // no initializer: Join() keeps 16 of these on its stack per event
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
  };
  struct Ev {
    uint64_t seq;
    uint64_t ts;
    uint64_t cpu_ns;
    uint32_t tid;
    uint32_t tgid;
    uint32_t symbol;
    uint32_t bytes;
    uint32_t off;  // 1 + index into Set::offs, 0 = none
    uint16_t cpu;
    uint16_t record_type;
    uint8_t synth;  // model::SyntheticKind
    uint8_t flags;
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
    uint64_t early_blocked[6];
  };
  struct EdgeCand {
    uint64_t from_seq;
    uint64_t to_seq;
    uint64_t sig_ts;
    uint32_t from_tid;
    uint16_t from_cpu;
    uint8_t is_sync;
  };
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
  };
  // A connection a set used, copied when it joined: by the time the set is
  // emitted its sk may already serve the next connection.
  struct SetSock {
    uint64_t sk;
    uint32_t slot;     // socks_ index it was copied from (checked against sk/gen before use)
    uint64_t checked;  // sock_epoch_ when last found current
    SockEntry conn;
  };
  struct Set {
    std::vector<Ev> events;
    std::vector<IKey> open_keys;
    std::vector<OffCpu> offs;
    std::vector<EdgeCand> edges;
    std::vector<SetSock> socks;
    uint32_t open = 0;
    bool live = false;
    bool seed = false;
    uint32_t seed_tgid = 0;
    uint64_t first_ts = 0, last_ts = 0;
  };
  struct SyncVal {
    uint32_t attr;
    uint64_t value;
  };
  enum class Off : uint8_t { kNone, kBlocked, kRunnable };
  struct Thread {
    uint32_t tid = 0, tgid = 0;
    bool on_cpu = false;
    bool last_out_blocked = true;
    Off off = Off::kNone;
    uint8_t block_reason = 0;
    uint64_t acct_from = 0;
    uint64_t cpu_pending = 0;
    uint64_t irq_steal = 0;
    uint64_t off_since = 0, wake_ts = 0;
    bool has_off = false;
    OffCpu pend_off{};
    // syscall in progress
    int32_t sys_nr = -1;
    uint8_t sys_obj_kind = 0;
    int32_t sys_fd = -1;
    uint64_t sys_obj = 0, sys_arg = 0;
    uint64_t sys_ts = 0;  // of the syscall's enter
    uint64_t last_sock = 0;
    uint64_t last_sock_ts = 0;  // when it last used last_sock
    bool sock_used = false;  // socket syscall since it last woke from a sleep
    bool conn_open = false;  // last socket read/write was on a socket it has not closed since
    uint64_t sleep_futex = 0;  // futex address it sleeps on (counted in futex_sleepers_)
    uint32_t acct_tgid = 0, acct_idx = 0;  // cache of Acct(tgid): 1 + index
    bool wake_synth = false;   // woken by FutexWoke; the kernel's record is still to come
    // wakeup edge pending for this thread's next joined event
    bool wake_edge = false;
    EdgeCand wake{};
    uint64_t last_joined_seq = 0;
    uint64_t last_seen = 0;
    std::vector<SyncVal> sync_vals;
  };
  struct CpuState {
    uint64_t last_irq_ts = 0;
    bool irq_run = false;  // last record on this CPU was in irq context
    uint32_t cur_tid = 0;  // switched in by the last sched_switch here
    uint64_t last_task_ts = 0;  // last sched_switch or task-context record here
  };
  struct PendingSync {
    uint64_t seq, ts;
    uint32_t tid;
    uint16_t cpu;
  };
  struct Closed {
    uint64_t ts, sk;
  };
  // Per-record evaluation context.
  struct Ctx {
    const jdw_record_header* rec;
    const uint8_t* payload;
    size_t payload_len;
    uint64_t ts;  // mono ns
    schema::EventKind kind;
    Thread* thread;  // the thread the event is about (nullptr in irq context / tid 0)
    uint32_t tid, tgid;
    bool irq;
    bool after_block;
    int32_t in_syscall;
    // SockOf() result, computed at most once per record.
    mutable bool sock_done = false;
    mutable uint64_t sock = 0;
    // `ctx` as the schema sees it, where the join knows better than the
    // header (a remote wakeup attributed to its waker): -1 = the header's.
    int16_t ctx = -1;
  };

  // --- setup
  void BuildDispatch();
  uint32_t Symbol(uint64_t key, const std::string& (*make)(Impl*, uint64_t));

  // --- per record
  void Process(const reorder::SortedRecord& sr);
  void HandleSwitch(const reorder::SortedRecord& sr, uint64_t ts);
  void RunEvent(Ctx& c, const std::vector<uint16_t>* defs);
  bool Matches(const schema::EventDef& def, const Ctx& c);
  uint64_t Read(const schema::FieldRef& f, const Ctx& c, bool* ok);
  uint64_t ReadPayload(const Ctx& c, uint16_t offset, uint8_t size, bool is_signed, bool* ok);
  void Join(Ctx& c, uint16_t def_idx);
  uint32_t EventSymbol(const Ctx& c);
  uint32_t* KnownSymbolSlot(const Ctx& c);
  uint32_t SymbolOfKey(const Ctx& c);

  // --- threads
  // One or two per record, nearly always of a thread in the cache: that
  // case inline, the table lookup and creation out of line.
  Thread* GetThread(uint32_t tid, uint32_t tgid, uint64_t ts, bool running_now) {
    if (tid == 0) return nullptr;  // the idle task: never a request thread
    const ThreadCacheEntry& ce = thread_cache_[tid & 255];
    if (ce.tid != tid) return LookUpThread(tid, tgid, ts, running_now);
    Thread* t = ce.t;
    if (tgid) t->tgid = tgid;
    t->last_seen = ts;
    return t;
  }
  Thread* LookUpThread(uint32_t tid, uint32_t tgid, uint64_t ts, bool running_now);
  // The thread is on CPU from `ts` (a switch-in, or an inferred one): closes
  // its off-CPU period.
  void StartRunning(Thread* t, uint64_t ts);
  // A record of `t` on `cpu` at `ts` while the sched records have it off
  // CPU: its switch-in was lost. See Options::infer_lost_switch_in.
  void RunningWithoutSwitchIn(Thread* t, uint16_t cpu, uint64_t ts);
  void ChargeRun(Thread* t, uint64_t ts);
  uint8_t ReasonOf(const Thread* t) const;

  // --- sets
  uint32_t NewSet(uint64_t ts);
  uint32_t Union(uint32_t a, uint32_t b);
  void OpenInterval(const IKey& k, uint32_t set);
  // Applies the schema's cascades after `set` lost an interval of `attr`;
  // true if that closed its last open interval.
  bool Cascade(uint32_t set, uint32_t attr);
  void FinishSet(uint32_t slot, bool timed_out);
  void FreeSet(uint32_t slot);
  void Emit(Set& s, bool timed_out);
  void Gc(uint64_t now);

  // --- sockets
  uint64_t SockOf(const Ctx& c);
  // Records the connection `sk` stands for (now) among the set's.
  void NoteSock(Set& s, const Ctx& c, uint64_t sk);
  uint64_t ComputeSock(const Ctx& c);
  uint64_t ConnKey(uint16_t family, const uint8_t* laddr, uint16_t lport, const uint8_t* raddr,
                   uint16_t rport) const;
  // A packet's connection as its local socket names it: a received
  // packet's destination is the local end.
  uint64_t LocalConnKey(uint16_t type, const jdw_net_packet& p) const {
    return type == JDW_EVENT_NET_RECV ? ConnKey(p.family, p.daddr, p.dport, p.saddr, p.sport)
                                      : ConnKey(p.family, p.saddr, p.sport, p.daddr, p.dport);
  }
  void OnSockInfo(const Ctx& c);
  uint64_t TakeIrqCpu(const Ctx& c);
  Ev EventOf(const Ctx& c);
  void HoldEarlyPacket(const Ctx& c);
  void JoinEarlyPackets(Set& s, uint64_t sk);
  std::string FormatAddr(uint16_t family, const uint8_t* addr, uint16_t port) const;

  uint64_t ToNs(uint64_t ts) const {
    return time_.base == trace::Timebase::kMonoNs ? ts : time_.ToMonoNs(ts);
  }

  const schema::Schema schema_;
  trace::TimeConverter time_;
  std::vector<std::string> app_probes_;
  Options opts_;
  RequestSink sink_;
  reorder::Reorderer reorder_;
  uint64_t timeout_ns_;
  uint64_t max_age_ns_;
  uint64_t gc_every_ns_;
  uint64_t next_gc_ = 0;
  uint64_t now_ = 0;

  // dispatch: record type -> candidate defs (kRecord); per syscall nr for sys_*
  std::array<std::vector<uint16_t>, JDW_EVENT_MAX> by_type_;
  std::vector<std::vector<uint16_t>> sys_enter_defs_, sys_exit_defs_;
  std::vector<uint16_t> switch_out_defs_, switch_in_defs_, io_start_defs_;
  std::vector<std::vector<uint16_t>> usdt_defs_;  // probe_id -> defs
  std::vector<bool> sync_attr_;                   // attr used by some SYNC
  std::vector<uint8_t> def_in_sync_;              // event def -> source or destination of a SYNC
  // attr -> attributes whose intervals close with its last one in a set
  // (schema `cascade`); empty for attributes that trigger nothing.
  std::vector<std::vector<uint16_t>> cascade_;
  std::vector<std::string> syscall_names_;
  std::vector<uint8_t> sys_dir_;  // nr -> kDirIn / kDirOut / 0
  std::vector<uint8_t> sys_close_;  // nr -> 1 for close/shutdown
  std::vector<uint8_t> sys_reason_;  // nr -> BlockReason of sleeping in it (objects aside)

  FlatMap<IKey, uint32_t, IKeyHash> live_;
  std::vector<Set> sets_;
  std::vector<uint32_t> free_sets_;
  size_t live_sets_ = 0;

  FlatMap<uint64_t, uint32_t, U64Hash> thread_index_;
  // Direct-mapped cache tid -> Thread* in front of thread_index_ (most
  // records come from a handful of running threads).
  struct ThreadCacheEntry {
    uint32_t tid = 0;
    Thread* t = nullptr;
  };
  std::array<ThreadCacheEntry, 256> thread_cache_{};
  std::deque<Thread> threads_;  // deque: Thread* stays valid while others are added
  std::vector<uint32_t> free_threads_;
  std::vector<CpuState> cpus_;
  // Per process: on-CPU time and scheduling anomalies, and the window of
  // its requests (first seed to the end of the last request that finished),
  // so that Stats can compare charged CPU with the CPU of the processes
  // that served requests while they did (not their start-up or shutdown).
  struct TgidAcct {
    uint64_t cpu_ns = 0;  // all on-CPU time charged so far (ChargeRun)
    uint64_t switches = 0, chain_breaks = 0, running_inferred = 0;
    uint64_t lost_bound_ns = 0;  // see Stats::cpu_lost_bound_ns
    bool window_open = false, window_closed = false;
    uint64_t window_from_ts = 0;
    uint64_t window_from_cpu = 0;  // CumCpu() at the first seed
    // CPU charged to requests' events older than the first seed (the
    // accept and parsing before a request_start seed): inside the requests,
    // before the window, so added to it.
    uint64_t pre_window_ns = 0;
    uint64_t window_to_cpu = 0;    // CumCpu() at the end of the last finished request
  };
  TgidAcct& Acct(uint32_t tgid) {
    bool ins;
    uint32_t* idx = tgid_acct_index_.FindOrInsert(tgid, &ins);
    if (ins) {
      *idx = static_cast<uint32_t>(tgid_acct_.size());
      tgid_acct_.emplace_back();
    }
    return tgid_acct_[*idx];
  }
  // Per thread, without the hash lookup (hot: every sched_switch).
  TgidAcct& Acct(Thread* t) {
    if (t->acct_tgid != t->tgid || !t->acct_idx) {
      Acct(t->tgid);
      t->acct_idx = *tgid_acct_index_.Find(t->tgid) + 1;
      t->acct_tgid = t->tgid;
    }
    return tgid_acct_[t->acct_idx - 1];
  }
  // On-CPU time of `tgid` up to `now`, including the current slices of its
  // threads on CPU, which ChargeRun has not charged yet.
  uint64_t CumCpu(uint32_t tgid, uint64_t now);
  FlatMap<uint64_t, uint32_t, U64Hash> tgid_acct_index_;
  std::deque<TgidAcct> tgid_acct_;  // deque: references stay valid as processes are added

  FlatMap<IKey, PendingSync, IKeyHash> pending_sync_;

  FlatMap<uint64_t, uint64_t, U64Hash> conn_to_sock_;  // ConnKey -> sk
  FlatMap<uint64_t, uint32_t, U64Hash> sock_index_;    // sk -> socks_ slot
  FlatMap<uint64_t, uint8_t, U64Hash> sock_dir_;      // sk -> direction of its last data syscall
  // The last FUTEX_WAKE-like call on each futex address: a wakeup that the
  // kernel delivered on the wakee's CPU (to an idle CPU, through its wake
  // list, in interrupt context) is attributed to the thread that asked for
  // it. Entries older than the GC horizon are dropped.
  struct FutexWake {
    uint64_t ts;
    uint32_t tid, tgid;
  };
  FlatMap<uint64_t, FutexWake, U64Hash> futex_wakes_;
  int32_t futex_nr_ = -1;
  static bool IsFutexWake(uint64_t op) {
    switch (op & 127) {  // FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256) masked off
      case 1:   // FUTEX_WAKE
      case 3:   // FUTEX_REQUEUE
      case 4:   // FUTEX_CMP_REQUEUE
      case 5:   // FUTEX_WAKE_OP
      case 10:  // FUTEX_WAKE_BITSET
        return true;
      default:
        return false;
    }
  }
  // A sched_wakeup in interrupt context of a thread asleep in a futex that
  // some thread woke just before: rewrites `c` to be that thread's event.
  void AttributeRemoteWakeup(Ctx& c, Thread* wakee);
  // The schema's sched_wakeup events, causal edge and the wakee's state,
  // for a wakeup record (or one made up by FutexWoke); c.thread is the
  // waker where known.
  void Wakeup(Ctx& c, Thread* wakee);
  // `waker` returns from a futex wake of `uaddr` that woke someone. If one
  // thread sleeps there and its wakeup record has not come yet (it will,
  // later, from the wakee's idle CPU), the wakeup is made up now, in the
  // waker's context: by the time the record comes the waker may be asleep
  // and its part of the request closed.
  void FutexWoke(const Ctx& c, Thread* waker, uint64_t uaddr);
  // Threads asleep in a futex, by address: how many, and the last one.
  struct FutexSleepers {
    uint32_t count;
    uint32_t tid;
  };
  FlatMap<uint64_t, FutexSleepers, U64Hash> futex_sleepers_;
  void LeaveFutexSleep(Thread* t);

  // Block requests issued and not completed yet (rq -> issue ts): a
  // completion that never comes is an I/O whose bytes no request can get.
  FlatMap<uint64_t, uint64_t, U64Hash> blk_inflight_;
  std::vector<SockEntry> socks_;
  uint64_t sock_epoch_ = 0;  // bumped whenever a socks_ slot changes connection
  std::vector<uint32_t> free_socks_;
  std::vector<Closed> closed_socks_;  // FIFO by ts
  // Interrupt-context packets of a connection the join does not know yet
  // (ConnKey -> events): a client's SYN, handshake ACK and first request
  // bytes usually arrive before accept() returns the socket. They are
  // joined, with their original sequence numbers (so in time order), to the
  // first request that uses the socket once accept's sock_info names it.
  // Bounded: per connection, and in all (unrelated traffic of connections
  // never accepted must not grow the join's memory); expired by Gc().
  static constexpr size_t kEarlyPacketsPerConn = 16;
  static constexpr size_t kEarlyPacketsHeldMax = 1 << 16;
  std::unordered_map<uint64_t, std::vector<Ev>> early_by_conn_;
  std::unordered_map<uint64_t, std::vector<Ev>> early_by_sock_;  // named, not joined yet
  size_t early_held_ = 0;
  size_t closed_head_ = 0;

  FlatMap<uint64_t, uint32_t, U64Hash> symbol_index_;
  std::vector<model::Symbol> symbols_;
  // The synthetic events' symbols, interned once.
  const model::Symbol resume_symbol_{"resume"}, signal_symbol_{"signal"}, wait_symbol_{"wait"};
  struct SymbolCacheEntry {
    uint64_t key = 0;
    uint32_t id = 0;
    bool valid = false;
  };
  std::array<SymbolCacheEntry, 64> symbol_cache_{};
  // In front of both, for the kinds of event that make up nearly all of a
  // trace (1 + symbol id, 0 = not seen yet): syscall enters and exits by nr,
  // USDT probes by id, switches out (preempted, blocked) and in. An index
  // lookup where Symbol() hashes a key.
  std::vector<uint32_t> sys_enter_symbols_, sys_exit_symbols_, usdt_symbols_;
  std::array<uint32_t, 3> switch_symbols_{};

  // Emit() scratch, reused across requests. An Item is a synthetic event
  // to be placed among the request's real ones.
  struct Item {
    uint64_t ts;
    uint64_t seq;
    uint8_t sub;  // 0 resume, 1 real, 2 signal, 3 wait
    uint32_t tid;
    uint16_t cpu;
  };
  std::vector<Item> scratch_items_;
  std::vector<uint32_t> scratch_order_, scratch_pos_;
  std::vector<std::pair<uint32_t, uint32_t>> scratch_edge_items_;
  std::vector<model::EdgeKind> scratch_edge_kinds_;

  std::vector<uint32_t> request_tgids_;
  uint64_t seq_ = 0;
  uint64_t next_request_id_ = 1;
  Stats stats_;
};

namespace {

// The schema's block_reason constants are the model's BlockReason values.
static_assert(static_cast<int>(schema::BlockReasonValue::kDisk) == static_cast<int>(model::BlockReason::kDisk) &&
              static_cast<int>(schema::BlockReasonValue::kNetwork) == static_cast<int>(model::BlockReason::kNetwork) &&
              static_cast<int>(schema::BlockReasonValue::kFutex) == static_cast<int>(model::BlockReason::kFutex) &&
              static_cast<int>(schema::BlockReasonValue::kPipe) == static_cast<int>(model::BlockReason::kPipe) &&
              static_cast<int>(schema::BlockReasonValue::kOther) == static_cast<int>(model::BlockReason::kOther));

constexpr uint64_t kSymSys = 1, kSymUsdt = 2, kSymBlock = 3, kSymPlain = 4, kSymSwitchOut = 5;

const char* BlockOpName(uint32_t op) {
  switch (op & 0xff) {
    case 0:
      return "read";
    case 1:
      return "write";
    case 2:
      return "flush";
    case 3:
      return "discard";
    default:
      return "other";
  }
}

const char* RecordName(uint16_t type) {
  switch (type) {
#define JDW_REC_NAME(NAME, id, group, str, fields, st) \
  case id:                                             \
    return str;
    JDW_EVENT_TABLE(JDW_REC_NAME)
#undef JDW_REC_NAME
    default:
      return "unknown";
  }
}

// Payload size by record type (0: unknown type). A table, not a switch:
// every record is checked, and record types alternate unpredictably, which
// an indirect jump pays for in mispredictions.
constexpr std::array<uint16_t, JDW_EVENT_MAX> kPayloadSizes = [] {
  std::array<uint16_t, JDW_EVENT_MAX> sizes{};
#define JDW_REC_SIZE(NAME, id, group, str, fields, st) sizes[id] = sizeof(struct st);
  JDW_EVENT_TABLE(JDW_REC_SIZE)
#undef JDW_REC_SIZE
  return sizes;
}();

size_t PayloadSize(uint16_t type) { return type < kPayloadSizes.size() ? kPayloadSizes[type] : 0; }

bool IsV4Mapped(const uint8_t* a) {
  uint64_t lo;
  uint32_t mid;
  memcpy(&lo, a, 8);
  memcpy(&mid, a + 8, 4);
  return lo == 0 && mid == 0xffff0000u;  // ::ffff:a.b.c.d (little-endian load of 00 00 ff ff)
}

}  // namespace

// ---------------------------------------------------------------------------
// setup

Extractor::Impl::Impl(const schema::Schema& schema, const trace::TraceMeta& meta, Options opts,
                      RequestSink sink)
    : schema_(schema),
      time_(meta.time),
      app_probes_(meta.app_probes),
      opts_(opts),
      sink_(std::move(sink)),
      reorder_(reorder::Reorderer::Options{opts.reorder_window, true}) {
  syscall_names_ = meta.syscall_names;
  timeout_ns_ = opts_.timeout_ns ? opts_.timeout_ns : schema_.timeout_ns;
  max_age_ns_ = opts_.max_set_age_ns ? opts_.max_set_age_ns : 6 * timeout_ns_;
  gc_every_ns_ = std::max<uint64_t>(timeout_ns_ / 8, 1'000'000);
}

Status Extractor::Impl::Init() {
  for (const schema::EventDef& d : schema_.events) {
    if (d.bindings.size() > kMaxBindings)
      return ErrStatus("schema %s: event '%s' has %zu bindings; at most %zu are supported", schema_.path.c_str(),
                       d.name.c_str(), d.bindings.size(), kMaxBindings);
  }
  if (schema_.events.size() >= UINT16_MAX) return ErrStatus("schema has too many events");
  if (syscall_names_.empty()) syscall_names_ = schema::CompiledSyscallNames();
  sys_dir_.assign(syscall_names_.size(), 0);
  sys_close_.assign(syscall_names_.size(), 0);
  sys_reason_.assign(syscall_names_.size(), 0);
  for (size_t nr = 0; nr < syscall_names_.size(); nr++) {
    const std::string& n = syscall_names_[nr];
    if (n == "read" || n == "readv" || n == "recvfrom" || n == "recvmsg" || n == "recvmmsg" || n == "pread64")
      sys_dir_[nr] = kDirIn;
    if (n == "write" || n == "writev" || n == "sendto" || n == "sendmsg" || n == "sendmmsg" || n == "sendfile" ||
        n == "pwrite64")
      sys_dir_[nr] = kDirOut;
    if (n == "close" || n == "shutdown") sys_close_[nr] = 1;
    if (n == "futex") futex_nr_ = static_cast<int32_t>(nr);
    using model::BlockReason;
    BlockReason r = BlockReason::kOther;
    if (n == "futex" || n == "futex_waitv") r = BlockReason::kFutex;
    if (n == "fsync" || n == "fdatasync" || n == "sync_file_range" || n == "io_getevents" ||
        n == "io_uring_enter")
      r = BlockReason::kDisk;
    if (n == "epoll_wait" || n == "epoll_pwait" || n == "epoll_pwait2" || n == "poll" || n == "ppoll" ||
        n == "select" || n == "pselect6" || n == "accept" || n == "accept4" || n == "connect")
      r = BlockReason::kNetwork;
    sys_reason_[nr] = static_cast<uint8_t>(r);
  }
  sync_attr_.assign(schema_.attributes.size(), false);
  def_in_sync_.assign(schema_.events.size(), 0);
  for (const schema::SyncStmt& s : schema_.syncs) {
    sync_attr_[s.attr] = true;
    def_in_sync_[s.source] = def_in_sync_[s.dest] = 1;
  }
  cascade_.assign(schema_.attributes.size(), {});
  for (const schema::CascadeStmt& c : schema_.cascades)
    for (uint16_t t : c.targets)
      if (std::find(cascade_[c.trigger].begin(), cascade_[c.trigger].end(), t) == cascade_[c.trigger].end())
        cascade_[c.trigger].push_back(t);
  BuildDispatch();
  return Status::Ok();
}

void Extractor::Impl::BuildDispatch() {
  const size_t nsys = std::max<size_t>(syscall_names_.size(), JDW_MAX_SYSCALLS);
  sys_enter_defs_.assign(nsys, {});
  sys_exit_defs_.assign(nsys, {});
  usdt_defs_.assign(app_probes_.size(), {});
  sys_enter_symbols_.assign(nsys, 0);
  sys_exit_symbols_.assign(nsys, 0);
  usdt_symbols_.assign(app_probes_.size(), 0);
  for (size_t i = 0; i < schema_.events.size(); i++) {
    const schema::EventDef& d = schema_.events[i];
    const auto idx = static_cast<uint16_t>(i);
    switch (d.kind) {
      case schema::EventKind::kSwitchOut:
        switch_out_defs_.push_back(idx);
        break;
      case schema::EventKind::kSwitchIn:
        switch_in_defs_.push_back(idx);
        break;
      case schema::EventKind::kIoStart:
        io_start_defs_.push_back(idx);
        break;
      case schema::EventKind::kUsdt: {
        bool found = false;
        for (size_t p = 0; p < app_probes_.size(); p++) {
          if (app_probes_[p] == d.usdt_probe) {
            usdt_defs_[p].push_back(idx);
            found = true;
          }
        }
        if (!found && !app_probes_.empty())
          stats_.warnings.push_back("schema event '" + d.name + "': probe usdt " + d.usdt_probe +
                                    " is not in this trace");
        break;
      }
      case schema::EventKind::kRecord:
        if (d.record_type == JDW_EVENT_SYS_ENTER || d.record_type == JDW_EVENT_SYS_EXIT) {
          auto& table = d.record_type == JDW_EVENT_SYS_ENTER ? sys_enter_defs_ : sys_exit_defs_;
          if (d.syscalls.empty()) {
            for (auto& v : table) v.push_back(idx);
          } else {
            for (const std::string& name : d.syscalls) {
              bool found = false;
              for (size_t nr = 0; nr < syscall_names_.size(); nr++) {
                if (syscall_names_[nr] == name) {
                  table[nr].push_back(idx);
                  found = true;
                }
              }
              if (!found)
                stats_.warnings.push_back("schema event '" + d.name + "': syscall " + name +
                                          " is not in this trace's syscall table");
            }
          }
        } else if (d.record_type < JDW_EVENT_MAX) {
          by_type_[d.record_type].push_back(idx);
        }
        break;
    }
  }
  if (app_probes_.empty()) {
    std::string names;
    for (const schema::EventDef& d : schema_.events) {
      if (d.kind != schema::EventKind::kUsdt) continue;
      names += names.empty() ? "" : ", ";
      names += d.name;
    }
    if (!names.empty())
      stats_.warnings.push_back("the trace has no USDT probes (record with the app group and the server's probes); "
                                "schema events that need them: " + names);
  }
  // Several names may map to one nr in a table; keep each def once, in order.
  for (auto* table : {&sys_enter_defs_, &sys_exit_defs_}) {
    for (auto& v : *table) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
  }
}

uint32_t Extractor::Impl::Symbol(uint64_t key, const std::string& (*make)(Impl*, uint64_t)) {
  // Every joined event needs its symbol: a direct-mapped cache in front of
  // the table (a handful of symbols make up nearly all events).
  SymbolCacheEntry& ce = symbol_cache_[(key ^ (key >> 29) ^ (key >> 47)) & (symbol_cache_.size() - 1)];
  if (ce.valid && ce.key == key) return ce.id;
  bool inserted;
  uint32_t* id = symbol_index_.FindOrInsert(key, &inserted);
  if (inserted) {
    symbols_.push_back(model::Symbol(std::string_view(make(this, key))));
    *id = static_cast<uint32_t>(symbols_.size() - 1);
  }
  ce = SymbolCacheEntry{key, *id, true};
  return *id;
}

uint32_t* Extractor::Impl::KnownSymbolSlot(const Ctx& c) {
  switch (c.kind) {
    case schema::EventKind::kSwitchOut:
      return &switch_symbols_[c.after_block ? 1 : 0];
    case schema::EventKind::kSwitchIn:
      return &switch_symbols_[2];
    case schema::EventKind::kUsdt: {
      uint32_t probe;
      memcpy(&probe, c.payload, sizeof(probe));
      return probe < usdt_symbols_.size() ? &usdt_symbols_[probe] : nullptr;
    }
    case schema::EventKind::kRecord: {
      const uint16_t type = c.rec->type;
      if (type != JDW_EVENT_SYS_ENTER && type != JDW_EVENT_SYS_EXIT) return nullptr;
      uint16_t nr;
      memcpy(&nr, c.payload, sizeof(nr));
      std::vector<uint32_t>& table = type == JDW_EVENT_SYS_ENTER ? sys_enter_symbols_ : sys_exit_symbols_;
      return nr < table.size() ? &table[nr] : nullptr;
    }
    default:
      return nullptr;
  }
}

uint32_t Extractor::Impl::EventSymbol(const Ctx& c) {
  uint32_t* known = KnownSymbolSlot(c);
  if (known && *known) return *known - 1;
  const uint32_t id = SymbolOfKey(c);
  if (known) *known = id + 1;
  return id;
}

uint32_t Extractor::Impl::SymbolOfKey(const Ctx& c) {
  // key: kind << 56 | record type << 32 | sub-id
  const uint16_t type = c.rec->type;
  uint64_t key;
  switch (c.kind) {
    case schema::EventKind::kSwitchOut:
      key = (kSymSwitchOut << 56) | (c.after_block ? 1 : 0);
      break;
    case schema::EventKind::kSwitchIn:
      key = (kSymSwitchOut << 56) | 2;
      break;
    case schema::EventKind::kIoStart:
    case schema::EventKind::kRecord:
      if (type == JDW_EVENT_SYS_ENTER || type == JDW_EVENT_SYS_EXIT) {
        uint16_t nr;
        memcpy(&nr, c.payload, sizeof(nr));
        key = (kSymSys << 56) | (uint64_t{type} << 32) | nr;
      } else if (type == JDW_EVENT_BLOCK_COMPLETE || type == JDW_EVENT_BLOCK_ISSUE) {
        uint32_t op;
        memcpy(&op, c.payload + 4, sizeof(op));  // dev, op: same offset in both
        key = (kSymBlock << 56) | (uint64_t{c.kind == schema::EventKind::kIoStart} << 48) |
              (uint64_t{type} << 32) | (op & 0xff);
      } else {
        key = (kSymPlain << 56) | (uint64_t{type} << 32);
      }
      break;
    case schema::EventKind::kUsdt: {
      uint32_t probe;
      memcpy(&probe, c.payload, sizeof(probe));
      key = (kSymUsdt << 56) | probe;
      break;
    }
    default:
      key = 0;
  }
  return Symbol(key, [](Impl* self, uint64_t k) -> const std::string& {
    static thread_local std::string s;
    const uint64_t kind = k >> 56;
    const auto type = static_cast<uint16_t>((k >> 32) & 0xffff);
    if (kind == kSymSwitchOut) {
      s = (k & 0xff) == 2 ? "switch_in" : ((k & 1) ? "switch_out:blocked" : "switch_out:preempted");
    } else if (kind == kSymSys) {
      const auto nr = static_cast<uint32_t>(k & 0xffff);
      s = RecordName(type);
      s += ':';
      s += nr < self->syscall_names_.size() && !self->syscall_names_[nr].empty() ? self->syscall_names_[nr]
                                                                                 : std::to_string(nr);
    } else if (kind == kSymBlock) {
      s = ((k >> 48) & 1) ? "io_start" : RecordName(type);
      s += ':';
      s += BlockOpName(static_cast<uint32_t>(k & 0xff));
    } else if (kind == kSymUsdt) {
      const auto probe = static_cast<uint32_t>(k & 0xffffffff);
      s = "usdt:";
      s += probe < self->app_probes_.size() ? self->app_probes_[probe] : "probe" + std::to_string(probe);
    } else {
      s = RecordName(type);
    }
    return s;
  });
}

// ---------------------------------------------------------------------------
// threads

Extractor::Impl::Thread* Extractor::Impl::LookUpThread(uint32_t tid, uint32_t tgid, uint64_t ts,
                                                       bool running_now) {
  ThreadCacheEntry& ce = thread_cache_[tid & 255];
  bool inserted;
  uint32_t* idx = thread_index_.FindOrInsert(tid, &inserted);
  if (inserted) {
    if (!free_threads_.empty()) {
      *idx = free_threads_.back();
      free_threads_.pop_back();
      threads_[*idx] = Thread{};
    } else {
      *idx = static_cast<uint32_t>(threads_.size());
      threads_.emplace_back();
    }
    Thread& t = threads_[*idx];
    t.tid = tid;
    t.tgid = tgid;
    // First sighting: if it emits a task-context record it is running now;
    // run time before that is unknown and never charged.
    t.on_cpu = running_now;
    t.acct_from = ts;
    stats_.peak_threads = std::max<uint64_t>(stats_.peak_threads, thread_index_.size());
  }
  Thread* t = &threads_[*idx];
  if (tgid) t->tgid = tgid;
  t->last_seen = ts;
  ce.tid = tid;
  ce.t = t;
  return t;
}

void Extractor::Impl::ChargeRun(Thread* t, uint64_t ts) {
  if (!t->on_cpu || ts <= t->acct_from) return;
  uint64_t d = ts - t->acct_from;
  t->acct_from = ts;
  Acct(t).cpu_ns += d;
  // Interrupt work already charged as softirq CPU elsewhere is not the task's.
  const uint64_t steal = std::min(d, t->irq_steal);
  t->irq_steal -= steal;
  t->cpu_pending += d - steal;
}

uint64_t Extractor::Impl::CumCpu(uint32_t tgid, uint64_t now) {
  const uint32_t* idx = tgid_acct_index_.Find(tgid);
  uint64_t ns = idx ? tgid_acct_[*idx].cpu_ns : 0;
  for (const CpuState& cs : cpus_) {
    if (!cs.cur_tid) continue;
    const uint32_t* tidx = thread_index_.Find(cs.cur_tid);
    if (!tidx) continue;
    const Thread& t = threads_[*tidx];
    if (t.tgid == tgid && t.on_cpu && now > t.acct_from) ns += now - t.acct_from;
  }
  return ns;
}

uint8_t Extractor::Impl::ReasonOf(const Thread* t) const {
  using model::BlockReason;
  if (t->sys_nr < 0) return static_cast<uint8_t>(BlockReason::kOther);
  switch (t->sys_obj_kind) {
    case JDW_OBJ_FILE:
      return static_cast<uint8_t>(BlockReason::kDisk);
    case JDW_OBJ_SOCKET:
    case JDW_OBJ_EPOLL:  // servers wait in epoll for sockets
      return static_cast<uint8_t>(BlockReason::kNetwork);
    case JDW_OBJ_PIPE:
      return static_cast<uint8_t>(BlockReason::kPipe);
    case JDW_OBJ_FUTEX:
      return static_cast<uint8_t>(BlockReason::kFutex);
    default:
      break;
  }
  const auto nr = static_cast<size_t>(t->sys_nr);
  return nr < sys_reason_.size() ? sys_reason_[nr] : static_cast<uint8_t>(BlockReason::kOther);
}

// ---------------------------------------------------------------------------
// sets

uint32_t Extractor::Impl::NewSet(uint64_t ts) {
  uint32_t slot;
  if (!free_sets_.empty()) {
    slot = free_sets_.back();
    free_sets_.pop_back();
  } else {
    slot = static_cast<uint32_t>(sets_.size());
    sets_.emplace_back();
  }
  Set& s = sets_[slot];
  s.live = true;
  s.open = 0;
  s.seed = false;
  s.seed_tgid = 0;
  s.first_ts = s.last_ts = ts;
  live_sets_++;
  stats_.sets_created++;
  stats_.peak_live_sets = std::max<uint64_t>(stats_.peak_live_sets, live_sets_);
  return slot;
}

uint32_t Extractor::Impl::Union(uint32_t a, uint32_t b) {
  if (a == b) return a;
  stats_.sets_merged++;
  if (sets_[a].events.size() + sets_[a].open_keys.size() < sets_[b].events.size() + sets_[b].open_keys.size())
    std::swap(a, b);
  Set& big = sets_[a];
  Set& small = sets_[b];
  const auto off_base = static_cast<uint32_t>(big.offs.size());
  for (Ev e : small.events) {
    if (e.off) e.off += off_base;
    big.events.push_back(e);
  }
  big.offs.insert(big.offs.end(), small.offs.begin(), small.offs.end());
  big.edges.insert(big.edges.end(), small.edges.begin(), small.edges.end());
  for (const SetSock& ss : small.socks) {
    bool dup = false;
    for (const SetSock& b : big.socks) dup |= b.sk == ss.sk && b.conn.gen == ss.conn.gen;
    if (!dup) big.socks.push_back(ss);
  }
  for (const IKey& k : small.open_keys) {
    uint32_t* slot = live_.Find(k);
    if (slot && *slot == b) {
      *slot = a;
      big.open_keys.push_back(k);
    }
  }
  big.open += small.open;
  if (small.seed && !big.seed) big.seed_tgid = small.seed_tgid;
  big.seed |= small.seed;
  big.first_ts = std::min(big.first_ts, small.first_ts);
  big.last_ts = std::max(big.last_ts, small.last_ts);
  small.open = 0;
  FreeSet(b);
  return a;
}

void Extractor::Impl::OpenInterval(const IKey& k, uint32_t set) {
  live_.Set(k, set);
  Set& s = sets_[set];
  s.open++;
  s.open_keys.push_back(k);
  // Lazily drop keys of intervals that closed or moved, so a long-lived set
  // that opens and closes many intervals stays small.
  if (s.open_keys.size() > 32 && s.open_keys.size() > 4 * size_t{s.open}) {
    size_t w = 0;
    for (size_t r = 0; r < s.open_keys.size(); r++) {
      const uint32_t* slot = live_.Find(s.open_keys[r]);
      if (!slot || *slot != set) continue;
      bool dup = false;
      for (size_t i = 0; i < w && !dup; i++) dup = s.open_keys[i] == s.open_keys[r];
      if (!dup) s.open_keys[w++] = s.open_keys[r];
    }
    s.open_keys.resize(w);
  }
  stats_.peak_live_intervals = std::max<uint64_t>(stats_.peak_live_intervals, live_.size());
}

bool Extractor::Impl::Cascade(uint32_t set, uint32_t attr) {
  Set& s = sets_[set];
  if (!s.live || s.open == 0) return false;
  // Only the set's last interval of the trigger closes the targets: a
  // request that also used a short-lived connection of its own (a backend
  // query) keeps its threads until its own connection ends.
  for (const IKey& k : s.open_keys) {
    if (k.attr != attr) continue;
    const uint32_t* cur = live_.Find(k);
    if (cur && *cur == set) return false;
  }
  const std::vector<uint16_t>& targets = cascade_[attr];
  for (const IKey& k : s.open_keys) {
    if (std::find(targets.begin(), targets.end(), k.attr) == targets.end()) continue;
    const size_t at = live_.FindIndex(k);
    if (at == live_.kNpos || live_.ValueAt(at) != set) continue;
    live_.EraseAt(at);
    s.open--;
    stats_.intervals_cascaded++;
  }
  return s.open == 0;
}

void Extractor::Impl::FreeSet(uint32_t slot) {
  Set& s = sets_[slot];
  // Keep capacity for reuse (no allocation per request in steady state), but
  // not a one-off giant's.
  auto reset = [](auto& v) {
    if (v.capacity() > 4096) {
      std::remove_reference_t<decltype(v)>().swap(v);
    } else {
      v.clear();
    }
  };
  reset(s.events);
  reset(s.open_keys);
  reset(s.offs);
  reset(s.edges);
  reset(s.socks);
  s.live = false;
  s.open = 0;
  free_sets_.push_back(slot);
  live_sets_--;
}

void Extractor::Impl::FinishSet(uint32_t slot, bool timed_out) {
  Set& s = sets_[slot];
  if (s.open > 0) {
    for (const IKey& k : s.open_keys) {
      const uint32_t* cur = live_.Find(k);
      if (cur && *cur == slot) live_.Erase(k);
    }
    s.open = 0;
  }
  if (timed_out) stats_.sets_timed_out++;
  if (s.seed && (!timed_out || opts_.emit_timed_out)) {
    Emit(s, timed_out);
  } else {
    stats_.sets_discarded++;
    stats_.events_discarded += s.events.size();
  }
  FreeSet(slot);
}

// ---------------------------------------------------------------------------
// sockets

uint64_t Extractor::Impl::ConnKey(uint16_t family, const uint8_t* laddr, uint16_t lport, const uint8_t* raddr,
                                  uint16_t rport) const {
  uint8_t l[16], r[16];
  size_t n = 16;
  if (family == 10 && IsV4Mapped(laddr) && IsV4Mapped(raddr)) {
    family = 2;
    memcpy(l, laddr + 12, 4);
    memcpy(r, raddr + 12, 4);
    n = 4;
  } else {
    n = family == 2 ? 4 : 16;
    memcpy(l, laddr, n);
    memcpy(r, raddr, n);
  }
  uint64_t h = Mix64(family ^ (uint64_t{lport} << 16) ^ (uint64_t{rport} << 32));
  for (size_t i = 0; i < n; i += 4) {
    uint32_t a, b;
    memcpy(&a, l + i, 4);
    memcpy(&b, r + i, 4);
    h = Mix64(h ^ a ^ (uint64_t{b} << 32));
  }
  return h;
}

void Extractor::Impl::OnSockInfo(const Ctx& c) {
  const auto* si = reinterpret_cast<const jdw_sock_info*>(c.payload);
  if (si->sk == 0) return;
  bool inserted;
  uint32_t* idx = sock_index_.FindOrInsert(si->sk, &inserted);
  if (inserted) {
    if (!free_socks_.empty()) {
      *idx = free_socks_.back();
      free_socks_.pop_back();
    } else {
      *idx = static_cast<uint32_t>(socks_.size());
      socks_.emplace_back();
    }
  }
  SockEntry& e = socks_[*idx];
  // The accepting thread used the socket first (its accept returns it just
  // after this record): that is this connection, not an older one.
  if (c.thread && c.thread->last_sock == si->sk) c.thread->last_sock_ts = c.ts;
  if (inserted) {
    // A reused slot keeps counting generations: a set that noted its old
    // owner must not take the new one for the same connection.
    const uint32_t gen = e.gen + 1;
    e = SockEntry{};
    e.gen = gen;
    sock_epoch_++;
    e.since = c.ts;
    e.sk = si->sk;
  } else if (e.sport != si->sport || e.dport != si->dport || memcmp(e.daddr, si->daddr, 16) != 0) {
    // Same memory, another connection: nothing known about the old one
    // (direction of its last data, threads that used it) applies, and its
    // address pair no longer names this socket (a late packet of the old
    // connection stays unjoined rather than joining the new one's request;
    // and the map does not grow with every connection ever seen).
    const uint64_t old_key = ConnKey(e.family, e.saddr, e.sport, e.daddr, e.dport);
    const uint64_t* cur = conn_to_sock_.Find(old_key);
    if (cur && *cur == si->sk) conn_to_sock_.Erase(old_key);
    e.gen++;
    sock_epoch_++;
    e.since = c.ts;
    sock_dir_.Erase(si->sk);
  }
  e.family = si->family;
  e.sport = si->sport;
  e.dport = si->dport;
  memcpy(e.saddr, si->saddr, 16);
  memcpy(e.daddr, si->daddr, 16);
  e.info_ts = c.ts;
  const uint64_t key = ConnKey(si->family, si->saddr, si->sport, si->daddr, si->dport);
  conn_to_sock_.Set(key, si->sk);
  if (!early_by_conn_.empty()) {
    auto held = early_by_conn_.find(key);
    if (held != early_by_conn_.end()) {
      std::vector<Ev>& dst = early_by_sock_[si->sk];
      // An older connection's, never used by a request.
      early_held_ -= dst.size();
      stats_.early_packets_dropped += dst.size();
      dst = std::move(held->second);
      early_by_conn_.erase(held);
    }
  }
}

// Interrupt work charged to the event: the time since the previous
// interrupt record of the same burst on this CPU (the first of a burst is
// charged nothing: its start is unknown). Taken from the interrupted task.
uint64_t Extractor::Impl::TakeIrqCpu(const Ctx& c) {
  CpuState& cs = cpus_[c.rec->cpu];
  if (!opts_.irq_burst_gap_ns || !cs.irq_run || c.ts < cs.last_irq_ts ||
      c.ts - cs.last_irq_ts > opts_.irq_burst_gap_ns)
    return 0;
  const uint64_t ns = c.ts - cs.last_irq_ts;
  if (c.rec->tid) {
    Thread* victim = GetThread(c.rec->tid, c.rec->tgid, c.ts, true);
    if (victim) victim->irq_steal += ns;
  }
  return ns;
}

// The event as a set stores it: what it is, and the bytes and interrupt
// time it consumed (a task's run time is charged by Join()).
Extractor::Impl::Ev Extractor::Impl::EventOf(const Ctx& c) {
  Ev ev{};
  ev.seq = ++seq_;
  ev.ts = c.ts;
  ev.tid = c.tid;
  ev.tgid = c.tgid;
  ev.cpu = c.rec->cpu;
  ev.record_type = c.kind == schema::EventKind::kRecord || c.kind == schema::EventKind::kUsdt ? c.rec->type : 0;
  ev.symbol = EventSymbol(c);
  if (c.kind == schema::EventKind::kIoStart) ev.synth = static_cast<uint8_t>(model::SyntheticKind::kIoStart);
  if (c.kind == schema::EventKind::kRecord) {
    if (c.rec->type == JDW_EVENT_NET_XMIT || c.rec->type == JDW_EVENT_NET_RECV) {
      const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
      ev.bytes = p->len;
      ev.flags |= c.rec->type == JDW_EVENT_NET_XMIT ? kEvNetOut : kEvNetIn;
    } else if (c.rec->type == JDW_EVENT_BLOCK_COMPLETE) {
      ev.bytes = reinterpret_cast<const jdw_block_complete*>(c.payload)->bytes;
      ev.flags |= kEvDisk;
    }
  }
  if (c.irq) {
    ev.flags |= kEvIrq;
    ev.tid = 0;  // not the interrupted task's event
    ev.cpu_ns = TakeIrqCpu(c);
  }
  return ev;
}

void Extractor::Impl::HoldEarlyPacket(const Ctx& c) {
  const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
  if (p->protocol != 6 /* TCP */) return;
  const uint64_t key = LocalConnKey(c.rec->type, *p);
  if (early_held_ >= kEarlyPacketsHeldMax) {
    stats_.early_packets_dropped++;
    return;
  }
  std::vector<Ev>& held = early_by_conn_[key];
  if (!held.empty() && held.front().ts + timeout_ns_ < c.ts) {
    early_held_ -= held.size();  // a stale attempt at the same address pair
    stats_.early_packets_dropped += held.size();
    held.clear();
  }
  if (held.size() >= kEarlyPacketsPerConn) {
    stats_.early_packets_dropped++;
    return;
  }
  held.push_back(EventOf(c));
  early_held_++;
}

void Extractor::Impl::JoinEarlyPackets(Set& s, uint64_t sk) {
  auto held = early_by_sock_.find(sk);
  if (held == early_by_sock_.end()) return;
  for (const Ev& ev : held->second) {
    s.events.push_back(ev);  // earlier seq: Emit restores the order
    s.first_ts = std::min(s.first_ts, ev.ts);
  }
  stats_.events_joined += held->second.size();
  stats_.early_packets_joined += held->second.size();
  early_held_ -= held->second.size();
  early_by_sock_.erase(held);
}

void Extractor::Impl::NoteSock(Set& s, const Ctx& c, uint64_t sk) {
  // Already noted, and still the same connection: no lookup (hot path: every
  // socket syscall and packet of a request). No socket has changed hands
  // since it was last found current: nothing to check at all.
  for (SetSock& ss : s.socks) {
    if (ss.sk != sk) continue;
    if (ss.checked == sock_epoch_) return;
    const SockEntry& cur = socks_[ss.slot];
    if (cur.sk == sk && cur.gen == ss.conn.gen) {
      ss.checked = sock_epoch_;
      return;
    }
  }
  const uint32_t* idx = sock_index_.Find(sk);
  if (!idx) return;  // never seen its sock_info: no endpoints to report
  const SockEntry& e = socks_[*idx];
  if (c.kind == schema::EventKind::kRecord &&
      (c.rec->type == JDW_EVENT_NET_XMIT || c.rec->type == JDW_EVENT_NET_RECV)) {
    // A packet of the sk's previous (or next) connection: the handshake of
    // the next one arrives before its accept reports the new endpoints.
    const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
    const bool out = c.rec->type == JDW_EVENT_NET_XMIT;
    if ((out ? p->sport : p->dport) != e.sport || (out ? p->dport : p->sport) != e.dport) return;
  }
  for (const SetSock& ss : s.socks)
    if (ss.sk == sk && ss.conn.gen == e.gen) return;
  s.socks.push_back(SetSock{sk, *idx, sock_epoch_, e});
}

uint64_t Extractor::Impl::SockOf(const Ctx& c) {
  if (!c.sock_done) {
    c.sock = ComputeSock(c);
    c.sock_done = true;
  }
  return c.sock;
}

uint64_t Extractor::Impl::ComputeSock(const Ctx& c) {
  const uint16_t type = c.rec->type;
  if (c.kind != schema::EventKind::kRecord) return 0;
  switch (type) {
    case JDW_EVENT_SYS_ENTER: {
      const auto* e = reinterpret_cast<const jdw_sys_enter*>(c.payload);
      return e->obj_kind == JDW_OBJ_SOCKET ? e->obj : 0;
    }
    case JDW_EVENT_SYS_EXIT: {
      const auto* e = reinterpret_cast<const jdw_sys_exit*>(c.payload);
      if (e->obj) return e->obj_kind == JDW_OBJ_SOCKET ? e->obj : 0;
      const Thread* t = c.thread;
      if (!t || t->sys_nr != e->nr || t->sys_obj_kind != JDW_OBJ_SOCKET) return 0;
      // The socket of the matching enter, unless its memory went to another
      // connection meanwhile: a close frees the socket before it returns,
      // and the next accept may take the same address first.
      const uint32_t* idx = sock_index_.Find(t->sys_obj);
      if (idx && socks_[*idx].since > t->sys_ts) return 0;
      return t->sys_obj;
    }
    case JDW_EVENT_SOCK_INFO:
      return reinterpret_cast<const jdw_sock_info*>(c.payload)->sk;
    case JDW_EVENT_NET_XMIT:
    case JDW_EVENT_NET_RECV: {
      const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
      if (type == JDW_EVENT_NET_XMIT && p->sk) return p->sk;
      const uint64_t* sk = conn_to_sock_.Find(LocalConnKey(type, *p));
      return sk ? *sk : 0;
    }
    default:
      return 0;
  }
}

std::string Extractor::Impl::FormatAddr(uint16_t family, const uint8_t* a, uint16_t port) const {
  // By hand: this runs for every connection of every request emitted, and
  // snprintf was a tenth of the join's time.
  char buf[64];
  char* p = buf;
  auto put_dec = [&p](unsigned v) {
    char tmp[8];
    int n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) *p++ = tmp[--n];
  };
  if (family == 2 || (family == 10 && IsV4Mapped(a))) {
    // Octets from a table of their decimal forms (digits, then the length).
    static constexpr auto kOctets = [] {
      std::array<std::array<char, 4>, 256> octets{};
      for (int v = 0; v < 256; v++) {
        const int len = v >= 100 ? 3 : v >= 10 ? 2 : 1;
        for (int d = len - 1, rest = v; d >= 0; d--, rest /= 10) octets[v][d] = static_cast<char>('0' + rest % 10);
        octets[v][3] = static_cast<char>(len);
      }
      return octets;
    }();
    const uint8_t* v4 = family == 2 ? a : a + 12;
    for (int i = 0; i < 4; i++) {
      if (i) *p++ = '.';
      const std::array<char, 4>& octet = kOctets[v4[i]];
      memcpy(p, octet.data(), 3);
      p += octet[3];
    }
  } else {
    static constexpr char kHex[] = "0123456789abcdef";
    *p++ = '[';
    for (int i = 0; i < 16; i += 2) {
      if (i) *p++ = ':';
      const unsigned g = (unsigned{a[i]} << 8) | a[i + 1];
      bool lead = true;
      for (int shift = 12; shift >= 0; shift -= 4) {
        const unsigned d = (g >> shift) & 15;
        if (lead && d == 0 && shift) continue;
        lead = false;
        *p++ = kHex[d];
      }
    }
    *p++ = ']';
  }
  *p++ = ':';
  put_dec(port);
  return std::string(buf, p);
}

// ---------------------------------------------------------------------------
// field access

uint64_t Extractor::Impl::ReadPayload(const Ctx& c, uint16_t offset, uint8_t size, bool is_signed, bool* ok) {
  if (size_t{offset} + size > c.payload_len) {
    *ok = false;
    return 0;
  }
  const uint8_t* p = c.payload + offset;
  switch (size) {
    case 1: {
      uint8_t v = *p;
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(v))) : v;
    }
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(v))) : v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))) : v;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
    default:
      *ok = false;
      return 0;
  }
}

uint64_t Extractor::Impl::Read(const schema::FieldRef& f, const Ctx& c, bool* ok) {
  using schema::FieldSource;
  switch (f.source) {
    case FieldSource::kPayload:
      return ReadPayload(c, f.offset, f.size, f.is_signed, ok);
    case FieldSource::kHeaderTid:
      return c.tid;
    case FieldSource::kHeaderTgid:
      return c.tgid;
    case FieldSource::kHeaderCpu:
      return c.rec->cpu;
    case FieldSource::kHeaderCtx:
      return c.ctx >= 0 ? static_cast<uint64_t>(c.ctx) : c.rec->ctx;
    case FieldSource::kUsdtArg: {
      const auto* u = reinterpret_cast<const jdw_usdt*>(c.payload);
      if (f.index >= u->nargs || f.index >= JDW_USDT_MAX_ARGS) return 0;
      return u->args[f.index];
    }
    case FieldSource::kSock:
      return SockOf(c);
    case FieldSource::kExitObj:
    case FieldSource::kExitObjKind:
    case FieldSource::kExitFd:
    case FieldSource::kEnterArg: {
      const auto* e = reinterpret_cast<const jdw_sys_exit*>(c.payload);
      const Thread* t = c.thread;
      const bool paired = t && t->sys_nr == e->nr;
      if (f.source == FieldSource::kEnterArg) return paired ? t->sys_arg : 0;
      if (e->obj) {
        if (f.source == FieldSource::kExitObj) return e->obj;
        if (f.source == FieldSource::kExitObjKind) return e->obj_kind;
        return static_cast<uint64_t>(static_cast<int64_t>(e->fd));
      }
      if (!paired) return f.source == FieldSource::kExitFd ? static_cast<uint64_t>(int64_t{-1}) : 0;
      if (f.source == FieldSource::kExitObj) return t->sys_obj;
      if (f.source == FieldSource::kExitObjKind) return t->sys_obj_kind;
      return static_cast<uint64_t>(static_cast<int64_t>(t->sys_fd));
    }
    case FieldSource::kInSyscall:
      return static_cast<uint64_t>(static_cast<int64_t>(c.in_syscall));
    case FieldSource::kAfterBlock:
      return c.after_block ? 1 : 0;
    case FieldSource::kSockUsed:
      return c.thread && c.thread->sock_used ? 1 : 0;
    case FieldSource::kConnOpen:
      return c.thread && c.thread->conn_open ? 1 : 0;
    case FieldSource::kNewSock: {
      const uint64_t sk = SockOf(c);
      if (!sk || !c.thread) return 0;
      if (c.thread->last_sock != sk) return 1;
      // The same struct sock address may be a new connection since the
      // thread last used it (the kernel reuses a closed socket's memory).
      const uint32_t* idx = sock_index_.Find(sk);
      return idx && socks_[*idx].since > c.thread->last_sock_ts ? 1 : 0;
    }
    case FieldSource::kNewMsg: {
      const auto* e = reinterpret_cast<const jdw_sys_enter*>(c.payload);
      if (e->obj_kind != JDW_OBJ_SOCKET || !e->obj || e->nr >= sys_dir_.size() || sys_dir_[e->nr] != kDirIn)
        return 0;
      const uint8_t* last = sock_dir_.Find(e->obj);
      return last && *last == kDirOut ? 1 : 0;
    }
    case FieldSource::kWakeeSyscall:
    case FieldSource::kWakeeObj:
    case FieldSource::kWakeeArg: {
      const auto* w = reinterpret_cast<const jdw_sched_wakeup*>(c.payload);
      const uint32_t* idx = w->wakee_tid ? thread_index_.Find(w->wakee_tid) : nullptr;
      const Thread* wt = idx ? &threads_[*idx] : nullptr;
      if (f.source == FieldSource::kWakeeSyscall)
        return static_cast<uint64_t>(static_cast<int64_t>(wt ? wt->sys_nr : -1));
      if (!wt || wt->sys_nr < 0) return 0;
      return f.source == FieldSource::kWakeeObj ? wt->sys_obj : wt->sys_arg;
    }
    case FieldSource::kBlockReason: {
      if (!c.thread || !c.after_block) return 0;  // after_block: blocked (switch_out) / slept (switch_in)
      return c.kind == schema::EventKind::kSwitchOut ? ReasonOf(c.thread) : c.thread->block_reason;
    }
    case FieldSource::kBlocked: {
      const auto* sw = reinterpret_cast<const jdw_sched_switch*>(c.payload);
      return sw->prev_state != 0 ? 1 : 0;
    }
  }
  return 0;
}
// One comparison for signed and unsigned fields alike.
template <typename T>
bool Compare(schema::CmpOp op, T a, T b) {
  switch (op) {
    case schema::CmpOp::kEq: return a == b;
    case schema::CmpOp::kNe: return a != b;
    case schema::CmpOp::kLt: return a < b;
    case schema::CmpOp::kLe: return a <= b;
    case schema::CmpOp::kGt: return a > b;
    default: return a >= b;
  }
}

bool Extractor::Impl::Matches(const schema::EventDef& def, const Ctx& c) {
  for (const schema::Predicate& p : def.where) {
    bool ok = true;
    uint64_t v = Read(p.field, c, &ok);
    if (!ok) return false;
    if (p.mask) v &= p.mask;
    const bool r = p.field.is_signed
                       ? Compare(p.op, static_cast<int64_t>(v), p.value)
                       : Compare(p.op, v, static_cast<uint64_t>(p.value));
    if (!r) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// the join

void Extractor::Impl::RunEvent(Ctx& c, const std::vector<uint16_t>* defs) {
  if (!defs) return;
  for (uint16_t d : *defs) {
    if (Matches(schema_.events[d], c)) {
      stats_.events_matched++;
      Join(c, d);
      return;
    }
  }
}

void Extractor::Impl::Join(Ctx& c, uint16_t def_idx) {
  const schema::EventDef& def = schema_.events[def_idx];
  struct B {
    IKey key;
    schema::Binding type;
  };
  B bs[kMaxBindings];
  size_t at_step1[kMaxBindings];  // live_ index found in step 1, valid while live_ is unchanged
  size_t n = 0;
  for (const schema::AttrBinding& b : def.bindings) {
    bool ok = true;
    const uint64_t v = Read(b.value, c, &ok);
    if (!ok || v == 0) {
      stats_.bindings_skipped++;
      continue;
    }
    bs[n++] = B{IKey{v, b.attr, 0}, b.type};
  }
  if (n == 0) {
    stats_.events_unbound++;
    if (c.irq && c.kind == schema::EventKind::kRecord &&
        (c.rec->type == JDW_EVENT_NET_RECV || c.rec->type == JDW_EVENT_NET_XMIT))
      HoldEarlyPacket(c);
    return;
  }

  // 1. Union the sets of every open interval this event joins. Two sets
  // that both hold a seed are two requests (a seed occurs once per
  // request): evidence that would join them is wrong somewhere (a pool
  // thread re-tasked without an event saying so), and merging would corrupt
  // both. The event joins the request its first such binding reaches; the
  // other request's interval is not joined (a STOP still closes it).
  uint32_t target = kNone;
  for (size_t i = 0; i < n; i++) {
    at_step1[i] = live_.FindIndex(bs[i].key);
    if (bs[i].type == schema::Binding::kStart || at_step1[i] == live_.kNpos) continue;
    const uint32_t* s = &live_.ValueAt(at_step1[i]);
    if (target == kNone) {
      target = *s;
    } else if (*s != target && sets_[target].seed && sets_[*s].seed) {
      stats_.seed_conflicts++;
    } else {
      target = Union(target, *s);
    }
  }
  if (target == kNone) target = NewSet(c.ts);
  const uint64_t live_version = live_.version();

  // 2. Update intervals in binding order. Closing an interval of a cascade
  // trigger attribute is noted and applied after all bindings.
  uint32_t finished[3 * kMaxBindings];
  size_t nfinished = 0;
  struct Closed1 {
    uint32_t set;
    uint32_t attr;
  };
  Closed1 cascades[kMaxBindings];
  size_t ncascades = 0;
  for (size_t i = 0; i < n; i++) {
    const IKey& k = bs[i].key;
    // Step 1's lookup, unless an earlier binding inserted or erased since.
    const size_t at = live_.version() == live_version ? at_step1[i] : live_.FindIndex(k);
    switch (bs[i].type) {
      case schema::Binding::kStart:
      case schema::Binding::kBasic:
        // An open interval held by another set moves to this one, in the
        // same slot. START: the old interval closes and the new one opens.
        // BASIC: it belongs to the other request of a seed conflict (step
        // 1); this event says the attribute has moved on to the request it
        // joined. (A BASIC binding of the target's own interval, and a
        // START it already holds, change nothing.)
        if (at == live_.kNpos) {
          OpenInterval(k, target);
        } else if (uint32_t& slot = live_.ValueAt(at); slot != target) {
          const uint32_t old = slot;
          sets_[old].open--;
          if (sets_[old].open == 0) finished[nfinished++] = old;
          else if (!cascade_[k.attr].empty()) cascades[ncascades++] = Closed1{old, k.attr};
          slot = target;
          sets_[target].open++;
          sets_[target].open_keys.push_back(k);
        }
        break;
      case schema::Binding::kStop:
        if (at != live_.kNpos) {
          // == target, unless a seed conflict kept it apart in step 1
          const uint32_t old = live_.ValueAt(at);
          live_.EraseAt(at);
          sets_[old].open--;
          if (old != target && sets_[old].open == 0) {
            finished[nfinished++] = old;
          } else if (sets_[old].open && !cascade_[k.attr].empty()) {
            cascades[ncascades++] = Closed1{old, k.attr};
          }
        }
        break;
    }
  }
  for (size_t i = 0; i < ncascades; i++) {
    const uint32_t set = cascades[i].set;
    if (Cascade(set, cascades[i].attr) && set != target) finished[nfinished++] = set;
  }

  // 3. The event itself, with what it consumed.
  Set& s = sets_[target];
  Ev ev = EventOf(c);
  if (def.wait) ev.flags |= kEvWait;
  // A task's run time since its last joined event (interrupt time: EventOf()).
  if (Thread* t = c.irq ? nullptr : c.thread) {
    ChargeRun(t, c.ts);
    ev.cpu_ns = t->cpu_pending;
    t->cpu_pending = 0;
    if (t->has_off) {
      s.offs.push_back(t->pend_off);
      ev.off = static_cast<uint32_t>(s.offs.size());
      t->has_off = false;
    }
    if (t->wake_edge) {
      EdgeCand e = t->wake;
      e.to_seq = ev.seq;
      s.edges.push_back(e);
      t->wake_edge = false;
    }
    t->last_joined_seq = ev.seq;
    for (size_t i = 0; i < n; i++) {
      const uint32_t a = bs[i].key.attr;
      if (!sync_attr_[a]) continue;
      bool found = false;
      for (SyncVal& sv : t->sync_vals) {
        if (sv.attr == a) {
          sv.value = bs[i].key.value;
          found = true;
        }
      }
      if (!found) t->sync_vals.push_back(SyncVal{a, bs[i].key.value});
    }
  }

  // SYNC: destinations consume a pending source first, so an event that is
  // both does not pair with itself.
  for (size_t si = 0; def_in_sync_[def_idx] && si < schema_.syncs.size(); si++) {
    const schema::SyncStmt& st = schema_.syncs[si];
    if (st.dest != def_idx && st.source != def_idx) continue;
    uint64_t v = 0;
    for (size_t i = 0; i < n && !v; i++)
      if (bs[i].key.attr == st.attr) v = bs[i].key.value;
    if (!v && c.thread) {
      for (const SyncVal& sv : c.thread->sync_vals)
        if (sv.attr == st.attr) v = sv.value;
    }
    if (!v) continue;
    const IKey pk{v, static_cast<uint32_t>(si), 0};
    if (st.dest == def_idx) {
      if (const PendingSync* ps = pending_sync_.Find(pk)) {
        s.edges.push_back(EdgeCand{ps->seq, ev.seq, ps->ts, ps->tid, ps->cpu, 1});
        pending_sync_.Erase(pk);
      }
    }
    if (st.source == def_idx) pending_sync_.Set(pk, PendingSync{ev.seq, c.ts, c.tid, c.rec->cpu});
  }

  const uint64_t event_sk = SockOf(c);
  if (event_sk) NoteSock(s, c, event_sk);
  if (def.seed && !s.seed) {
    s.seed = true;
    s.seed_tgid = c.irq ? c.rec->tgid : c.tgid;
    if (s.seed_tgid) {
      TgidAcct& a = Acct(s.seed_tgid);
      if (!a.window_open) {
        a.window_open = true;
        a.window_from_ts = c.ts;
        a.window_from_cpu = CumCpu(s.seed_tgid, c.ts);
      }
    }
  }
  s.last_ts = std::max(s.last_ts, c.ts);
  s.first_ts = std::min(s.first_ts, c.ts);
  s.events.push_back(ev);
  stats_.events_joined++;
  // A request's first use of a connection whose opening packets were held.
  if (event_sk && s.seed && !early_by_sock_.empty()) JoinEarlyPackets(s, event_sk);

  // 4. Finished sets.
  for (size_t i = 0; i < nfinished; i++)
    if (sets_[finished[i]].live && sets_[finished[i]].open == 0) FinishSet(finished[i], false);
  if (sets_[target].open == 0) {
    FinishSet(target, false);
  } else if (sets_[target].events.size() > opts_.max_set_events) {
    FinishSet(target, true);
  }
}

void Extractor::Impl::StartRunning(Thread* t, uint64_t ts) {
  if (t->off != Off::kNone) {
    OffCpu o{};
    o.off_from = t->off_since;
    o.wake = t->off == Off::kBlocked ? ts : std::min(t->wake_ts, ts);  // never woken: blocked until now
    o.run = ts;
    o.reason = t->block_reason;
    if (t->has_off) {
      // fold the previous, never-charged period into the early sums
      const OffCpu& p = t->pend_off;
      o.early_from = p.early_from ? std::min(p.early_from, p.off_from) : p.off_from;
      o.early_runq = p.early_runq + (p.run - p.wake);
      for (int r = 0; r < 6; r++) o.early_blocked[r] = p.early_blocked[r];
      o.early_blocked[p.reason % 6] += p.wake - p.off_from;
    }
    t->pend_off = o;
    t->has_off = true;
  }
  t->off = Off::kNone;
  t->on_cpu = true;
  t->acct_from = ts;
  t->wake_synth = false;
  LeaveFutexSleep(t);
}

void Extractor::Impl::RunningWithoutSwitchIn(Thread* t, uint16_t cpu, uint64_t ts) {
  uint64_t from = ts;
  if (t->off != Off::kNone) {
    Acct(t).running_inferred++;
    // It was switched in on this CPU after the last record of another task
    // here (the last switch, or a record of the task that ran), and after it
    // became runnable (its wakeup, or its preemption). That bounds the run
    // time the capture lost; how much of it was the thread's is not known:
    // several switches may be missing, the task left on the CPU may have run
    // (untraced tasks leave no records), a vCPU may take milliseconds to
    // wake. Asleep with no wakeup seen while the CPU idled, there is no
    // bound at all.
    const CpuState* cs = cpu < cpus_.size() ? &cpus_[cpu] : nullptr;
    const bool runnable = t->off == Off::kRunnable;
    if (cs && cs->last_task_ts && (runnable || cs->cur_tid != 0)) {
      const uint64_t since = std::max(cs->last_task_ts, runnable ? t->wake_ts : t->off_since);
      if (since < ts) {
        Acct(t).lost_bound_ns += ts - since;
        if (opts_.infer_lost_switch_in) {
          stats_.cpu_inferred_ns += ts - since;
          from = since;
        }
      }
    }
  }
  StartRunning(t, from);
}

void Extractor::Impl::LeaveFutexSleep(Thread* t) {
  if (!t->sleep_futex) return;
  const size_t at = futex_sleepers_.FindIndex(t->sleep_futex);
  if (at != futex_sleepers_.kNpos) {
    FutexSleepers& fs = futex_sleepers_.ValueAt(at);
    if (fs.count <= 1) {
      futex_sleepers_.EraseAt(at);
    } else {
      fs.count--;
    }
  }
  t->sleep_futex = 0;
}

void Extractor::Impl::Wakeup(Ctx& c, Thread* wakee) {
  const uint64_t before = seq_;
  RunEvent(c, &by_type_[c.rec->type]);
  const bool joined = seq_ != before;
  Thread* waker = c.thread;
  if (!wakee || wakee->on_cpu) return;
  if (wakee->off == Off::kBlocked) {
    wakee->off = Off::kRunnable;
    wakee->wake_ts = c.ts;
  } else if (wakee->off == Off::kNone) {
    // Never seen switching out: only the run-queue part is known.
    wakee->off = Off::kRunnable;
    wakee->off_since = c.ts;
    wakee->wake_ts = c.ts;
  }
  LeaveFutexSleep(wakee);
  wakee->wake_edge = false;
  if (!c.irq && waker) {
    const uint64_t from = joined ? seq_ : waker->last_joined_seq;
    if (from) {
      wakee->wake_edge = true;
      wakee->wake = EdgeCand{from, 0, c.ts, waker->tid, c.rec->cpu, 0};
    }
  }
}

void Extractor::Impl::FutexWoke(const Ctx& c, Thread* waker, uint64_t uaddr) {
  const FutexSleepers* fs = uaddr ? futex_sleepers_.Find(uaddr) : nullptr;
  if (!fs || fs->count != 1 || fs->tid == waker->tid) return;  // several: the kernel's record says which
  const uint32_t* idx = thread_index_.Find(fs->tid);
  if (!idx) return;
  Thread* wakee = &threads_[*idx];
  if (wakee->on_cpu || wakee->off != Off::kBlocked) return;  // its record came already (a local wakeup)
  struct {
    jdw_record_header h;
    jdw_sched_wakeup b;
  } rec{};
  rec.h = *c.rec;
  rec.h.type = JDW_EVENT_SCHED_WAKEUP;
  rec.h.size = sizeof(rec);
  rec.b.wakee_tid = wakee->tid;
  rec.b.wakee_tgid = wakee->tgid;
  rec.b.target_cpu = c.rec->cpu;
  Ctx w{&rec.h, reinterpret_cast<const uint8_t*>(&rec.b), sizeof(rec.b), c.ts, schema::EventKind::kRecord,
        waker, waker->tid, waker->tgid, false, false, futex_nr_};  // still inside futex() as it asks
  stats_.wakeups_attributed++;
  Wakeup(w, wakee);
  wakee->wake_synth = true;
}

void Extractor::Impl::AttributeRemoteWakeup(Ctx& c, Thread* wakee) {
  // A wakeup of a thread whose CPU is idle is queued to that CPU and runs
  // there in the IPI handler (ttwu_queue): the record names the idle task,
  // not the waker. For a futex sleeper the futex address names it: the last
  // thread that woke that address, after the wakee went to sleep on it and
  // shortly before (the IPI is quick; a vCPU can take milliseconds to wake).
  static constexpr uint64_t kWindowNs = 10'000'000;
  if (futex_nr_ < 0 || wakee->on_cpu || wakee->off != Off::kBlocked || wakee->sys_nr != futex_nr_ ||
      !wakee->sys_obj)
    return;
  const FutexWake* fw = futex_wakes_.Find(wakee->sys_obj);
  if (!fw || fw->ts < wakee->off_since || fw->ts > c.ts || c.ts - fw->ts > kWindowNs || fw->tid == wakee->tid)
    return;
  Thread* waker = GetThread(fw->tid, fw->tgid, c.ts, true);
  if (!waker) return;
  stats_.wakeups_attributed++;
  c.irq = false;
  c.ctx = JDW_CTX_TASK;
  c.thread = waker;
  c.tid = waker->tid;
  c.tgid = waker->tgid;
  c.in_syscall = futex_nr_;  // it was inside futex() when it asked
}

void Extractor::Impl::HandleSwitch(const reorder::SortedRecord& sr, uint64_t ts) {
  const jdw_record_header* rec = sr.rec;
  const auto* sw = reinterpret_cast<const jdw_sched_switch*>(rec + 1);
  const bool blocked = sw->prev_state != 0;

  // prev: charge its run time, then the switch_out event takes it if joined.
  Thread* prev = GetThread(sw->prev_tid, sw->prev_tgid, ts, true);
  if (prev) {
    // Switched out while we had it off CPU, with no record of it running
    // since: its switch-in is missing from the trace.
    const bool chain_break = !prev->on_cpu;
    const bool seen_leaving = prev->off != Off::kNone;
    if (chain_break && seen_leaving) RunningWithoutSwitchIn(prev, rec->cpu, ts);
    TgidAcct& acct = Acct(prev);
    acct.switches++;
    if (chain_break) {
      acct.chain_breaks++;
      if (seen_leaving) acct.running_inferred--;  // counted as a chain break instead
    }
    ChargeRun(prev, ts);
    Ctx c{rec, reinterpret_cast<const uint8_t*>(sw), rec->size - sizeof(*rec), ts,
          schema::EventKind::kSwitchOut, prev, prev->tid, prev->tgid, false, blocked, prev->sys_nr};
    RunEvent(c, &switch_out_defs_);
    if (blocked && prev->cpu_pending) {
      stats_.cpu_dropped_ns += prev->cpu_pending;
      prev->cpu_pending = 0;
    }
    prev->on_cpu = false;
    prev->last_out_blocked = blocked;
    prev->off = blocked ? Off::kBlocked : Off::kRunnable;
    prev->off_since = ts;
    prev->wake_ts = ts;  // preempted: runnable from now on
    prev->block_reason = blocked ? ReasonOf(prev) : 0;
    LeaveFutexSleep(prev);
    if (blocked && prev->sys_nr == futex_nr_ && prev->sys_obj && futex_nr_ >= 0) {
      bool ins;
      FutexSleepers& fs = *futex_sleepers_.FindOrInsert(prev->sys_obj, &ins);
      if (ins) fs.count = 0;
      fs.count++;
      fs.tid = prev->tid;
      prev->sleep_futex = prev->sys_obj;
    }
  }

  if (rec->cpu < cpus_.size()) {
    cpus_[rec->cpu].cur_tid = sw->next_tid;
    cpus_[rec->cpu].last_task_ts = ts;
  }
  Thread* next = GetThread(sw->next_tid, sw->next_tgid, ts, false);
  if (next) {
    const bool after_block = next->last_out_blocked;
    StartRunning(next, ts);
    if (after_block) next->sock_used = false;
    Ctx c{rec, reinterpret_cast<const uint8_t*>(sw), rec->size - sizeof(*rec), ts,
          schema::EventKind::kSwitchIn, next, next->tid, next->tgid, false, after_block, next->sys_nr};
    RunEvent(c, &switch_in_defs_);
  }
}

void Extractor::Impl::Process(const reorder::SortedRecord& sr) {
  const jdw_record_header* rec = sr.rec;
  stats_.records_processed++;
  const size_t need = PayloadSize(rec->type);
  if (rec->size < sizeof(*rec) || (need && rec->size < sizeof(*rec) + need)) {
    stats_.bad_records++;
    return;
  }
  const uint64_t ts = ToNs(sr.ts);
  now_ = std::max(now_, ts);
  if (rec->cpu >= cpus_.size()) cpus_.resize(size_t{rec->cpu} + 1);
  const bool irq = rec->ctx != JDW_CTX_TASK;

  if (now_ >= next_gc_) {
    Gc(now_);
    next_gc_ = now_ + gc_every_ns_;
  }

  if (sr.io_start) {
    stats_.io_starts++;
    const auto* bc = reinterpret_cast<const jdw_block_complete*>(rec + 1);
    Thread* t = GetThread(bc->issue_tid, bc->issue_tgid, ts, true);
    Ctx c{rec, reinterpret_cast<const uint8_t*>(bc), rec->size - sizeof(*rec), ts, schema::EventKind::kIoStart,
          t, bc->issue_tid, bc->issue_tgid, false, false, t ? t->sys_nr : -1};
    RunEvent(c, &io_start_defs_);
    return;
  }

  CpuState& cs = cpus_[rec->cpu];
  if (rec->type == JDW_EVENT_SCHED_SWITCH) {
    HandleSwitch(sr, ts);
    cs.irq_run = false;
    return;
  }

  Thread* t = irq ? nullptr : GetThread(rec->tid, rec->tgid, ts, true);
  // A task-context record proves the thread runs (its switch-in may
  // predate the trace or have been lost).
  if (t && !t->on_cpu) RunningWithoutSwitchIn(t, rec->cpu, ts);
  if (t) cs.last_task_ts = ts;
  // A block completion runs in whatever task the driver completes it in (an
  // unrelated thread, often of another process): like an interrupt, it is
  // not that task's event and must not take its CPU. Its owner is the
  // issuing thread (issue_tid), which the synthetic io_start carries.
  Thread* subject = rec->type == JDW_EVENT_BLOCK_COMPLETE ? nullptr : t;
  Ctx c{rec, reinterpret_cast<const uint8_t*>(rec + 1), rec->size - sizeof(*rec), ts, schema::EventKind::kRecord,
        subject, subject ? rec->tid : 0, subject ? rec->tgid : 0, irq, false, subject ? subject->sys_nr : -1};

  switch (rec->type) {
    case JDW_EVENT_SYS_ENTER: {
      const auto* e = reinterpret_cast<const jdw_sys_enter*>(c.payload);
      RunEvent(c, e->nr < sys_enter_defs_.size() ? &sys_enter_defs_[e->nr] : nullptr);
      if (t && e->nr == futex_nr_ && e->obj && IsFutexWake(e->arg)) {
        bool ins;
        *futex_wakes_.FindOrInsert(e->obj, &ins) = FutexWake{ts, t->tid, t->tgid};
      }
      if (t) {
        t->sys_nr = e->nr;
        t->sys_ts = ts;
        t->sys_obj_kind = e->obj_kind;
        t->sys_obj = e->obj;
        t->sys_fd = e->fd;
        t->sys_arg = e->arg;
        if (e->obj_kind == JDW_OBJ_SOCKET && e->obj) {
          t->last_sock = e->obj;
          t->last_sock_ts = ts;
          t->sock_used = true;
        }
        if (e->obj_kind == JDW_OBJ_SOCKET && e->obj && e->nr < sys_dir_.size()) {
          if (sys_dir_[e->nr]) {
            sock_dir_.Set(e->obj, sys_dir_[e->nr]);
            t->conn_open = true;
          }
          if (sys_close_[e->nr]) {
            t->conn_open = false;
            closed_socks_.push_back(Closed{ts, e->obj});
            sock_dir_.Erase(e->obj);
          }
        }
      }
      break;
    }
    case JDW_EVENT_SYS_EXIT: {
      const auto* e = reinterpret_cast<const jdw_sys_exit*>(c.payload);
      RunEvent(c, e->nr < sys_exit_defs_.size() ? &sys_exit_defs_[e->nr] : nullptr);
      if (t && e->nr == futex_nr_ && t->sys_nr == futex_nr_ && e->ret > 0 && IsFutexWake(t->sys_arg))
        FutexWoke(c, t, t->sys_obj);
      if (t) {
        if (e->obj_kind == JDW_OBJ_SOCKET && e->obj) {
          t->last_sock = e->obj;
          t->last_sock_ts = ts;
          t->sock_used = true;
        }
        t->sys_nr = -1;
        t->sys_obj_kind = 0;
        t->sys_obj = 0;
        t->sys_fd = -1;
      }
      break;
    }
    case JDW_EVENT_SCHED_WAKEUP:
    case JDW_EVENT_SCHED_WAKEUP_NEW: {
      const auto* w = reinterpret_cast<const jdw_sched_wakeup*>(c.payload);
      Thread* wakee = GetThread(w->wakee_tid, w->wakee_tgid, ts, false);
      // Already woken on behalf of its waker (a futex wake seen to reach
      // it): this is the kernel's late record of the same wakeup.
      if (irq && wakee && wakee->wake_synth) break;
      if (irq && wakee) AttributeRemoteWakeup(c, wakee);
      Wakeup(c, wakee);
      break;
    }
    case JDW_EVENT_SOCK_INFO:
      OnSockInfo(c);
      RunEvent(c, &by_type_[rec->type]);
      break;
    case JDW_EVENT_TASK_EXIT:
      RunEvent(c, &by_type_[rec->type]);
      if (t && rec->tid) {
        if (t->on_cpu) ChargeRun(t, ts);
        if (t->cpu_pending) stats_.cpu_dropped_ns += t->cpu_pending;
        if (const uint32_t* idx = thread_index_.Find(rec->tid)) {
          free_threads_.push_back(*idx);
          thread_index_.Erase(rec->tid);
          thread_cache_[rec->tid & 255] = ThreadCacheEntry{};
          LeaveFutexSleep(t);
          *t = Thread{};  // a free slot: not on CPU, charges nothing at Finish()
        }
      }
      break;
    case JDW_EVENT_BLOCK_ISSUE: {
      const auto* bi = reinterpret_cast<const jdw_block_issue*>(c.payload);
      bool fresh;
      *blk_inflight_.FindOrInsert(bi->rq, &fresh) = ts;
      // The request structure is reused once completed: issued again without
      // a completion seen, the last one's completion is missing.
      if (!fresh) stats_.block_completions_missing++;
      RunEvent(c, &by_type_[rec->type]);
      break;
    }
    case JDW_EVENT_BLOCK_COMPLETE:
      blk_inflight_.Erase(reinterpret_cast<const jdw_block_complete*>(c.payload)->rq);
      RunEvent(c, &by_type_[rec->type]);
      break;
    case JDW_EVENT_USDT: {
      const auto* u = reinterpret_cast<const jdw_usdt*>(c.payload);
      c.kind = schema::EventKind::kUsdt;
      if (u->probe_id < usdt_defs_.size()) {
        RunEvent(c, &usdt_defs_[u->probe_id]);
      } else {
        stats_.usdt_unknown_probe++;
      }
      break;
    }
    default:
      if (rec->type < JDW_EVENT_MAX) RunEvent(c, &by_type_[rec->type]);
      break;
  }

  if (irq) {
    cs.irq_run = true;
    cs.last_irq_ts = ts;
  } else {
    cs.irq_run = false;
  }
}

// ---------------------------------------------------------------------------
// GC, emission

void Extractor::Impl::Gc(uint64_t now) {
  if (now > timeout_ns_) {
    const uint64_t horizon = now - timeout_ns_;
    const uint64_t age_horizon = now > max_age_ns_ ? now - max_age_ns_ : 0;
    for (uint32_t i = 0; i < sets_.size(); i++)
      if (sets_[i].live && (sets_[i].last_ts < horizon || sets_[i].first_ts < age_horizon)) FinishSet(i, true);
    pending_sync_.EraseIf([&](const IKey&, PendingSync& p) { return p.ts < horizon; });
    futex_wakes_.EraseIf([&](const uint64_t&, FutexWake& w) { return w.ts < horizon; });
    blk_inflight_.EraseIf([&](const uint64_t&, uint64_t& issued) {
      if (issued >= horizon) return false;
      stats_.block_completions_missing++;
      return true;
    });
    // Threads silent for long and off CPU: their state is stale anyway.
    if (now > 8 * timeout_ns_) {
      const uint64_t thread_horizon = now - 8 * timeout_ns_;
      thread_index_.EraseIf([&](const uint64_t&, uint32_t& idx) {
        Thread& t = threads_[idx];
        if (t.on_cpu || t.last_seen >= thread_horizon) return false;
        LeaveFutexSleep(&t);
        free_threads_.push_back(idx);
        thread_cache_[t.tid & 255] = ThreadCacheEntry{};
        return true;
      });
    }
  }
  // Held packets of connections not accepted, or not used by a request,
  // within the timeout.
  if (early_held_ && now > timeout_ns_) {
    const uint64_t horizon = now - timeout_ns_;
    for (auto* held_map : {&early_by_conn_, &early_by_sock_}) {
      for (auto it = held_map->begin(); it != held_map->end();) {
        if (!it->second.empty() && it->second.back().ts >= horizon) {
          ++it;
          continue;
        }
        early_held_ -= it->second.size();
        stats_.early_packets_dropped += it->second.size();
        it = held_map->erase(it);
      }
    }
  }
  // Sockets closed long ago: packets after close (FIN/ACK) had their chance.
  while (closed_head_ < closed_socks_.size() && closed_socks_[closed_head_].ts + 2 * timeout_ns_ < now) {
    const Closed& cl = closed_socks_[closed_head_++];
    if (const uint32_t* idx = sock_index_.Find(cl.sk)) {
      SockEntry& e = socks_[*idx];
      if (e.info_ts <= cl.ts) {
        const uint64_t key = ConnKey(e.family, e.saddr, e.sport, e.daddr, e.dport);
        const uint64_t* cur = conn_to_sock_.Find(key);
        if (cur && *cur == cl.sk) conn_to_sock_.Erase(key);
        e.sk = 0;
        free_socks_.push_back(*idx);
        sock_index_.Erase(cl.sk);
      }
    }
  }
  if (closed_head_ > 4096 && closed_head_ * 2 > closed_socks_.size()) {
    closed_socks_.erase(closed_socks_.begin(), closed_socks_.begin() + static_cast<ptrdiff_t>(closed_head_));
    closed_head_ = 0;
  }
  live_.MaybeShrink();
}

void Extractor::Impl::Emit(Set& s, bool timed_out) {
  // Unions append whole sets, so only merged sets need sorting.
  auto by_seq = [](const Ev& a, const Ev& b) { return a.seq < b.seq; };
  if (!std::is_sorted(s.events.begin(), s.events.end(), by_seq)) std::sort(s.events.begin(), s.events.end(), by_seq);
  auto find_seq = [&](uint64_t seq) -> const Ev* {
    auto it = std::lower_bound(s.events.begin(), s.events.end(), seq,
                               [](const Ev& e, uint64_t q) { return e.seq < q; });
    return it != s.events.end() && it->seq == seq ? &*it : nullptr;
  };

  // The synthetic items (Wait, and each causal edge's Signal and Resume),
  // to be merged into the real events. Real events are already in (ts, seq)
  // order (seq follows processing order, which is timestamp order), so they
  // are read straight from the set, not copied into items.
  std::vector<Item>& synth = scratch_items_;
  synth.clear();
  for (uint32_t i = 0; i < s.events.size(); i++) {
    const Ev& e = s.events[i];
    if (e.flags & kEvWait) synth.push_back(Item{e.ts, e.seq, 3, e.tid, e.cpu});
  }
  // Deduplicate candidate edges between the same two events.
  std::sort(s.edges.begin(), s.edges.end(), [](const EdgeCand& a, const EdgeCand& b) {
    return a.from_seq != b.from_seq ? a.from_seq < b.from_seq : a.to_seq < b.to_seq;
  });
  std::vector<std::pair<uint32_t, uint32_t>>& edge_items = scratch_edge_items_;  // (signal, resume) in synth
  edge_items.clear();
  std::vector<model::EdgeKind>& edge_kinds = scratch_edge_kinds_;  // parallel to edge_items
  edge_kinds.clear();
  uint64_t nwake = 0, nsync = 0;
  for (size_t i = 0; i < s.edges.size(); i++) {
    const EdgeCand& e = s.edges[i];
    if (i && e.from_seq == s.edges[i - 1].from_seq && e.to_seq == s.edges[i - 1].to_seq) continue;
    const Ev* from = find_seq(e.from_seq);
    const Ev* to = find_seq(e.to_seq);
    if (!from || !to || from == to) continue;
    const uint64_t sig_ts = std::max(from->ts, e.sig_ts);
    if (sig_ts > to->ts) continue;  // would point backwards in time: not a cause
    synth.push_back(Item{sig_ts, e.from_seq, 2, e.from_tid, e.from_cpu});
    synth.push_back(Item{to->ts, e.to_seq, 0, to->tid, to->cpu});
    edge_items.emplace_back(static_cast<uint32_t>(synth.size() - 2), static_cast<uint32_t>(synth.size() - 1));
    edge_kinds.push_back(e.is_sync ? model::EdgeKind::kSync : model::EdgeKind::kWakeup);
    (e.is_sync ? nsync : nwake)++;
  }
  // (ts, seq, sub): a Resume (0) sits before its event (1), a Signal (2) and
  // a Wait (3) after it.
  auto item_less = [](uint64_t xts, uint64_t xseq, uint8_t xsub, uint64_t yts, uint64_t yseq, uint8_t ysub) {
    if (xts != yts) return xts < yts;
    if (xseq != yseq) return xseq < yseq;
    return xsub < ysub;
  };
  std::vector<uint32_t>& synth_order = scratch_order_;
  synth_order.resize(synth.size());
  for (uint32_t i = 0; i < synth.size(); i++) synth_order[i] = i;
  std::sort(synth_order.begin(), synth_order.end(), [&](uint32_t a, uint32_t b) {
    const Item& x = synth[a];
    const Item& y = synth[b];
    return item_less(x.ts, x.seq, x.sub, y.ts, y.seq, y.sub);
  });
  std::vector<uint32_t>& synth_pos = scratch_pos_;  // synth index -> position in the request
  synth_pos.resize(synth.size());

  model::Request r;
  r.id = next_request_id_++;
  r.timed_out = timed_out;
  r.tgid = s.seed_tgid;
  const size_t nreal = s.events.size();
  r.events.resize(nreal + synth.size());
  r.threads.reserve(4);
  // Merge order: does the next synthetic item go before the next real
  // event? (They never tie: their `sub` differs.)
  auto synth_first = [&](size_t next_synth, size_t next_real) {
    if (next_synth == synth.size()) return false;
    if (next_real == nreal) return true;
    const Item& x = synth[synth_order[next_synth]];
    const Ev& e = s.events[next_real];
    return item_less(x.ts, x.seq, x.sub, e.ts, e.seq, 1);
  };
  // The request starts with its first item in that order.
  const uint64_t start = synth_first(0, 0) ? synth[synth_order[0]].ts : nreal ? s.events[0].ts : s.first_ts;
  uint64_t end = start;

  // One pass over the events: each is written out, and its resources,
  // off-CPU period (clipped to the request's start) and charged CPU are
  // added up.
  model::ResourceTotals& t = r.totals;
  auto add_blocked = [&](uint8_t reason, uint64_t ns) {
    if (!ns) return;
    t.blocked_ns += ns;
    switch (static_cast<model::BlockReason>(reason)) {
      case model::BlockReason::kDisk: t.blocked_disk_ns += ns; break;
      case model::BlockReason::kNetwork: t.blocked_net_ns += ns; break;
      case model::BlockReason::kFutex: t.blocked_futex_ns += ns; break;
      case model::BlockReason::kPipe: t.blocked_pipe_ns += ns; break;
      default: t.blocked_other_ns += ns; break;
    }
  };
  TgidAcct* acct = r.tgid ? &Acct(r.tgid) : nullptr;
  size_t next_real = 0, next_synth = 0;
  for (size_t at = 0; at < r.events.size(); at++) {
    model::RequestEvent& out = r.events[at];
    if (synth_first(next_synth, next_real)) {
      const Item& x = synth[synth_order[next_synth]];
      synth_pos[synth_order[next_synth++]] = static_cast<uint32_t>(at);
      end = std::max(end, x.ts);
      out.ts_ns = x.ts;
      out.tsc = time_.clock.MonoToTsc(x.ts);
      out.tid = x.tid;
      out.cpu = x.cpu;
      switch (x.sub) {
        case 0:
          out.synthetic = model::SyntheticKind::kResume;
          out.symbol = resume_symbol_;
          break;
        case 2:
          out.synthetic = model::SyntheticKind::kSignal;
          out.symbol = signal_symbol_;
          break;
        default:
          out.synthetic = model::SyntheticKind::kWait;
          out.symbol = wait_symbol_;
          break;
      }
      continue;
    }
    const Ev& e = s.events[next_real++];
    end = std::max(end, e.ts);
    out.ts_ns = e.ts;
    out.tsc = time_.clock.MonoToTsc(e.ts);
    out.tid = e.tid;
    out.cpu = e.cpu;
    out.record_type = e.record_type;
    out.synthetic = static_cast<model::SyntheticKind>(e.synth);
    out.symbol = symbols_[e.symbol];
    out.cpu_ns = e.cpu_ns;
    if (e.flags & (kEvNetIn | kEvNetOut)) out.net_bytes = e.bytes;
    if (e.flags & kEvDisk) out.disk_bytes = e.bytes;
    if (e.flags & kEvIrq) {
      t.softirq_cpu_ns += e.cpu_ns;
      stats_.softirq_charged_ns += e.cpu_ns;
    } else {
      t.cpu_ns += e.cpu_ns;
      if (e.tid && e.tgid == r.tgid) {
        // Compared against the observed CPU of request tgids (the seed's), so
        // helper processes joined in (kworkers) do not skew the ratio.
        stats_.cpu_charged_ns += e.cpu_ns;
        if (e.ts <= acct->window_from_ts) acct->pre_window_ns += e.cpu_ns;  // its CPU ran before e.ts
      }
    }
    if (e.flags & kEvNetIn) t.net_bytes_in += e.bytes;
    if (e.flags & kEvNetOut) t.net_bytes_out += e.bytes;
    if (e.flags & kEvDisk) {
      t.disk_bytes += e.bytes;
      t.disk_ios++;
    }
    if (e.tid && std::find(r.threads.begin(), r.threads.end(), e.tid) == r.threads.end()) r.threads.push_back(e.tid);
    if (e.off) {
      const OffCpu& o = s.offs[e.off - 1];
      if (o.early_from && o.early_from >= start) {
        t.runq_wait_ns += o.early_runq;
        for (uint8_t rsn = 0; rsn < 6; rsn++) add_blocked(rsn, o.early_blocked[rsn]);
      }
      const uint64_t bfrom = std::max(o.off_from, start);
      if (o.wake > bfrom) add_blocked(o.reason, o.wake - bfrom);
      const uint64_t rfrom = std::max(o.wake, start);
      if (o.run > rfrom) t.runq_wait_ns += o.run - rfrom;
    }
  }
  r.start_ns = start;
  r.end_ns = end;
  r.start_tsc = time_.clock.MonoToTsc(start);
  r.end_tsc = time_.clock.MonoToTsc(end);
  r.start_wall_ns = time_.clock.MonoToWall(start);
  r.end_wall_ns = time_.clock.MonoToWall(end);
  r.edges.reserve(edge_items.size());
  for (size_t i = 0; i < edge_items.size(); i++)
    r.edges.push_back(model::CausalEdge{synth_pos[edge_items[i].first], synth_pos[edge_items[i].second], edge_kinds[i]});
  std::sort(r.edges.begin(), r.edges.end(),
            [](const model::CausalEdge& a, const model::CausalEdge& b) { return a.from < b.from; });

  // Connections of the sockets it used.
  r.connections.reserve(s.socks.size());
  for (const SetSock& ss : s.socks) {
    const SockEntry& e = ss.conn;
    r.connections.push_back(
        model::Endpoint{FormatAddr(e.family, e.saddr, e.sport), FormatAddr(e.family, e.daddr, e.dport)});
  }

  stats_.requests_emitted++;
  if (timed_out) stats_.requests_timed_out++;
  stats_.events_in_requests += s.events.size();
  stats_.edges_wakeup += nwake;
  stats_.edges_sync += nsync;
  if (r.tgid && std::find(request_tgids_.begin(), request_tgids_.end(), r.tgid) == request_tgids_.end())
    request_tgids_.push_back(r.tgid);
  if (r.tgid && !timed_out) {
    // It finished now (the record being processed closed it): the process'
    // request window extends to here. Sets cut by the GC or the end of the
    // trace say nothing about when their request ended.
    TgidAcct& a = Acct(r.tgid);
    a.window_to_cpu = CumCpu(r.tgid, now_);
    a.window_closed = true;
  }
  if (sink_) sink_(std::move(r));
}

void Extractor::Impl::Push(const jdw_record_header* rec) {
  stats_.records_in++;
  reorder_.Push(rec);
  reorder::SortedRecord sr;
  while (reorder_.Pop(&sr)) Process(sr);
}

void Extractor::Impl::Finish() {
  reorder_.Flush();
  reorder::SortedRecord sr;
  while (reorder_.Pop(&sr)) Process(sr);
  // Block requests issued more than a second before the end (devices answer
  // in milliseconds) whose completion never came.
  stats_.early_packets_dropped += early_held_;  // never used by a request
  early_held_ = 0;
  early_by_conn_.clear();
  early_by_sock_.clear();
  blk_inflight_.ForEach([&](const uint64_t&, const uint64_t& issued) {
    if (issued + 1'000'000'000 < now_) {
      stats_.block_completions_missing++;
    } else {
      stats_.block_completions_unseen_at_end++;
    }
  });
  // End of trace: whatever is still open is cut by the end of the trace.
  // A request still in progress keeps its process' window open to here.
  for (uint32_t i = 0; i < sets_.size(); i++) {
    if (!sets_[i].live) continue;
    if (sets_[i].seed && sets_[i].seed_tgid) {
      TgidAcct& a = Acct(sets_[i].seed_tgid);
      a.window_to_cpu = CumCpu(sets_[i].seed_tgid, now_);
      a.window_closed = true;
    }
    FinishSet(i, true);
  }
  for (uint32_t idx = 0; idx < threads_.size(); idx++) {
    Thread& t = threads_[idx];
    if (t.on_cpu && t.tid) ChargeRun(&t, now_);
  }
  // Everything below is about the processes that served requests: the
  // capture follows other threads only where they meet those (their switch
  // into a traced thread is recorded, their switch back in is not), so
  // their counts say nothing about the capture.
  stats_.cpu_observed_ns = 0;
  stats_.cpu_observed_total_ns = 0;
  for (uint32_t tgid : request_tgids_) {
    TgidAcct& a = Acct(tgid);
    stats_.sched_switches += a.switches;
    stats_.sched_chain_breaks += a.chain_breaks;
    stats_.sched_running_inferred += a.running_inferred;
    stats_.cpu_lost_bound_ns += a.lost_bound_ns;
    stats_.cpu_observed_total_ns += a.cpu_ns;
    const uint64_t to = a.window_closed ? a.window_to_cpu : a.cpu_ns;
    if (a.window_open && to > a.window_from_cpu) stats_.cpu_observed_ns += to - a.window_from_cpu;
    stats_.cpu_observed_ns += a.pre_window_ns;
  }
  if (stats_.sched_chain_breaks * 100 > stats_.sched_switches) {
    char buf[256];
    snprintf(buf, sizeof(buf),
             "%lu of %lu context switches switch out a thread whose switch-in is missing from the trace; "
             "its run time before them is unaccounted",
             static_cast<unsigned long>(stats_.sched_chain_breaks), static_cast<unsigned long>(stats_.sched_switches));
    stats_.warnings.push_back(buf);
  }
  const reorder::ReorderStats& rs = reorder_.stats();
  stats_.late_records = rs.late_records;
  stats_.late_io_starts = rs.late_io_starts;
  stats_.peak_reorder_queued = rs.max_queued;
}

// ---------------------------------------------------------------------------

Extractor::Extractor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Extractor::~Extractor() = default;

StatusOr<std::unique_ptr<Extractor>> Extractor::Create(const schema::Schema& schema, const trace::TraceMeta& meta,
                                                       Options opts, RequestSink sink) {
  auto impl = std::make_unique<Impl>(schema, meta, opts, std::move(sink));
  RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Extractor>(new Extractor(std::move(impl)));
}

void Extractor::Push(const jdw_record_header* rec) { impl_->Push(rec); }
void Extractor::Finish() { impl_->Finish(); }
const Stats& Extractor::stats() const { return impl_->stats(); }

}  // namespace jackdaw::join
