// A synthetic trace of processes talking over loopback TCP, for the join's
// tests of requests across processes: the socket calls, socket
// descriptions, switches and wake-ups the join reads, each a few ns after
// the one before. A test's own trace derives from it and names its
// processes and steps.
#pragma once

#include <cstdint>

#include "jackdaw/abi.h"
#include "join/endpoint_format.h"
#include "join/test_stream.h"

namespace jackdaw::join::testing {

class LoopbackTrace {
 public:
  void Enter(uint16_t cpu, uint32_t tgid, uint32_t tid, const char* sc, int32_t fd, uint64_t obj, uint64_t arg = 0) {
    s.SockEnterOf(t += 10, cpu, tgid, tid, sc, fd, obj, arg);
  }
  // Exits carry no object, as captured: the join takes the enter's.
  void Exit(uint16_t cpu, uint32_t tgid, uint32_t tid, const char* sc, int64_t ret, uint64_t obj = 0) {
    s.SockExitOf(t += 10, cpu, tgid, tid, sc, ret, obj);
  }
  // The socket `sk` is 127.0.0.1:lport <-> 127.0.0.1:rport.
  void Info(uint16_t cpu, uint32_t tgid, uint32_t tid, uint64_t sk, uint16_t lport, uint16_t rport) {
    jdw_sock_info b{};
    b.sk = sk;
    b.family = kAfInet;
    b.protocol = kIpProtoTcp;
    b.sport = lport;
    b.dport = rport;
    b.saddr[0] = b.daddr[0] = 127;
    b.saddr[3] = b.daddr[3] = 1;
    s.Add(JDW_EVENT_SOCK_INFO, t += 5, cpu, JDW_CTX_TASK, tgid, tid, b);
  }
  void Switch(uint16_t cpu, uint32_t prev, uint32_t prev_tgid, uint32_t next, uint32_t next_tgid, uint64_t state) {
    s.Switch(t += 10, cpu, prev, next, state, prev_tgid, next_tgid);
  }
  void Wake(uint16_t cpu, uint32_t waker, uint32_t waker_tgid, uint32_t wakee, uint32_t wakee_tgid) {
    jdw_sched_wakeup b{};
    b.wakee_tid = wakee;
    b.wakee_tgid = wakee_tgid;
    b.target_cpu = cpu;
    s.Add(JDW_EVENT_SCHED_WAKEUP, t += 5, cpu, JDW_CTX_TASK, waker_tgid, waker, b);
  }

  Stream s;
  uint64_t t = 1000;
};

}  // namespace jackdaw::join::testing
