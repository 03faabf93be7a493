// A minimal pcapng writer (IETF draft-ietf-opsawg-pcapng): one Section Header
// Block, one Interface Description Block per interface, Enhanced Packet
// Blocks. Timestamps in nanoseconds (if_tsresol = 9); each packet carries its
// direction (epb_flags) and, when it was truncated, its original length.
//
// Blocks are written as they come; Close() (or the destructor) flushes. An
// interface must be added before its first packet; ids count from 0 in the
// order AddInterface was called, as the format requires.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace jackdaw::pcap {

// Link types (tcpdump.org/linktypes.html).
inline constexpr uint16_t kLinkTypeRaw = 101;  // bare IPv4/IPv6 packets

class PcapngWriter {
 public:
  enum class Dir : uint8_t { kUnknown = 0, kInbound = 1, kOutbound = 2 };

  static StatusOr<std::unique_ptr<PcapngWriter>> Create(const std::string& path, std::string_view application);
  ~PcapngWriter();

  // Returns the interface id packets refer to.
  StatusOr<uint32_t> AddInterface(uint16_t link_type, uint32_t snaplen, std::string_view name);
  // `data` is what was captured; `orig_len` the packet's length on the wire
  // (>= data.size()).
  Status WritePacket(uint32_t interface_id, uint64_t wall_ns, std::string_view data, uint32_t orig_len, Dir dir);
  Status Close();

  uint64_t packets_written() const { return packets_; }

 private:
  PcapngWriter(FILE* f, std::string path) : f_(f), path_(std::move(path)) {}
  Status WriteBlock(uint32_t type, const std::string& body);

  FILE* f_;
  std::string path_;
  uint32_t interfaces_ = 0;
  uint64_t packets_ = 0;
};

}  // namespace jackdaw::pcap
