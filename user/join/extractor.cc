#include "join/extractor_impl.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "join/cpu_clamp.h"
#include "join/off_cpu.h"

namespace jackdaw::join {



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
  msg_attr_ = schema_.message_attr;
  join_.set_on_discard([this](Set& s) { OnDiscard(s); });
  for (const auto& [tid, task] : meta.tasks) {
    // The main thread names the process (a worker thread may rename itself).
    if (tid == task.tgid || !comms_.count(task.tgid)) comms_[task.tgid] = task.comm;
  }
  builder_.SetProcessNames(&comms_);
  AddLossIntervals(meta.loss_intervals);
  NoteUnlocatedLosses(meta);
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
  // The capture may describe a socket again while its connection goes on
  // (another thread of the server resolving the same fd): the same
  // addresses and ports on the same memory are the same connection.
  const SockEntry* before = socks_.Current(si->sk);
  const uint32_t gen = before ? before->gen : 0;
  const bool known = before != nullptr;
  // A call connection whose memory now serves another connection is over:
  // its last call ends while the socket still names its endpoints.
  if (calls_on() && known && calls_.IsClient(si->sk) && socks_.DescribesAnother(*si)) {
    calls_.OnClose(si->sk, c.ts);
    EndCalls();
  }
  if (const uint64_t key = socks_.OnSockInfo(*si, c.ts, c.tgid)) early_.Named(key, si->sk);
  const SockEntry* after = socks_.Current(si->sk);
  const bool same_connection = known && after && after->gen == gen;
  if (messages_on()) MessageSockInfo(si->sk, c.ts, same_connection);
  if (calls_on()) CallSockInfo(*si, c.ts, known, same_connection);
}

// A datagram's far end: the thread's call on the socket belongs to the
// flow (socket, peer), a connection of its own to the message rule, the
// requests and the connection lines, described once like a connected
// socket (ports and addresses from the record). Flow ids are odd, so never
// a kernel socket's (aligned) address.
void Extractor::Impl::OnDgramPeer(const Ctx& c) {
  const auto* p = reinterpret_cast<const jdw_dgram_peer*>(c.payload);
  if (!p->sk || !c.thread) return;
  uint64_t flow = p->sk ^ (uint64_t{p->dport} << 40) ^ (uint64_t{p->family} << 56);
  for (uint8_t b : p->daddr) flow = (flow ^ b) * 1099511628211ull;
  flow |= 1;
  c.thread->dgram_sk = p->sk;
  c.thread->dgram_flow = flow;
  if (socks_.Current(flow)) return;
  jdw_sock_info si{};
  si.sk = flow;
  si.family = p->family;
  si.protocol = p->protocol;
  si.sport = p->sport;
  si.dport = p->dport;
  memcpy(si.saddr, p->saddr, sizeof(si.saddr));
  memcpy(si.daddr, p->daddr, sizeof(si.daddr));
  socks_.OnSockInfo(si, c.ts, c.tgid);
  stats_.datagram_flows++;
}

// The event as a set stores it: what it is, and the bytes and interrupt
// time it consumed (a task's run time is charged by Join()). `ev` is
// zero-initialised, and written where it is stored: built on the stack
// and copied, its narrow field stores stalled the wide loads of the copy.
void Extractor::Impl::FillEvent(const Ctx& c, Ev& ev) {
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
      ev.payload = p->payload_len;
      if (p->tcp_flags & 0x08) ev.flags |= kEvPush;  // PSH
      ev.flags |= c.rec->type == JDW_EVENT_NET_XMIT ? kEvNetOut : kEvNetIn;
    } else if (c.rec->type == JDW_EVENT_BLOCK_COMPLETE) {
      ev.bytes = reinterpret_cast<const jdw_block_complete*>(c.payload)->bytes;
      ev.flags |= kEvDisk;
    }
  }
  if (c.irq) {
    ev.flags |= kEvIrq;
    ev.tid = 0;  // not the interrupted task's event
    ev.tgid = c.rec->tid ? c.rec->tgid : 0;  // whose time the interrupt took (ChargeEvent)
    ev.cpu_ns = threads_.TakeIrqCpu(c.rec->cpu, c.rec->tid, c.rec->tgid, c.ts, opts_.irq_burst_gap_ns);
  }
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
  if (!defs || defs->empty()) return;
  const int d = reader_.FirstMatch(*defs, c);
  if (d < 0) return;
  stats_.events_matched++;
  Join(c, static_cast<uint16_t>(d));
}

void Extractor::Impl::Join(Ctx& c, uint16_t def_idx) {
  const schema::EventDef& def = schema_.events[def_idx];
  IntervalJoin::Bound bs[kMaxBindings];
  IKey keys[kMaxBindings];  // bs' keys, for the causality tracker
  size_t n = 0;
  uint64_t values[kMaxBindings];
  reader_.ReadBindings(def_idx, c, values);
  for (size_t i = 0; i < def.bindings.size(); i++) {
    const uint64_t v = values[i];
    if (v == 0) {
      stats_.bindings_skipped++;
      continue;
    }
    const schema::AttrBinding& b = def.bindings[i];
    keys[n] = IKey{v, b.attr, 0};
    bs[n] = IntervalJoin::Bound{keys[n], b.type};
    n++;
  }
  if (c.conn_owned) {
    // The connection's event: its intervals change as the schema says (a
    // thread re-tasked by an accept, done at a close), but it is in no set.
    if (n == 0) return;
    IntervalJoin::Closed closed;
    const uint32_t target = join_.Bind(bs, n, c.ts, &closed);
    join_.FinishClosed(closed, target, opts_.max_set_events, opts_.max_unseeded_set_events);
    return;
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
  // Stored first: nothing below adds to s.events before it.
  Ev& ev = s.events.emplace_back();
  FillEvent(c, ev);
  if (def.wait) ev.flags |= kEvWait;
  // A task's run time since its last joined event (interrupt time: EventOf()).
  if (Thread* t = c.irq ? nullptr : c.thread) {
    threads_.ChargeRun(t, c.ts);
    // Switched out before it took up a recorded request again: its run
    // since the sample gap ends the left-out connection's work.
    if (t->after_sample_gap && c.kind == schema::EventKind::kSwitchOut) ChargeSampleGapTail(t);
    ev.cpu_ns = t->cpu_pending;
    t->cpu_pending = 0;
    t->after_sample_gap = false;
    if (t->life_sk) {
      if (!s.life_sk) {
        s.life_sk = t->life_sk;
        s.life_conn = t->life_conn;
      }
      t->life_sk = 0;
    }
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
  if (c.call_start == Ctx::kCallBegins && event_sk) s.open_calls.push_back(Set::CallRef{event_sk, c.call});
  if (def.seed && !s.seed) {
    s.seed = true;
    s.seed_msg = c.msg;
    s.seed_tgid = c.irq ? c.rec->tgid : c.tgid;
    if (s.seed_tgid) threads_.Account(s.seed_tgid).OpenWindow(c.ts);
  }
  s.last_ts = std::max(s.last_ts, c.ts);
  s.first_ts = std::min(s.first_ts, c.ts);
  stats_.events_joined++;
  // A request's first use of a connection whose opening packets were held.
  if (event_sk && s.seed && early_.AnyNamed()) early_.JoinInto(s, event_sk);

  // A long-lived set's off-CPU list stays bounded (off_cpu.h; exact, so
  // nothing to count).
  if (s.offs.size() >= std::max(s.settle_at, kSettleOffCpuAt)) SettleOffCpu(s, kSettleOffCpuAt);

  // 4. Finished sets.
  join_.FinishClosed(closed, target, opts_.max_set_events, opts_.max_unseeded_set_events);
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
  const bool irq = rec->ctx != JDW_CTX_TASK || PacketInterruptedUserMode(*rec);

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
  // On CPU elsewhere by the sched records: it moved, and both switches
  // were lost; or its CPU lost sched records since its last record: its
  // run in between is unknown.
  if (t && t->on_cpu && ((t->last_cpu >= 0 && t->last_cpu != rec->cpu) || SchedLostSince(t, rec->cpu, ts)))
    threads_.EndLostRun(t, ts);
  // A task-context record proves the thread runs (its switch-in may
  // predate the trace or have been lost).
  if (t && !t->on_cpu) RunningWithoutSwitchIn(t, rec->cpu, ts);
  if (t) {
    threads_.TakesCpu(t, rec->cpu);
    t->last_own_ts = ts;
    cs.last_task_ts = ts;
  }
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
  // A packet taken for interrupt work (PacketInterruptedUserMode) reads as
  // one to the schema too.
  if (irq && rec->ctx == JDW_CTX_TASK) c.ctx = JDW_CTX_SOFTIRQ;

  switch (rec->type) {
    case JDW_EVENT_SYS_ENTER: {
      const auto* e = reinterpret_cast<const jdw_sys_enter*>(c.payload);
      if (messages_on() && !MessageSysEnter(c, *e)) c.conn_owned = true;
      RunEvent(c, cs_.ForSysEnter(e->nr));
      if (t && e->nr == cs_.futex_nr() && e->obj && FutexTracker::IsWake(e->arg))
        futex_.NoteWake(e->obj, FutexTracker::Wake{ts, t->tid, t->tgid});
      if (t) {
        ThreadTracker::EnterSyscall(t, *e, ts);
        t->sys_call = c.call;
        if (e->obj_kind == JDW_OBJ_SOCKET && e->obj) {
          if (const uint8_t dir = cs_.SysDirection(e->nr)) {
            socks_.NoteDirection(e->obj, dir);
            t->conn_open = true;
            t->serves_conns = true;
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
      if (messages_on() && !MessageSysExit(c, *e)) c.conn_owned = true;
      RunEvent(c, cs_.ForSysExit(e->nr));
      if (messages_on() && !tags_.empty()) JoinReadPackets(c);
      if (pending_call_close_) CallsAfterEvent(ts);
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
        if (t->cpu_pending) {
          stats_.cpu_dropped_ns += t->cpu_pending;
          threads_.Account(t).Unattributed(t->cpu_pending, ts);
        }
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
    case JDW_EVENT_NET_XMIT:
    case JDW_EVENT_NET_RECV:
      if (!messages_on() || MessagePacket(c)) RunEvent(c, &cs_.ForType(rec->type));
      if (messages_on() && pending_end_) MessagePacketDone(c);
      break;
    case JDW_EVENT_DGRAM_PEER:
      OnDgramPeer(c);
      break;
    case JDW_EVENT_SAMPLE_GAP:
      if (t) LeftOutOfSample(t, ts, *reinterpret_cast<const jdw_sample_gap*>(c.payload));
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
    if (calls_on()) CallsGc(horizon);
    // Threads silent for long and off CPU: their state is stale anyway.
    if (now > kThreadSilence * timeout_ns_) {
      const uint64_t thread_horizon = now - kThreadSilence * timeout_ns_;
      threads_.ExpireSilent(thread_horizon, [&](Thread& t) {
        if (t.cpu_pending) threads_.Account(&t).Unattributed(t.cpu_pending, t.last_seen);
        LeaveFutexSleep(&t);
      });
    }
  }
  // Held packets of connections not accepted, or not used by a request,
  // within the timeout.
  if (now > timeout_ns_) early_.ExpireBefore(now - timeout_ns_);
  // Sockets closed long ago: packets after close (FIN/ACK) had their chance.
  socks_.ExpireClosed(now, kClosedSocketKeep * timeout_ns_);
  if (messages_on()) MessagesGc(now);
  join_.Compact();
}

void Extractor::Impl::Emit(Set& s, bool timed_out) {
  // No impossible value: CPU beyond what its thread can have run within the
  // request was charged on a lost or missing record; it goes to none.
  const CpuClamp clamped = ClampCpuToThreadTime(s.events, s.offs, [&](const Ev& ev, uint64_t ns) {
    if (ev.tgid) threads_.Account(ev.tgid).Unattributed(ns, ev.ts);
  });
  stats_.cpu_beyond_span_ns += clamped.dropped_ns;
  stats_.events_cpu_clamped += clamped.events;
  // A request whose seed named no process (tgid 0: a damaged or crafted
  // trace) has no process account: its CPU is compared with none.
  for (const Ev& ev : s.events) ChargeEvent(ev, Charge::kRequest);
  TakeOpenCalls(s);
  RequestBuilder::Charged charged;
  model::Request r = builder_.Build(s, timed_out, next_request_id_++, nullptr, &charged);
  stats_.requests_emitted++;
  MarkIfIncomplete(r);
  if (r.incomplete) stats_.requests_incomplete++;
  if (timed_out) stats_.requests_timed_out++;
  stats_.events_in_requests += s.events.size();
  stats_.edges_wakeup += charged.wakeup_edges;
  stats_.edges_sync += charged.sync_edges;
  // Every process the request crossed served it: its CPU is compared with
  // what its requests got. It finished now (the record being processed
  // closed it): each process' request window extends to here. Sets cut by
  // the GC or the end of the trace say nothing about when their request
  // ended.
  auto served = [&](uint32_t tgid) {
    if (std::find(request_tgids_.begin(), request_tgids_.end(), tgid) == request_tgids_.end())
      request_tgids_.push_back(tgid);
    if (!timed_out) threads_.Account(tgid).RequestEnded(now_);
  };
  if (r.tgid) served(r.tgid);
  for (const model::Call& call : r.calls)
    if (call.peer_tgid && call.peer_tgid != r.tgid) served(call.peer_tgid);
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

void Extractor::Impl::AdvanceTo(uint64_t ts) {
  reorder_.AdvanceTo(ts);
  reorder::SortedRecord sr;
  while (reorder_.Pop(&sr)) Process(sr);
}

void Extractor::Impl::Finish() {
  reorder_.Flush();
  reorder::SortedRecord sr;
  while (reorder_.Pop(&sr)) Process(sr);
  if (messages_on()) MessagesFinish();
  if (calls_on()) CallsFinish();
  early_.DropAll();  // never used by a request
  blocks_.Finish(now_);
  // End of trace: whatever is still open is cut by the end of the trace.
  // A request still in progress keeps its process' window open to here.
  join_.FinishAll([&](Set& s) {
    if (s.seed && s.seed_tgid) threads_.Account(s.seed_tgid).RequestEnded(now_);
  });
  // Run time no event took, by when it began (a run that began inside the
  // process' window counts inside it, so that it lowers the accounted share
  // rather than hiding; one that began after the last request ended, such
  // as a worker left on CPU by a switch-out the capture lost, is outside),
  // and interrupt time charged to events that the interrupted task's run
  // never gave back (see cpu_irq_unapplied_ns).
  threads_.ForEachSlot([&](Thread& t) {
    if (!t.tid) return;
    if (t.on_cpu) threads_.ChargeRun(&t, now_);
    if (t.cpu_pending) {
      threads_.Account(&t).Unattributed(t.cpu_pending, t.pending_since);
    }
    t.cpu_pending = 0;
    if (t.irq_steal && std::find(request_tgids_.begin(), request_tgids_.end(), t.tgid) != request_tgids_.end())
      stats_.cpu_irq_unapplied_ns += t.irq_steal;
  });
  // Everything below is about the processes that served requests: the
  // capture follows other threads only where they meet those (their switch
  // into a traced thread is recorded, their switch back in is not), so
  // their counts say nothing about the capture.
  threads_.SumAccounts(request_tgids_, irq_charged_ns_);
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

void Extractor::SetConnectionSink(ConnectionSink sink) { impl_->SetConnectionSink(std::move(sink)); }
void Extractor::Push(const jdw_record_header* rec) { impl_->Push(rec); }
void Extractor::Push(const jdw_record_header* const* recs, size_t n) {
  Impl& impl = *impl_;
  for (size_t i = 0; i < n; i++) impl.Push(recs[i]);
}
void Extractor::Finish() { impl_->Finish(); }
void Extractor::AdvanceTo(uint64_t ts) { impl_->AdvanceTo(ts); }
const Stats& Extractor::stats() const { return impl_->stats(); }
uint64_t Extractor::late_records() const { return impl_->late_records(); }
void Extractor::AddLossIntervals(const std::vector<trace::LossInterval>& intervals) {
  impl_->AddLossIntervals(intervals);
}

}  // namespace jackdaw::join
