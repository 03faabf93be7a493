// Extractor::Impl, the join context: its definition, shared by the files
// that implement it (extractor.cc: dispatch, sets, emission;
// extractor_sched.cc: switches and wakeups; extractor_messages.cc: the
// message rule and connection life). Private to user/join.
#pragma once

#include "join/extractor.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "join/block_tracker.h"
#include "join/call_tracker.h"
#include "join/causality_tracker.h"
#include "join/compiled_schema.h"
#include "join/early_packets.h"
#include "join/endpoint_format.h"
#include "join/event_set.h"
#include "join/field_reader.h"
#include "join/flat_map.h"
#include "join/futex_tracker.h"
#include "join/interval_join.h"
#include "join/loss_map.h"
#include "join/record_context.h"
#include "join/request_builder.h"
#include "join/socket_tracker.h"
#include "join/symbol_table.h"
#include "join/thread_tracker.h"
#include "reorder/reorderer.h"
#include "join/message_tracker.h"

namespace jackdaw::join {


// Extractor::Impl — the join context: it owns the sorter and one tracker
// per concept, and dispatches each record, in timestamp order, to the
// trackers it concerns and to the schema's matching definitions. The
// trackers, each in its own file with its own test:
//  - IntervalJoin: valid-intervals per (attribute, value), the union-find of
//    event sets, cascades, set GC (a set owns its events, open-interval
//    keys, off-CPU records, causal-edge candidates and sockets);
//  - CompiledSchema: the schema bound to the trace (dispatch tables);
//  - FieldReader: the schema's fields of a record, derived ones included;
//  - SymbolTable: event symbols; RequestBuilder: finished set -> Request;
//  - ThreadTracker: per-thread kernel state kept regardless of the schema
//    (run state, syscall, last socket, pending wakeup edge, SYNC values),
//    CPUs, per-process CPU accounts;
//  - SocketTracker: sockets and connections; EarlyPackets: packets before
//    accept(); FutexTracker: futex wakes and sleepers (remote wakeups);
//  - BlockTracker: block requests in flight; CausalityTracker: SYNC;
//  - Stats (stats.h): every counter, with its severity.
// What stays here is the scheduling state machine (switches, wakeups),
// resource accounting and the dispatch.
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
  Impl(CompiledSchema cs, const trace::TraceMeta& meta, Options opts, RequestSink sink);
  void Push(const jdw_record_header* rec);
  void AdvanceTo(uint64_t ts);
  void Finish();
  const Stats& stats() const { return stats_; }
  uint64_t late_records() const { return reorder_.stats().late_records; }

 private:
  // GC timing, in units of the set timeout: a set older than kMaxSetAge
  // timeouts is cut even if still active (a runaway set that joins
  // everything would otherwise grow forever); the GC runs kGcPerTimeout times
  // per timeout, so an idle set outlives its timeout by at most 1/8 of it;
  // thread state is dropped only after kThreadSilence timeouts of silence,
  // long enough that no request can still be waiting on it; a closed socket
  // is kept kClosedSocketKeep timeouts for packets after close (FIN/ACK).
  static constexpr uint64_t kMaxSetAge = 6;
  static constexpr uint64_t kGcPerTimeout = 8;
  static constexpr uint64_t kThreadSilence = 8;
  static constexpr uint64_t kClosedSocketKeep = 2;
  // A set's off-CPU list is settled (off_cpu.h) once it holds this many:
  // requests below it keep the list as it was.
  static constexpr size_t kSettleOffCpuAt = 1024;
  // The sorter's tag of a synthetic block-request start (its record is the
  // block_complete it comes from).
  static constexpr uint8_t kTagIoStart = 1;
  static constexpr size_t kMaxBindings = CompiledSchema::kMaxBindings;
  static_assert(kMaxBindings == IntervalJoin::kMaxBindings);
  using Ctx = RecordContext;

  // --- per record
  void Process(const reorder::SortedRecord& sr);
  void HandleSwitch(const reorder::SortedRecord& sr, uint64_t ts);
  // The context of a sched_switch record as the event of `t` switching.
  static Ctx SwitchCtx(const jdw_record_header* rec, uint64_t ts, schema::EventKind kind, Thread* t, bool after_block) {
    return Ctx{.rec = rec,
               .payload = reinterpret_cast<const uint8_t*>(rec + 1),
               .payload_len = rec->size - sizeof(*rec),
               .ts = ts,
               .kind = kind,
               .thread = t,
               .tid = t->tid,
               .tgid = t->tgid,
               .irq = false,
               .after_block = after_block,
               .in_syscall = t->sys_nr};
  }
  void RunEvent(Ctx& c, const std::vector<uint16_t>* defs);
  void Join(Ctx& c, uint16_t def_idx);

  // --- threads
  // The thread is on CPU from `ts` (a switch-in, or an inferred one): closes
  // its off-CPU period.
  void StartRunning(Thread* t, uint64_t ts) {
    threads_.StartRunning(t, ts);
    LeaveFutexSleep(t);
  }
  // A record of `t` on `cpu` at `ts` while the sched records have it off
  // CPU: its switch-in was lost. See Options::infer_lost_switch_in.
  void RunningWithoutSwitchIn(Thread* t, uint16_t cpu, uint64_t ts) {
    StartRunning(t, threads_.RunningWithoutSwitchIn(t, cpu, ts, opts_.infer_lost_switch_in));
  }

  // --- losses (extractor_loss.cc): the capture's located losses
  // (loss_map.h). Those of the groups the schema's join needs mark the
  // requests that ran through them incomplete; the sched group's end the
  // runs that cross them.
  uint32_t NeededGroups() const;
  void MarkIfIncomplete(model::Request& r) const;
  void NoteUnlocatedLosses(const trace::TraceMeta& meta);
 public:
  void AddLossIntervals(const std::vector<trace::LossInterval>& intervals);

 private:
  // Records of `t`'s CPU lost since its last own record: the sched records
  // no longer prove it stayed on CPU.
  bool SchedLostSince(const Thread* t, uint16_t cpu, uint64_t ts) const {
    return !sched_loss_.empty() && sched_loss_.Touches(cpu, t->last_own_ts, ts);
  }
  LossMap needed_loss_, sched_loss_;
  std::vector<trace::LossInterval> loss_intervals_;  // what the maps are built from
  // A packet recorded in a user thread's task context while the thread is
  // inside no syscall: a softirq run at the end of an interrupt that came
  // while the thread ran in user mode. x86-64 moves to the irq stack only
  // from kernel mode, so the capture's stack test sees the thread's stack;
  // but a user thread moves packets itself only inside a syscall (send,
  // receive, close, connect). Taken as the thread's, the event would carry
  // all its user-mode run since its last event (a spin of milliseconds) to
  // the packet's request. A thread the trace has no other record of
  // (ksoftirqd running softirqs in its own context, a loopback peer outside
  // the selection whose send ran our receive) is no traced thread's
  // syscall either: its packets are interrupt work too, never a process
  // of the request.
  bool PacketInterruptedUserMode(const jdw_record_header& rec) {
    if (rec.type != JDW_EVENT_NET_RECV && rec.type != JDW_EVENT_NET_XMIT) return false;
    const Thread* t = threads_.Find(rec.tid);
    return !t || (t->sys_nr < 0 && t->on_cpu);
  }
  // A run of `t`'s calls the head sample left out (abi.h, sample_gap),
  // the last at `ts`: that connection's work, no recorded request's.
  void LeftOutOfSample(Thread* t, uint64_t ts, const jdw_sample_gap& gap);
  // `t` blocks with run time since a sample gap and no joined event: that
  // time is the left-out connection's too (its return to waiting), as a
  // recorded connection's is its life's (ChargeLifeTail).
  bool ChargeSampleGapTail(Thread* t) {
    if (!t->after_sample_gap) return false;
    threads_.Account(t).unsampled_ns += t->cpu_pending;
    t->cpu_pending = 0;
    t->after_sample_gap = false;
    return true;
  }

  // --- sets
  void Emit(Set& s, bool timed_out);
  void Gc(uint64_t now);

  // --- sockets
  // Records the connection `sk` stands for (now) among the set's.
  void NoteSock(Set& s, const Ctx& c, uint64_t sk);
  void OnSockInfo(const Ctx& c);
  void OnDgramPeer(const Ctx& c);
  void FillEvent(const Ctx& c, Ev& ev);
  Ev EventOf(const Ctx& c) {
    Ev ev{};
    FillEvent(c, ev);
    return ev;
  }
  void HoldEarlyPacket(const Ctx& c);

  uint64_t ToNs(uint64_t ts) const {
    return time_.base == trace::Timebase::kMonoNs ? ts : time_.ToMonoNs(ts);
  }

  Stats stats_;  // first: the trackers below count into it
  const CompiledSchema cs_;
  const schema::Schema& schema_ = cs_.schema();
  trace::TimeConverter time_;
  Options opts_;
  RequestSink sink_;
  reorder::Reorderer reorder_;
  uint64_t timeout_ns_;
  uint64_t max_age_ns_;
  uint64_t gc_every_ns_;
  uint64_t next_gc_ = 0;
  uint64_t now_ = 0;

  IntervalJoin join_;

  ThreadTracker threads_{stats_};
  SocketTracker socks_;
  FieldReader reader_{cs_, socks_, threads_};

  CausalityTracker causality_{cs_};

  // Futex wake calls and sleepers, for wakeups the kernel ran on the
  // wakee's idle CPU without naming the waker.
  FutexTracker futex_;
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
  void LeaveFutexSleep(Thread* t);

  BlockTracker blocks_{stats_};
  // Packets of connections not accepted yet, joined once a request uses
  // their socket.
  EarlyPackets early_{stats_};

  SymbolTable symbols_{cs_.syscall_names(), cs_.app_probes()};
  RequestBuilder builder_{symbols_, time_.clock};
  std::unordered_map<uint32_t, std::string> comms_;  // tgid -> name, from the trace's task table


  // The CPU ledger (ProcessAccount): an event's CPU goes to a request, a
  // connection or nobody. Task time is its thread's process'; interrupt
  // time (kEvIrq) the interrupted task's (Ev::tgid, 0 if the CPU idled),
  // counted in irq_charged_ns_ whichever task it was.
  enum class Charge : uint8_t { kRequest, kConnection, kNobody };
  // Inline: once per event of every set that finishes.
  void ChargeEvent(const Ev& ev, Charge to) {
    if (!ev.cpu_ns) return;
    const bool irq = ev.flags & kEvIrq;
    if (irq && to != Charge::kNobody) irq_charged_ns_ += ev.cpu_ns;
    if (!ev.tgid) return;  // an interrupt on an idle CPU: no process' time
    ProcessAccount& a = threads_.Account(ev.tgid);
    switch (to) {
      case Charge::kRequest:
        (irq ? a.req_irq_ns : a.req_task_ns) += ev.cpu_ns;
        break;
      case Charge::kConnection:
        (irq ? a.conn_irq_ns : a.conn_task_ns) += ev.cpu_ns;
        break;
      case Charge::kNobody:
        a.Unattributed(ev.cpu_ns, ev.ts);
        break;
    }
  }
  uint64_t irq_charged_ns_ = 0;

  std::vector<uint32_t> request_tgids_;
  uint64_t seq_ = 0;
  uint64_t next_request_id_ = 1;

 public:
  void SetConnectionSink(ConnectionSink sink) { conn_sink_ = std::move(sink); }

 private:
  // --- the message rule (extractor_messages.cc), for schemas with
  // `messages`: MessageTracker decides, per socket event, which exchange it
  // belongs to (Ctx::msg, msg_start) or whether it is the connection's; the
  // connection's events do not reach the schema, their resources go to the
  // connection's life (model::Connection). Inbound data packets are held
  // and joined to the request of the read that returns their bytes.
  bool messages_on() const { return msg_attr_ >= 0; }
  // false: the event is the connection's (the schema does not see it).
  bool MessageSysEnter(Ctx& c, const jdw_sys_enter& e);
  bool MessageSysExit(Ctx& c, const jdw_sys_exit& e);
  bool MessagePacket(Ctx& c);
  void MessagePacketDone(const Ctx& c);
  uint64_t pending_end_ = 0;  // a connection to end once its last packet joined
  // The capture described `sk` (at an accept, or again): unless it is the
  // same connection still open, the socket's memory serves a new one.
  void MessageSockInfo(uint64_t sk, uint64_t ts, bool same_connection);
  // After a read joined: its packets into its exchange's set.
  void JoinReadPackets(const Ctx& c);
  // Exchanges the tracker finished: their sets learn what they were, and
  // their message intervals close.
  void EndExchanges();
  void ChargeConnection(const Ctx& c, uint64_t sk);
  // The thread's pending run time to the connection whose life it last
  // worked on (Thread::life_sk), if it still exists: false if none.
  bool ChargeLifeTail(Thread* t, uint64_t ts);
  void CloseConnection(const Ctx& c, uint64_t sk);
  void EndConnection(uint64_t sk, uint64_t ts);
  // `unread`: packets never read (counted), else a read's handshake records.
  void DropHeld(const std::vector<uint64_t>& tags, bool unread = true);
  void OnDiscard(Set& s);
  void MessagesGc(uint64_t now);
  void MessagesFinish();
  struct ConnLife {
    model::Connection c;
    bool has_syscall = false;  // a syscall of the serving process used it
    uint32_t data_tgid = 0;    // the process that last read or wrote it
    // Bytes the server wrote, and payload bytes its packets carried out:
    // a close that returns before the kernel sent everything the
    // application wrote ends the connection at its FIN (closing below).
    uint64_t written = 0, sent = 0;
    bool closing = false;
    // Its life's CPU given to its requests so far (Set::connection_cpu_ns).
    uint64_t apportioned_cpu_ns = 0;
  };
  ConnLife& Life(uint64_t sk, uint64_t ts);
  // lives_.find through a one-entry cache: a record touches its socket's
  // connection several times (Message*, Charge*, Life). Elements of an
  // unordered_map keep their address until erased (ReportConnection clears
  // the cache), and the map itself is untouched, so its iteration order,
  // which orders MessagesGc's ends, is too.
  ConnLife* FindLife(uint64_t sk);
  // The live connection `sk` if it is still connection `id`.
  ConnLife* LiveConnection(uint64_t sk, uint64_t id);
  void ReportConnection(uint64_t sk);
  struct HeldPacket {
    Ev ev;
    uint64_t sk;
  };
  // Bound on inbound packets held for reads (a server that never reads a
  // connection must not grow the join): beyond it they go to the
  // connection at once.
  static constexpr size_t kMaxHeldPackets = 1 << 16;
  int msg_attr_ = -1;
  MessageTracker msgs_{schema_.setup_exchanges};
  std::unordered_map<uint64_t, ConnLife> lives_;   // sk -> its current connection
  ConnLife* last_life_ = nullptr;                  // FindLife's cache: lives_[last_life_sk_]
  uint64_t last_life_sk_ = 0;
  std::unordered_map<uint64_t, HeldPacket> held_;  // packet tag (its seq) -> packet
  std::vector<uint64_t> tags_;                     // scratch
  std::vector<uint64_t> setup_tags_;               // scratch: OnRead's handshake packets
  std::vector<Exchange> exchanges_;                // EndExchanges()' buffer (scratch)

  // --- the call rule (extractor_calls.cc), for schemas with `calls`:
  // connections a traced process opened carry calls (call_tracker.h).
  bool calls_on() const { return cs_.schema().call_attr >= 0; }
  void CallSockInfo(const jdw_sock_info& si, uint64_t ts, bool described_before, bool same_connection);
  void CallSysEnter(Ctx& c, const jdw_sys_enter& e, uint64_t sk);
  void CallSysExit(Ctx& c, const jdw_sys_exit& e, uint64_t sk, uint8_t op);
  // connect() returned on `sk`: true if it is now a client connection.
  bool CallConnect(Ctx& c, const jdw_sys_exit& e, uint64_t sk);
  void CallPacket(Ctx& c, const jdw_net_packet& p, uint64_t sk);
  // An exchange begins on `sk` (served by `tgid`): the unanswered call of
  // the traced socket at its far end that sent its bytes, 0 if none.
  uint64_t PeerCall(uint64_t sk, uint32_t tgid, uint64_t ts);
  // After the schema saw an event: a client connection's close takes
  // effect (its call ends).
  void CallsAfterEvent(uint64_t ts);
  // Calls the tracker finished: their sets learn them, their intervals close.
  void EndCalls();
  void AttachCall(Set& s, const FinishedCall& f);
  // At emission: the calls the set began that are still going on.
  void TakeOpenCalls(Set& s);
  void CallsFinish();
  CallTracker calls_;
  std::vector<FinishedCall> calls_done_;              // EndCalls()' buffer (scratch)
  std::unordered_map<uint64_t, uint32_t> call_peer_;  // call key -> tgid of the traced process serving it
  // Calls that ended after their interval closed, for their request to
  // take when emitted (TakeOpenCalls); dropped by the GC after a timeout.
  std::unordered_map<uint64_t, FinishedCall> ended_calls_;
  void CallsGc(uint64_t horizon);
  uint64_t pending_call_close_ = 0;
  uint64_t next_conn_id_ = 1;
  ConnectionSink conn_sink_;
};

}  // namespace jackdaw::join
