// A trace's packet records (net group), on the trace's own clock, and the
// IP/TCP/UDP headers they describe.
//
// The net probes keep what the join needs of each packet (5-tuple, TCP
// sequence numbers, lengths) but not its bytes. SynthesizeHeaders() rebuilds
// the headers from those fields so that tools that want packets (pcapng
// writers, Wireshark) see the addresses, ports, sequence numbers and lengths
// the kernel saw. What the record does not keep is not invented: TCP options
// are absent (a 20-byte TCP header), and the payload is not part of the
// capture (the pcapng original length still counts it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "jackdaw/abi.h"
#include "trace/trace_reader.h"

namespace jackdaw::pcap {

enum class Direction : uint8_t { kOut, kIn };  // net_xmit / net_recv

struct Packet {
  uint64_t mono_ns = 0;   // CLOCK_MONOTONIC of the recording machine
  uint64_t wall_ns = 0;   // CLOCK_REALTIME of the same instant
  uint16_t cpu = 0;
  uint16_t record_type = 0;  // JDW_EVENT_NET_XMIT / JDW_EVENT_NET_RECV
  Direction dir = Direction::kOut;
  jdw_net_packet net{};
};

// Every net_xmit/net_recv record of the trace, in time order.
std::vector<Packet> ReadPackets(const trace::TraceReader& reader);

// IPv4/IPv6 header followed by the TCP (20 bytes, no options) or UDP header
// of `p`; other transports get the IP header only. Returns the bytes;
// *ip_len receives the whole IP packet's length (headers + payload_len).
std::string SynthesizeHeaders(const jdw_net_packet& p, uint32_t* ip_len);

// "10.0.0.1:80" / "[::1]:80"
std::string FormatAddr(uint16_t family, const uint8_t* addr, uint16_t port);

}  // namespace jackdaw::pcap
