// USDT probes of jackdaw-testserver, provider "jackdaw_ts". See
// README-probes.md for the table (thread, arguments, when). Each expands to
// one nop plus a .note.stapsdt entry; there are no semaphores, because every
// argument is already in a register, so an unattached probe costs a nop.
//
// The first argument is always the request id (u64), or 0 where the request
// is not parsed yet, so a schema can join every thread of one request.
#pragma once

#include <sys/sdt.h>

#include <cstdint>

#define JDW_TS_PROBE1(name, req_id) STAP_PROBE1(jackdaw_ts, name, static_cast<uint64_t>(req_id))
#define JDW_TS_PROBE2(name, req_id, a1) \
  STAP_PROBE2(jackdaw_ts, name, static_cast<uint64_t>(req_id), a1)
#define JDW_TS_PROBE3(name, req_id, a1, a2) \
  STAP_PROBE3(jackdaw_ts, name, static_cast<uint64_t>(req_id), a1, a2)
