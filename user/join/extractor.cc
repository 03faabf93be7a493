#include "join/extractor.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "join/block_tracker.h"
#include "join/causality_tracker.h"
#include "join/compiled_schema.h"
#include "join/early_packets.h"
#include "join/endpoint_format.h"
#include "join/event_set.h"
#include "join/field_reader.h"
#include "join/flat_map.h"
#include "join/futex_tracker.h"
#include "join/interval_join.h"
#include "join/record_context.h"
#include "join/request_builder.h"
#include "join/socket_tracker.h"
#include "join/symbol_table.h"
#include "join/thread_tracker.h"
#include "reorder/reorderer.h"

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
  void Finish();
  const Stats& stats() const { return stats_; }

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

  // --- sets
  void Emit(Set& s, bool timed_out);
  void Gc(uint64_t now);

  // --- sockets
  // Records the connection `sk` stands for (now) among the set's.
  void NoteSock(Set& s, const Ctx& c, uint64_t sk);
  void OnSockInfo(const Ctx& c);
  Ev EventOf(const Ctx& c);
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


  std::vector<uint32_t> request_tgids_;
  uint64_t seq_ = 0;
  uint64_t next_request_id_ = 1;
};


// ---------------------------------------------------------------------------
// setup

Extractor::Impl::Impl(CompiledSchema cs, const trace::TraceMeta& meta, Options opts, RequestSink sink)
    : cs_(std::move(cs)),
      time_(meta.time),
      opts_(opts),
      sink_(std::move(sink)),
      reorder_(reorder::Reorderer::Options{.window = opts.reorder_window}),
      join_(cs_.cascade_table(), stats_, opts_.emit_timed_out, [this](Set& s, bool timed_out) { Emit(s, timed_out); }) {
  stats_.warnings = cs_.warnings();
  timeout_ns_ = opts_.timeout_ns ? opts_.timeout_ns : schema_.timeout_ns;
  max_age_ns_ = opts_.max_set_age_ns ? opts_.max_set_age_ns : kMaxSetAge * timeout_ns_;
  gc_every_ns_ = std::max<uint64_t>(timeout_ns_ / kGcPerTimeout, 1'000'000);
}

// ---------------------------------------------------------------------------
// threads

// ---------------------------------------------------------------------------
// sets

// ---------------------------------------------------------------------------
// sockets

void Extractor::Impl::OnSockInfo(const Ctx& c) {
  const auto* si = reinterpret_cast<const jdw_sock_info*>(c.payload);
  if (si->sk == 0) return;
  // The accepting thread used the socket first (its accept returns it just
  // after this record): that is this connection, not an older one.
  if (c.thread && c.thread->last_sock == si->sk) c.thread->last_sock_ts = c.ts;
  early_.Named(socks_.OnSockInfo(*si, c.ts), si->sk);
}

// The event as a set stores it: what it is, and the bytes and interrupt
// time it consumed (a task's run time is charged by Join()).
Ev Extractor::Impl::EventOf(const Ctx& c) {
  Ev ev{};
  ev.seq = ++seq_;
  ev.ts = c.ts;
  ev.tid = c.tid;
  ev.tgid = c.tgid;
  ev.cpu = c.rec->cpu;
  ev.record_type = c.kind == schema::EventKind::kRecord || c.kind == schema::EventKind::kUsdt ? c.rec->type : 0;
  ev.symbol = symbols_.Of(c.kind, c.rec->type, c.payload, c.after_block);
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
    ev.cpu_ns = threads_.TakeIrqCpu(c.rec->cpu, c.rec->tid, c.rec->tgid, c.ts, opts_.irq_burst_gap_ns);
  }
  return ev;
}

void Extractor::Impl::HoldEarlyPacket(const Ctx& c) {
  const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
  if (p->protocol != kIpProtoTcp) return;
  early_.Hold(SocketTracker::LocalConnKey(c.rec->type, *p), c.ts, timeout_ns_, [&] { return EventOf(c); });
}

void Extractor::Impl::NoteSock(Set& s, const Ctx& c, uint64_t sk) {
  const bool packet = c.kind == schema::EventKind::kRecord &&
                      (c.rec->type == JDW_EVENT_NET_XMIT || c.rec->type == JDW_EVENT_NET_RECV);
  socks_.NoteInSet(s, sk, packet ? reinterpret_cast<const jdw_net_packet*>(c.payload) : nullptr,
                   c.rec->type == JDW_EVENT_NET_XMIT);
}

// ---------------------------------------------------------------------------
// the join

void Extractor::Impl::RunEvent(Ctx& c, const std::vector<uint16_t>* defs) {
  if (!defs) return;
  for (uint16_t d : *defs) {
    if (reader_.Matches(schema_.events[d], c)) {
      stats_.events_matched++;
      Join(c, d);
      return;
    }
  }
}

void Extractor::Impl::Join(Ctx& c, uint16_t def_idx) {
  const schema::EventDef& def = schema_.events[def_idx];
  IntervalJoin::Bound bs[kMaxBindings];
  IKey keys[kMaxBindings];  // bs' keys, for the causality tracker
  size_t n = 0;
  for (const schema::AttrBinding& b : def.bindings) {
    bool ok = true;
    const uint64_t v = reader_.Read(b.value, c, &ok);
    if (!ok || v == 0) {
      stats_.bindings_skipped++;
      continue;
    }
    keys[n] = IKey{v, b.attr, 0};
    bs[n] = IntervalJoin::Bound{keys[n], b.type};
    n++;
  }
  if (n == 0) {
    stats_.events_unbound++;
    if (c.irq && c.kind == schema::EventKind::kRecord &&
        (c.rec->type == JDW_EVENT_NET_RECV || c.rec->type == JDW_EVENT_NET_XMIT))
      HoldEarlyPacket(c);
    return;
  }

  // 1-2. Join the open intervals, open and close them.
  IntervalJoin::Closed closed;
  const uint32_t target = join_.Bind(bs, n, c.ts, &closed);

  // 3. The event itself, with what it consumed.
  Set& s = join_.set(target);
  Ev ev = EventOf(c);
  if (def.wait) ev.flags |= kEvWait;
  // A task's run time since its last joined event (interrupt time: EventOf()).
  if (Thread* t = c.irq ? nullptr : c.thread) {
    threads_.ChargeRun(t, c.ts);
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
    causality_.NoteBindings(t, std::span<const IKey>(keys, n));
  }
  causality_.Sync(def_idx, std::span<const IKey>(keys, n), c.thread,
                  CausalityTracker::Source{ev.seq, c.ts, c.tid, c.rec->cpu}, &s.edges);

  const uint64_t event_sk = reader_.SockOf(c);
  if (event_sk) NoteSock(s, c, event_sk);
  if (def.seed && !s.seed) {
    s.seed = true;
    s.seed_tgid = c.irq ? c.rec->tgid : c.tgid;
    if (s.seed_tgid) {
      ProcessAccount& a = threads_.Account(s.seed_tgid);
      if (!a.window_open) {
        a.window_open = true;
        a.window_from_ts = c.ts;
        a.window_from_cpu = threads_.CumCpu(s.seed_tgid, c.ts);
      }
    }
  }
  s.last_ts = std::max(s.last_ts, c.ts);
  s.first_ts = std::min(s.first_ts, c.ts);
  s.events.push_back(ev);
  stats_.events_joined++;
  // A request's first use of a connection whose opening packets were held.
  if (event_sk && s.seed && early_.AnyNamed()) early_.JoinInto(s, event_sk);

  // 4. Finished sets.
  join_.FinishClosed(closed, target, opts_.max_set_events);
}

void Extractor::Impl::LeaveFutexSleep(Thread* t) {
  if (!t->sleep_futex) return;
  futex_.Leave(t->sleep_futex);
  t->sleep_futex = 0;
}

void Extractor::Impl::Wakeup(Ctx& c, Thread* wakee) {
  const uint64_t before = seq_;
  RunEvent(c, &cs_.ForType(c.rec->type));
  const bool joined = seq_ != before;
  Thread* waker = c.thread;
  if (!wakee || wakee->on_cpu) return;
  ThreadTracker::Woken(wakee, c.ts);
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
  const uint32_t sleeper = futex_.SoleSleeper(uaddr);
  if (!sleeper || sleeper == waker->tid) return;  // several: the kernel's record says which
  Thread* wakee = threads_.Find(sleeper);
  if (!wakee) return;
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
  Ctx w{.rec = &rec.h,
        .payload = reinterpret_cast<const uint8_t*>(&rec.b),
        .payload_len = sizeof(rec.b),
        .ts = c.ts,
        .kind = schema::EventKind::kRecord,
        .thread = waker,
        .tid = waker->tid,
        .tgid = waker->tgid,
        .irq = false,
        .after_block = false,
        .in_syscall = cs_.futex_nr()};  // still inside futex() as it asks
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
  if (cs_.futex_nr() < 0 || wakee->on_cpu || wakee->off != Off::kBlocked || wakee->sys_nr != cs_.futex_nr() ||
      !wakee->sys_obj)
    return;
  const FutexTracker::Wake* fw = futex_.LastWake(wakee->sys_obj);
  if (!fw || fw->ts < wakee->off_since || fw->ts > c.ts || c.ts - fw->ts > kWindowNs || fw->tid == wakee->tid)
    return;
  Thread* waker = threads_.Get(fw->tid, fw->tgid, c.ts, true);
  if (!waker) return;
  stats_.wakeups_attributed++;
  c.irq = false;
  c.ctx = JDW_CTX_TASK;
  c.thread = waker;
  c.tid = waker->tid;
  c.tgid = waker->tgid;
  c.in_syscall = cs_.futex_nr();  // it was inside futex() when it asked
}

void Extractor::Impl::HandleSwitch(const reorder::SortedRecord& sr, uint64_t ts) {
  const jdw_record_header* rec = sr.rec;
  const auto* sw = reinterpret_cast<const jdw_sched_switch*>(rec + 1);
  const bool blocked = sw->prev_state != 0;

  // prev: charge its run time, then the switch_out event takes it if joined.
  Thread* prev = threads_.Get(sw->prev_tid, sw->prev_tgid, ts, true);
  if (prev) {
    // Switched out while we had it off CPU, with no record of it running
    // since: its switch-in is missing from the trace.
    const bool chain_break = !prev->on_cpu;
    const bool seen_leaving = prev->off != Off::kNone;
    if (chain_break && seen_leaving) RunningWithoutSwitchIn(prev, rec->cpu, ts);
    ProcessAccount& acct = threads_.Account(prev);
    acct.switches++;
    if (chain_break) {
      acct.chain_breaks++;
      if (seen_leaving) acct.running_inferred--;  // counted as a chain break instead
    }
    threads_.ChargeRun(prev, ts);
    Ctx c = SwitchCtx(rec, ts, schema::EventKind::kSwitchOut, prev, blocked);
    RunEvent(c, &cs_.ForSwitchOut());
    if (blocked && prev->cpu_pending) {
      stats_.cpu_dropped_ns += prev->cpu_pending;
      prev->cpu_pending = 0;
    }
    ThreadTracker::SwitchedOut(prev, ts, blocked, blocked ? reader_.BlockReasonOf(prev) : 0);
    LeaveFutexSleep(prev);
    if (blocked && prev->sys_nr == cs_.futex_nr() && prev->sys_obj && cs_.futex_nr() >= 0) {
      futex_.Sleep(prev->sys_obj, prev->tid);
      prev->sleep_futex = prev->sys_obj;
    }
  }

  if (CpuState* cpu = threads_.FindCpu(rec->cpu)) {
    cpu->cur_tid = sw->next_tid;
    cpu->last_task_ts = ts;
  }
  Thread* next = threads_.Get(sw->next_tid, sw->next_tgid, ts, false);
  if (next) {
    const bool after_block = next->last_out_blocked;
    StartRunning(next, ts);
    if (after_block) next->sock_used = false;
    Ctx c = SwitchCtx(rec, ts, schema::EventKind::kSwitchIn, next, after_block);
    RunEvent(c, &cs_.ForSwitchIn());
  }
}

void Extractor::Impl::Process(const reorder::SortedRecord& sr) {
  const jdw_record_header* rec = sr.rec;
  stats_.records_processed++;
  const size_t need = cs_.PayloadSize(rec->type);
  if (rec->size < sizeof(*rec) || (need && rec->size < sizeof(*rec) + need)) {
    stats_.bad_records++;
    return;
  }
  const uint64_t ts = ToNs(sr.ts);
  now_ = std::max(now_, ts);
  CpuState& cs = threads_.Cpu(rec->cpu);
  const bool irq = rec->ctx != JDW_CTX_TASK;

  if (now_ >= next_gc_) {
    Gc(now_);
    next_gc_ = now_ + gc_every_ns_;
  }

  if (sr.tag == kTagIoStart) {
    stats_.io_starts++;
    const auto* bc = reinterpret_cast<const jdw_block_complete*>(rec + 1);
    Thread* t = threads_.Get(bc->issue_tid, bc->issue_tgid, ts, true);
    Ctx c{.rec = rec,
          .payload = reinterpret_cast<const uint8_t*>(bc),
          .payload_len = rec->size - sizeof(*rec),
          .ts = ts,
          .kind = schema::EventKind::kIoStart,
          .thread = t,
          .tid = bc->issue_tid,
          .tgid = bc->issue_tgid,
          .irq = false,
          .after_block = false,
          .in_syscall = t ? t->sys_nr : -1};
    RunEvent(c, &cs_.ForIoStart());
    return;
  }

  if (rec->type == JDW_EVENT_SCHED_SWITCH) {
    HandleSwitch(sr, ts);
    cs.irq_run = false;
    return;
  }

  Thread* t = irq ? nullptr : threads_.Get(rec->tid, rec->tgid, ts, true);
  // A task-context record proves the thread runs (its switch-in may
  // predate the trace or have been lost).
  if (t && !t->on_cpu) RunningWithoutSwitchIn(t, rec->cpu, ts);
  if (t) cs.last_task_ts = ts;
  // A block completion runs in whatever task the driver completes it in (an
  // unrelated thread, often of another process): like an interrupt, it is
  // not that task's event and must not take its CPU. Its owner is the
  // issuing thread (issue_tid), which the synthetic io_start carries.
  Thread* subject = rec->type == JDW_EVENT_BLOCK_COMPLETE ? nullptr : t;
  Ctx c{.rec = rec,
        .payload = reinterpret_cast<const uint8_t*>(rec + 1),
        .payload_len = rec->size - sizeof(*rec),
        .ts = ts,
        .kind = schema::EventKind::kRecord,
        .thread = subject,
        .tid = subject ? rec->tid : 0,
        .tgid = subject ? rec->tgid : 0,
        .irq = irq,
        .after_block = false,
        .in_syscall = subject ? subject->sys_nr : -1};

  switch (rec->type) {
    case JDW_EVENT_SYS_ENTER: {
      const auto* e = reinterpret_cast<const jdw_sys_enter*>(c.payload);
      RunEvent(c, cs_.ForSysEnter(e->nr));
      if (t && e->nr == cs_.futex_nr() && e->obj && FutexTracker::IsWake(e->arg))
        futex_.NoteWake(e->obj, FutexTracker::Wake{ts, t->tid, t->tgid});
      if (t) {
        ThreadTracker::EnterSyscall(t, *e, ts);
        if (e->obj_kind == JDW_OBJ_SOCKET && e->obj) {
          if (const uint8_t dir = cs_.SysDirection(e->nr)) {
            socks_.NoteDirection(e->obj, dir);
            t->conn_open = true;
          }
          if (cs_.SysCloses(e->nr)) {
            t->conn_open = false;
            socks_.Closed(e->obj, ts);
          }
        }
      }
      break;
    }
    case JDW_EVENT_SYS_EXIT: {
      const auto* e = reinterpret_cast<const jdw_sys_exit*>(c.payload);
      RunEvent(c, cs_.ForSysExit(e->nr));
      if (t && e->nr == cs_.futex_nr() && t->sys_nr == cs_.futex_nr() && e->ret > 0 && FutexTracker::IsWake(t->sys_arg))
        FutexWoke(c, t, t->sys_obj);
      if (t) ThreadTracker::ExitSyscall(t, *e, ts);
      break;
    }
    case JDW_EVENT_SCHED_WAKEUP:
    case JDW_EVENT_SCHED_WAKEUP_NEW: {
      const auto* w = reinterpret_cast<const jdw_sched_wakeup*>(c.payload);
      Thread* wakee = threads_.Get(w->wakee_tid, w->wakee_tgid, ts, false);
      // Already woken on behalf of its waker (a futex wake seen to reach
      // it): this is the kernel's late record of the same wakeup.
      if (irq && wakee && wakee->wake_synth) break;
      if (irq && wakee) AttributeRemoteWakeup(c, wakee);
      Wakeup(c, wakee);
      break;
    }
    case JDW_EVENT_SOCK_INFO:
      OnSockInfo(c);
      RunEvent(c, &cs_.ForType(rec->type));
      break;
    case JDW_EVENT_TASK_EXIT:
      RunEvent(c, &cs_.ForType(rec->type));
      if (t && rec->tid) {
        if (t->on_cpu) threads_.ChargeRun(t, ts);
        if (t->cpu_pending) stats_.cpu_dropped_ns += t->cpu_pending;
        LeaveFutexSleep(t);
        threads_.Remove(rec->tid);  // a free slot: not on CPU, charges nothing at Finish()
      }
      break;
    case JDW_EVENT_BLOCK_ISSUE: {
      blocks_.Issue(reinterpret_cast<const jdw_block_issue*>(c.payload)->rq, ts);
      RunEvent(c, &cs_.ForType(rec->type));
      break;
    }
    case JDW_EVENT_BLOCK_COMPLETE:
      blocks_.Complete(reinterpret_cast<const jdw_block_complete*>(c.payload)->rq);
      RunEvent(c, &cs_.ForType(rec->type));
      break;
    case JDW_EVENT_USDT: {
      const auto* u = reinterpret_cast<const jdw_usdt*>(c.payload);
      c.kind = schema::EventKind::kUsdt;
      if (const std::vector<uint16_t>* defs = cs_.ForUsdt(u->probe_id)) {
        RunEvent(c, defs);
      } else {
        stats_.usdt_unknown_probe++;
      }
      break;
    }
    default:
      if (rec->type < JDW_EVENT_MAX) RunEvent(c, &cs_.ForType(rec->type));
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
    join_.ExpireSets(horizon, age_horizon);
    causality_.ExpireBefore(horizon);
    futex_.ExpireWakesBefore(horizon);
    blocks_.ExpireBefore(horizon);
    // Threads silent for long and off CPU: their state is stale anyway.
    if (now > kThreadSilence * timeout_ns_) {
      const uint64_t thread_horizon = now - kThreadSilence * timeout_ns_;
      threads_.ExpireSilent(thread_horizon, [&](Thread& t) { LeaveFutexSleep(&t); });
    }
  }
  // Held packets of connections not accepted, or not used by a request,
  // within the timeout.
  if (now > timeout_ns_) early_.ExpireBefore(now - timeout_ns_);
  // Sockets closed long ago: packets after close (FIN/ACK) had their chance.
  socks_.ExpireClosed(now, kClosedSocketKeep * timeout_ns_);
  join_.Compact();
}

void Extractor::Impl::Emit(Set& s, bool timed_out) {
  // A request whose seed named no process (tgid 0: a damaged or crafted
  // trace) has no process account: its CPU is compared with none.
  ProcessAccount* acct = s.seed_tgid ? &threads_.Account(s.seed_tgid) : nullptr;
  const RequestBuilder::ProcessWindow window{acct ? acct->window_from_ts : 0};
  RequestBuilder::Charged charged;
  model::Request r = builder_.Build(s, timed_out, next_request_id_++, acct ? &window : nullptr, &charged);
  stats_.softirq_charged_ns += charged.softirq_ns;
  stats_.cpu_charged_ns += charged.process_cpu_ns;
  if (acct) acct->pre_window_ns += charged.pre_window_ns;
  stats_.requests_emitted++;
  if (timed_out) stats_.requests_timed_out++;
  stats_.events_in_requests += s.events.size();
  stats_.edges_wakeup += charged.wakeup_edges;
  stats_.edges_sync += charged.sync_edges;
  if (r.tgid && std::find(request_tgids_.begin(), request_tgids_.end(), r.tgid) == request_tgids_.end())
    request_tgids_.push_back(r.tgid);
  if (r.tgid && !timed_out) {
    // It finished now (the record being processed closed it): the process'
    // request window extends to here. Sets cut by the GC or the end of the
    // trace say nothing about when their request ended.
    ProcessAccount& a = threads_.Account(r.tgid);
    a.window_to_cpu = threads_.CumCpu(r.tgid, now_);
    a.window_closed = true;
  }
  if (sink_) sink_(std::move(r));
}

void Extractor::Impl::Push(const jdw_record_header* rec) {
  stats_.records_in++;
  // A block completion's request began at its issue: a synthetic io_start
  // there, sorted among the records of that time.
  uint64_t issue_ts;
  if (reorder_.Push(rec) && BlockTracker::IssueTime(*rec, &issue_ts) && !reorder_.Push(issue_ts, rec, kTagIoStart))
    stats_.late_io_starts++;
  reorder::SortedRecord sr;
  while (reorder_.Pop(&sr)) Process(sr);
}

void Extractor::Impl::Finish() {
  reorder_.Flush();
  reorder::SortedRecord sr;
  while (reorder_.Pop(&sr)) Process(sr);
  early_.DropAll();  // never used by a request
  blocks_.Finish(now_);
  // End of trace: whatever is still open is cut by the end of the trace.
  // A request still in progress keeps its process' window open to here.
  join_.FinishAll([&](Set& s) {
    if (s.seed && s.seed_tgid) {
      ProcessAccount& a = threads_.Account(s.seed_tgid);
      a.window_to_cpu = threads_.CumCpu(s.seed_tgid, now_);
      a.window_closed = true;
    }
  });
  threads_.ForEachSlot([&](Thread& t) {
    if (t.on_cpu && t.tid) threads_.ChargeRun(&t, now_);
  });
  // Everything below is about the processes that served requests: the
  // capture follows other threads only where they meet those (their switch
  // into a traced thread is recorded, their switch back in is not), so
  // their counts say nothing about the capture.
  threads_.SumAccounts(request_tgids_);
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
  stats_.peak_reorder_queued = rs.max_queued;
}

// ---------------------------------------------------------------------------

Extractor::Extractor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Extractor::~Extractor() = default;

StatusOr<std::unique_ptr<Extractor>> Extractor::Create(const schema::Schema& schema, const trace::TraceMeta& meta,
                                                       Options opts, RequestSink sink) {
  ASSIGN_OR_RETURN(CompiledSchema cs, CompiledSchema::Compile(schema, meta));
  auto impl = std::make_unique<Impl>(std::move(cs), meta, opts, std::move(sink));
  return std::unique_ptr<Extractor>(new Extractor(std::move(impl)));
}

void Extractor::Push(const jdw_record_header* rec) { impl_->Push(rec); }
void Extractor::Finish() { impl_->Finish(); }
const Stats& Extractor::stats() const { return impl_->stats(); }

}  // namespace jackdaw::join
