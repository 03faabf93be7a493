// The vocabulary of the schema language: which event types a schema may
// name, which fields each one offers, and the named constants predicates may
// compare against.
//
// Kernel event types and their payload fields are generated from the ABI's
// X-macro tables (include/jackdaw/abi.h), so a new event or field becomes
// nameable in schemas without touching this file. On top of the raw records
// the catalog adds:
//  - synthetic event types derived from one record (a sched_switch is two
//    thread events: switch_out for prev and switch_in for next; a
//    block_complete carrying issue_ts yields io_start at the issue time),
//  - derived fields computed by the join from its own state (the socket
//    identity behind a packet's 5-tuple, the syscall a thread is in, ...).
// Every field reads as a u64 (signed fields sign-extended), which is also the
// type of join-attribute values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jackdaw::schema {

// What an event definition selects from the record stream.
enum class EventKind : uint8_t {
  kRecord,     // a kernel record, by event-table name
  kSwitchOut,  // synthetic: the switched-out (prev) side of sched_switch
  kSwitchIn,   // synthetic: the switched-in (next) side of sched_switch
  kIoStart,    // synthetic: block request start at issue_ts (from block_complete)
  kUsdt,       // an application probe, by provider:name
};

// How a field's value is obtained.
enum class FieldSource : uint8_t {
  kPayload,     // scalar in the payload at `offset`, `size` bytes
  kHeaderTid,   // record header tid (the interrupted task in irq context)
  kHeaderTgid,
  kHeaderCpu,
  kHeaderCtx,   // enum jdw_ctx
  kUsdtArg,     // jdw_usdt.args[index]
  kSock,        // socket identity (struct sock *): see catalog.cc
  kExitObj,     // sys_exit obj, else the matching sys_enter's
  kExitObjKind, // sys_exit obj_kind, else the matching sys_enter's
  kExitFd,      // sys_exit fd, else the matching sys_enter's
  kEnterArg,    // sys_exit: the matching sys_enter's arg
  kInSyscall,   // nr of the syscall the event's thread is inside, else -1
  kAfterBlock,  // switch_in: 1 if the thread's last switch-out was a block
  kNewSock,     // socket syscalls: 1 if the thread's previous socket syscall used another socket
  kBlocked,     // switch_out: 1 if prev_state != 0
  kNewMsg,      // sys_enter socket input whose previous data syscall on that socket was output
  kWakeeSyscall,  // sched_wakeup: nr of the syscall the wakee sleeps in, else -1
  kWakeeObj,      // sched_wakeup: that syscall's obj (futex uaddr, socket, ...)
  kWakeeArg,      // sched_wakeup: that syscall's arg (futex op, ...)
  kSockUsed,      // 1 if the event's thread made a socket syscall since it last woke from a sleep
  kBlockReason,   // switch_out: why it goes to sleep; switch_in: why it slept (BlockReason)
  kConnOpen,      // 1 if the thread's last socket read/write was on a socket it has not closed since
  kMsg,           // the message exchange the event belongs to (schemas with `messages`), 0 = the connection's
  kMsgStart,      // 1 if the event begins an exchange (the read returning its first inbound bytes)
  kCall,          // the call the event belongs to, on a connection the process opened (schemas with `messages`), else 0
  kCallStart,     // 1 if the event begins a call (the write of its first outbound bytes)
  kPeerCall,      // an exchange's start whose bytes a traced process's call sent: that call, else 0
  kWakeeServesConns,  // sched_wakeup: 1 if the wakee has read or written a socket in the trace
  kWakeeHandsBack,    // sched_wakeup: 1 if the wakee has woken a thread waiting in the middle of a connection
};

// What a sleeping thread waits for, judged from the syscall it sleeps in
// (the same split as the off-CPU accounting, model::BlockReason): `disk` for
// files, fsync, AIO; `network` for sockets, epoll/poll/select, accept,
// connect; `futex`; `pipe`; `other` for the rest, including sleeps outside
// any syscall (page faults, kernel locks). `none` when not asleep.
enum class BlockReasonValue : uint8_t { kNone, kDisk, kNetwork, kFutex, kPipe, kOther };

// What named constants a field's predicates may use.
enum class Domain : uint8_t { kNumber, kObjKind, kCtx, kSyscall, kBlockReason };

struct FieldSpec {
  std::string name;
  FieldSource source = FieldSource::kPayload;
  uint16_t offset = 0;  // kPayload: byte offset within the payload
  uint8_t size = 0;     // kPayload: 1, 2, 4 or 8
  bool is_signed = false;
  uint8_t index = 0;    // kUsdtArg
  Domain domain = Domain::kNumber;
};

struct EventTypeSpec {
  std::string name;          // "sys_enter", "switch_out", "usdt"
  EventKind kind = EventKind::kRecord;
  uint16_t record_type = 0;  // the jdw_event_type the events come from
  bool takes_syscalls = false;  // sys_enter / sys_exit accept a syscall list
  std::vector<FieldSpec> fields;

  const FieldSpec* FindField(std::string_view field) const;
  std::string FieldList() const;  // "tid, tgid, ..." for error messages
};

// Every nameable event type: kernel events in table order, then synthetic
// ones, then "usdt".
const std::vector<EventTypeSpec>& EventTypes();
const EventTypeSpec* FindEventType(std::string_view name);
std::string EventTypeList();

// x86-64 syscall names by number ("" where unused), from the uapi header at
// build time. Traces carry their own table; this one validates schemas.
const std::vector<std::string>& CompiledSyscallNames();
int CompiledSyscallNumber(std::string_view name);

// Named constants for predicates ("socket", "softirq", "futex", ...).
bool LookupConstant(Domain domain, std::string_view name, int64_t* value);
std::string ConstantList(Domain domain);

// Up to `n` of `choices` closest to `name` by edit distance (for "did you
// mean" hints).
std::vector<std::string> NearestNames(std::string_view name, const std::vector<std::string>& choices,
                                      size_t n);

}  // namespace jackdaw::schema
