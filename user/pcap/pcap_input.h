// libpcap as a packet source: live capture on an interface (jackdaw record
// --pcap-iface IFACE) and pcap/pcapng files, possibly from another machine
// (jackdaw analyze --pcap-input FILE). Either way each captured packet
// becomes a net record in the trace's ABI (jdw_net_packet_record), so the join takes
// it exactly like a packet from the net probes: by its 5-tuple, through the
// connection it belongs to.
//
// Time: libpcap stamps packets with the wall clock (CLOCK_REALTIME). A live
// capture converts them to CLOCK_MONOTONIC with the recording's own
// (wall - mono) difference, read when each batch is taken; a file converts
// with the trace's recorded difference (TraceMeta clock) plus an optional
// offset between the other machine's wall clock and this one's.
//
// Direction: Linux "cooked" captures (SLL/SLL2, what -i any gives) say
// whether a packet was outgoing. Other link types do not. A file's packet is
// then taken as sent (net_xmit) when its source is a local end of one of the
// trace's sockets (sock_info records), received otherwise. A live packet is
// sent when its source address is one of this machine's, received when its
// destination is, and both when both are (loopback: the net probes, too, see
// such a packet leave and arrive).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "jackdaw/abi.h"
#include "trace/trace_reader.h"

typedef struct pcap pcap_t;

namespace jackdaw::pcap {

// One captured frame, parsed. nullopt: not IPv4/IPv6, or too short.
// `outgoing`: -1 unknown, 0 in, 1 out (from SLL/SLL2).
struct ParsedFrame {
  jdw_net_packet net{};
  int outgoing = -1;
};
std::optional<ParsedFrame> ParseFrame(int link_type, const uint8_t* data, uint32_t caplen, uint32_t wire_len);

// Local endpoints ("addr:port" as FormatAddr spells them) of the trace's
// sockets: the direction of packets whose capture does not say.
std::set<std::string> LocalEndpoints(const trace::TraceReader& reader);

struct PcapFileStats {
  uint64_t frames = 0;
  uint64_t packets = 0;  // IP frames, converted
  uint64_t link_type = 0;
};

// A pcap or pcapng file read a packet at a time, each IP packet as a net
// record on the trace's timebase: a capture far larger than memory streams
// through `jackdaw analyze --pcap-input`. wall_offset_ns: the capturing machine's
// wall clock minus this one's.
class PcapFileReader {
 public:
  static StatusOr<std::unique_ptr<PcapFileReader>> Open(const std::string& path, const trace::TraceReader& reader,
                                                        int64_t wall_offset_ns);
  ~PcapFileReader();
  // The next IP packet; nullopt at the end of the file or at a read error
  // (then error() says which).
  std::optional<jdw_net_packet_record> Next();
  const Status& error() const { return error_; }
  const PcapFileStats& stats() const { return stats_; }

 private:
  PcapFileReader() = default;
  std::string path_;
  pcap_t* pcap_ = nullptr;
  int link_type_ = 0;
  std::set<std::string> locals_;
  const trace::TimeConverter* time_ = nullptr;
  int64_t wall_offset_ns_ = 0;
  PcapFileStats stats_;
  Status error_;
};

// The whole file at once (PcapFileReader to the end).
StatusOr<std::vector<jdw_net_packet_record>> ReadPcapFile(const std::string& path, const trace::TraceReader& reader,
                                                          int64_t wall_offset_ns, PcapFileStats* stats);

// Live capture on one interface ("any" for all), nonblocking.
class LiveCapture {
 public:
  static StatusOr<std::unique_ptr<LiveCapture>> Open(const std::string& iface);
  ~LiveCapture();
  // Takes what is buffered; each packet as a record stamped in
  // CLOCK_MONOTONIC ns (the BPF backend's timebase).
  Status Poll(const std::function<void(const jdw_net_packet_record&)>& sink);
  uint64_t packets() const { return packets_; }
  // Packets the kernel dropped for this capture (pcap_stats).
  uint64_t kernel_drops() const;

 private:
  LiveCapture() = default;
  pcap_t* pcap_ = nullptr;
  int link_type_ = 0;
  std::set<std::string> local_addrs_;  // this machine's addresses (16 bytes, IPv4 in the first 4)
  uint64_t packets_ = 0;
  std::string iface_;
};

}  // namespace jackdaw::pcap
