// The TCP data each request fragment sent and received, from the packets the
// join attributed to it.
//
// A fragment is one request extracted from one machine's trace (join stage).
// The join charges a packet to the request whose connection it belongs to,
// and leaves a request event at the packet's record (same timestamp, CPU and
// type); matching those events back to the trace's packet records gives each
// fragment its segments: directional 5-tuple, TCP sequence range, the
// machine's own time. Only segments that carry data are kept (a bare ACK
// names no bytes), and only those whose direction agrees with one of the
// fragment's connections as this machine sees it (the source is the local
// end of a sent segment, the destination the local end of a received one):
// on a host where both ends of a link are visible (a veth pair, loopback) a
// packet is recorded leaving one end and arriving at the other, and only the
// sighting at the fragment's own end says what this fragment did.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "request/request.h"
#include "pcap/packets.h"

namespace jackdaw::stitch {

// One direction of a TCP connection.
struct Flow {
  uint16_t family = 0;
  uint16_t sport = 0, dport = 0;
  std::array<uint8_t, 16> saddr{}, daddr{};
  auto operator<=>(const Flow&) const = default;
  Flow Reversed() const { return Flow{family, dport, sport, daddr, saddr}; }
  std::string ToString() const;  // "10.0.0.1:4567->10.0.0.2:80"
};

struct Segment {
  Flow flow;
  uint32_t seq = 0;  // first sequence number
  uint32_t len = 0;  // payload bytes
  uint64_t mono_ns = 0;  // this machine's clock
  pcap::Direction dir = pcap::Direction::kOut;
  uint32_t event = 0;  // index into the fragment's Request::events
};

struct AttributionStats {
  uint64_t packet_events = 0;     // net events in requests
  uint64_t unmatched_events = 0;  // no packet record at their instant
  uint64_t data_segments = 0;     // kept
  uint64_t other_end = 0;         // the far end's sighting of a packet (dropped)
};

// segments[i] belongs to requests[i]. `packets` as pcap::ReadPackets gives them.
std::vector<std::vector<Segment>> AttributeSegments(std::span<const model::Request> requests,
                                                    std::span<const pcap::Packet> packets,
                                                    AttributionStats* stats);

}  // namespace jackdaw::stitch
