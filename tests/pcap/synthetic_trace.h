// A one-record trace written through the real writer, for tests that need
// a trace file but not a recording: one received TCP packet (10.0.0.1:1234
// to port 80) when `with_packet`, else one syscall entry; at `ts` on CPU 0.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "jackdaw/abi.h"
#include "trace/trace_writer.h"

namespace jackdaw::testing {

inline void WriteOneRecordTrace(const std::string& path, bool with_packet, uint64_t ts = 1000) {
  nlohmann::json header = {{"format", "jdw"}, {"abi_version", JDW_ABI_VERSION}, {"ncpus", 1}, {"host", "h"},
                           {"kernel", "k"},   {"timebase", "mono_ns"}};
  auto w = trace::TraceWriter::Create(path, header);
  ASSERT_TRUE(w.ok()) << w.status().message();
  if (with_packet) {
    jdw_net_packet_record r{};
    r.hdr.ts = ts;
    r.hdr.type = JDW_EVENT_NET_RECV;
    r.hdr.size = sizeof(r);
    r.body.family = 2;
    r.body.protocol = 6;
    r.body.sport = 1234;
    r.body.dport = 80;
    r.body.payload_len = 10;
    ASSERT_TRUE((*w)->WriteRecords(0, reinterpret_cast<const uint8_t*>(&r), sizeof(r), 1).ok());
  } else {
    jdw_sys_enter_record r{};
    r.hdr.ts = ts;
    r.hdr.type = JDW_EVENT_SYS_ENTER;
    r.hdr.size = sizeof(r);
    ASSERT_TRUE((*w)->WriteRecords(0, reinterpret_cast<const uint8_t*>(&r), sizeof(r), 1).ok());
  }
  ASSERT_TRUE((*w)->Finish(nlohmann::json::object()).ok());
}

}  // namespace jackdaw::testing
