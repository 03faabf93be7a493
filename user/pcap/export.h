// jackdaw export --pcap: a trace's packet records as a pcapng file.
//
// One pcapng interface per (ifindex) seen in the trace, link type RAW (the
// records start at the IP header). Each packet is its synthesized IP and
// TCP/UDP headers (packets.h) stamped with the recording machine's wall
// clock; its original length is the IP packet's (headers + payload) and its
// direction is the probe's (net_xmit outbound, net_recv inbound). A packet
// crossing loopback is seen twice, once each way, as tcpdump -i lo shows it.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "trace/trace_reader.h"

namespace jackdaw::pcap {

struct ExportStats {
  uint64_t packets = 0;
  uint64_t interfaces = 0;
};

// A trace without packets writes nothing (out_path is left as it was).
StatusOr<ExportStats> ExportPcapng(const trace::TraceReader& reader, const std::string& out_path);

}  // namespace jackdaw::pcap
