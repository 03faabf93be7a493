// Builds record streams in memory for the join's tests and benchmark, with
// the exact layouts of include/jackdaw/abi.h. Records live in one arena that
// never moves them (chunked), so pointers stay valid as the stream grows.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jackdaw/abi.h"
#include "schema/catalog.h"
#include "trace/clock.h"
#include "trace/trace_reader.h"

namespace jackdaw::join::testing {

class Stream {
 public:
  Stream() {
    meta_.syscall_names = schema::CompiledSyscallNames();
    meta_.ncpus = 4;
  }

  trace::TraceMeta& meta() { return meta_; }
  const std::vector<const jdw_record_header*>& records() const { return records_; }
  void Clear() {
    records_.clear();
    arenas_.clear();
    used_ = kArena;
  }

  // USDT probe id for "provider:name", registered on first use.
  uint32_t Probe(const std::string& name) {
    for (size_t i = 0; i < meta_.app_probes.size(); i++)
      if (meta_.app_probes[i] == name) return static_cast<uint32_t>(i);
    meta_.app_probes.push_back(name);
    return static_cast<uint32_t>(meta_.app_probes.size() - 1);
  }
  static int Nr(const char* name) { return schema::CompiledSyscallNumber(name); }

  template <typename Body>
  const jdw_record_header* Add(uint16_t type, uint64_t ts, uint16_t cpu, uint8_t ctx, uint32_t tgid, uint32_t tid,
                               const Body& body) {
    const size_t size = sizeof(jdw_record_header) + sizeof(Body);
    uint8_t* p = Alloc(size);
    jdw_record_header h{};
    h.ts = ts;
    h.type = type;
    h.size = static_cast<uint16_t>(size);
    h.cpu = cpu;
    h.ctx = ctx;
    h.tgid = tgid;
    h.tid = tid;
    memcpy(p, &h, sizeof(h));
    memcpy(p + sizeof(h), &body, sizeof(Body));
    records_.push_back(reinterpret_cast<const jdw_record_header*>(p));
    return records_.back();
  }

  // --- one helper per record kind; tgid defaults to kTgid
  static constexpr uint32_t kTgid = 1000;

  // A run of `tid`'s calls left out of the head sample, the last at `ts`.
  void SampleGap(uint64_t ts, uint16_t cpu, uint32_t tid, uint64_t from, uint32_t skipped) {
    jdw_sample_gap g{};
    g.from = from;
    g.skipped = skipped;
    Add(JDW_EVENT_SAMPLE_GAP, ts, cpu, JDW_CTX_TASK, kTgid, tid, g);
  }

  void Switch(uint64_t ts, uint16_t cpu, uint32_t prev, uint32_t next, uint64_t prev_state,
              uint32_t prev_tgid = kTgid, uint32_t next_tgid = kTgid) {
    jdw_sched_switch b{};
    b.prev_tid = prev;
    b.prev_tgid = prev ? prev_tgid : 0;
    b.next_tid = next;
    b.next_tgid = next ? next_tgid : 0;
    b.prev_state = prev_state;
    Add(JDW_EVENT_SCHED_SWITCH, ts, cpu, JDW_CTX_TASK, b.prev_tgid, prev, b);
  }
  void Wakeup(uint64_t ts, uint16_t cpu, uint32_t waker, uint32_t wakee, uint8_t ctx = JDW_CTX_TASK) {
    jdw_sched_wakeup b{};
    b.wakee_tid = wakee;
    b.wakee_tgid = kTgid;
    b.target_cpu = cpu;
    Add(JDW_EVENT_SCHED_WAKEUP, ts, cpu, ctx, waker ? kTgid : 0, waker, b);
  }
  void SysEnter(uint64_t ts, uint16_t cpu, uint32_t tid, const char* sc, int32_t fd = -1,
                uint8_t obj_kind = JDW_OBJ_NONE, uint64_t obj = 0, uint64_t arg = 0) {
    jdw_sys_enter b{};
    b.nr = static_cast<uint16_t>(Nr(sc));
    b.obj_kind = obj_kind;
    b.fd = fd;
    b.arg = arg;
    b.obj = obj;
    Add(JDW_EVENT_SYS_ENTER, ts, cpu, JDW_CTX_TASK, kTgid, tid, b);
  }
  void SysExit(uint64_t ts, uint16_t cpu, uint32_t tid, const char* sc, int64_t ret, uint8_t obj_kind = 0,
               uint64_t obj = 0) {
    jdw_sys_exit b{};
    b.nr = static_cast<uint16_t>(Nr(sc));
    b.ret = ret;
    b.obj_kind = obj_kind;
    b.obj = obj;
    b.fd = obj ? static_cast<int32_t>(ret) : -1;
    Add(JDW_EVENT_SYS_EXIT, ts, cpu, JDW_CTX_TASK, kTgid, tid, b);
  }
  // A socket syscall of a thread of process `tgid` (several processes in
  // one trace): the object is the socket when `obj` is given, else none.
  void SockEnterOf(uint64_t ts, uint16_t cpu, uint32_t tgid, uint32_t tid, const char* sc, int32_t fd, uint64_t obj,
                   uint64_t arg = 0) {
    jdw_sys_enter b{};
    b.nr = static_cast<uint16_t>(Nr(sc));
    b.obj_kind = obj ? JDW_OBJ_SOCKET : JDW_OBJ_NONE;
    b.fd = fd;
    b.arg = arg;
    b.obj = obj;
    Add(JDW_EVENT_SYS_ENTER, ts, cpu, JDW_CTX_TASK, tgid, tid, b);
  }
  void SockExitOf(uint64_t ts, uint16_t cpu, uint32_t tgid, uint32_t tid, const char* sc, int64_t ret,
                  uint64_t obj = 0) {
    jdw_sys_exit b{};
    b.nr = static_cast<uint16_t>(Nr(sc));
    b.ret = ret;
    b.obj_kind = obj ? JDW_OBJ_SOCKET : JDW_OBJ_NONE;
    b.obj = obj;
    b.fd = obj ? static_cast<int32_t>(ret) : -1;
    Add(JDW_EVENT_SYS_EXIT, ts, cpu, JDW_CTX_TASK, tgid, tid, b);
  }
  void Usdt(uint64_t ts, uint16_t cpu, uint32_t tid, const std::string& probe, uint64_t a0, uint64_t a1 = 0,
            uint64_t a2 = 0) {
    jdw_usdt b{};
    b.probe_id = Probe(probe);
    b.nargs = 3;
    b.args[0] = a0;
    b.args[1] = a1;
    b.args[2] = a2;
    Add(JDW_EVENT_USDT, ts, cpu, JDW_CTX_TASK, kTgid, tid, b);
  }
  // IPv4 127.0.0.1 both ends.
  void SockInfo(uint64_t ts, uint16_t cpu, uint32_t tid, uint64_t sk, uint16_t lport, uint16_t rport) {
    jdw_sock_info b{};
    b.sk = sk;
    b.family = 2;
    b.protocol = 6;
    b.sport = lport;
    b.dport = rport;
    b.saddr[0] = b.daddr[0] = 127;
    b.saddr[3] = b.daddr[3] = 1;
    Add(JDW_EVENT_SOCK_INFO, ts, cpu, JDW_CTX_TASK, kTgid, tid, b);
  }
  void Packet(uint16_t type, uint64_t ts, uint16_t cpu, uint8_t ctx, uint32_t interrupted_tid, uint64_t sk,
              uint16_t sport, uint16_t dport, uint32_t len) {
    jdw_net_packet b{};
    b.ifindex = 1;
    b.len = len;
    b.sk = sk;
    b.family = 2;
    b.protocol = 6;
    b.sport = sport;
    b.dport = dport;
    b.payload_len = len > 52 ? len - 52 : 0;
    // Each direction's bytes numbered on from 1, as TCP does (from its
    // initial sequence number): the join counts a byte seen twice once.
    uint32_t& next = next_seq_[uint32_t(sport) << 16 | dport];
    b.seq = next + 1;
    next += b.payload_len;
    b.saddr[0] = b.daddr[0] = 127;
    b.saddr[3] = b.daddr[3] = 1;
    Add(type, ts, cpu, ctx, interrupted_tid ? 4242 : 0, interrupted_tid, b);
  }
  // Sets the TCP flags of the last record, a packet (0x08: PSH).
  void PacketFlags(uint8_t flags) {
    auto* h = const_cast<jdw_record_header*>(records_.back());  // the arena is ours
    reinterpret_cast<jdw_net_packet*>(h + 1)->tcp_flags = flags;
  }
  // Sets the TCP sequence number of the last record, a packet.
  void PacketSeq(uint32_t seq) {
    auto* h = const_cast<jdw_record_header*>(records_.back());  // the arena is ours
    reinterpret_cast<jdw_net_packet*>(h + 1)->seq = seq;
  }
  // Sets the TLS record summary of the last record, a read's sys_exit.
  void ExitPeek(uint8_t peek) {
    auto* h = const_cast<jdw_record_header*>(records_.back());  // the arena is ours
    reinterpret_cast<jdw_sys_exit*>(h + 1)->peek = peek;
  }
  // header_tid: the task the completion ran in (0: none, e.g. the idle task
  // under a hardirq); with task context it is some unrelated running thread.
  void BlockComplete(uint64_t ts, uint16_t cpu, uint8_t ctx, uint64_t rq, uint32_t bytes, uint64_t issue_ts,
                     uint32_t issue_tid, uint32_t header_tid = 0, uint32_t header_tgid = 0) {
    jdw_block_complete b{};
    b.dev = 8;
    b.op = 0;  // read
    b.bytes = bytes;
    b.rq = rq;
    b.issue_ts = issue_ts;
    b.issue_tid = issue_tid;
    b.issue_tgid = kTgid;
    Add(JDW_EVENT_BLOCK_COMPLETE, ts, cpu, ctx, header_tgid, header_tid, b);
  }

  // A crafted trace: every tgid, in headers and payloads, set to 0 (as a
  // capture that could not read them, or a hostile file, would give).
  void ZeroTgids() {
    for (const jdw_record_header* cr : records_) {
      auto* h = const_cast<jdw_record_header*>(cr);  // the arena is ours
      h->tgid = 0;
      uint8_t* body = reinterpret_cast<uint8_t*>(h + 1);
      switch (h->type) {
        case JDW_EVENT_SCHED_SWITCH:
          reinterpret_cast<jdw_sched_switch*>(body)->prev_tgid = 0;
          reinterpret_cast<jdw_sched_switch*>(body)->next_tgid = 0;
          break;
        case JDW_EVENT_SCHED_WAKEUP:
        case JDW_EVENT_SCHED_WAKEUP_NEW:
          reinterpret_cast<jdw_sched_wakeup*>(body)->wakee_tgid = 0;
          break;
        case JDW_EVENT_BLOCK_COMPLETE:
          reinterpret_cast<jdw_block_complete*>(body)->issue_tgid = 0;
          break;
        default:
          break;
      }
    }
  }

 private:
  static constexpr size_t kArena = 1 << 20;
  uint8_t* Alloc(size_t n) {
    n = (n + 7) & ~size_t{7};
    if (used_ + n > kArena) {
      arenas_.emplace_back(new uint64_t[kArena / 8]);
      used_ = 0;
    }
    uint8_t* p = reinterpret_cast<uint8_t*>(arenas_.back().get()) + used_;
    used_ += n;
    return p;
  }

  trace::TraceMeta meta_;
  std::vector<std::unique_ptr<uint64_t[]>> arenas_;
  size_t used_ = kArena;
  std::vector<const jdw_record_header*> records_;
  std::map<uint32_t, uint32_t> next_seq_;  // (sport, dport) -> payload bytes so far
};

}  // namespace jackdaw::join::testing
