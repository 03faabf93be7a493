#include "pcap/packets.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "trace/event_table.h"

namespace jackdaw::pcap {
namespace {

constexpr uint8_t kTcp = 6, kUdp = 17;
constexpr uint16_t kAfInet = 2, kAfInet6 = 10;

void Put16(std::string& s, size_t at, uint16_t v) {
  s[at] = static_cast<char>(v >> 8);
  s[at + 1] = static_cast<char>(v);
}
void Put32(std::string& s, size_t at, uint32_t v) {
  Put16(s, at, static_cast<uint16_t>(v >> 16));
  Put16(s, at + 2, static_cast<uint16_t>(v));
}

uint16_t Ipv4Checksum(const std::string& s, size_t at, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i < len; i += 2)
    sum += (static_cast<uint8_t>(s[at + i]) << 8) | static_cast<uint8_t>(s[at + i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace

std::vector<Packet> ReadPackets(const trace::TraceReader& reader) {
  std::vector<Packet> out;
  const trace::TimeConverter& time = reader.meta().time;
  reader.ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_NET_XMIT && h.type != JDW_EVENT_NET_RECV) return;
    if (h.size < sizeof(jdw_net_packet_record)) return;  // short record: not a packet we can describe
    Packet p;
    p.mono_ns = time.ToMonoNs(h.ts);
    p.wall_ns = time.clock.MonoToWall(p.mono_ns);
    p.cpu = h.cpu;
    p.record_type = h.type;
    p.dir = h.type == JDW_EVENT_NET_XMIT ? Direction::kOut : Direction::kIn;
    memcpy(&p.net, trace::Payload(h), sizeof(p.net));
    out.push_back(p);
  });
  std::stable_sort(out.begin(), out.end(), [](const Packet& a, const Packet& b) { return a.mono_ns < b.mono_ns; });
  return out;
}

std::string SynthesizeHeaders(const jdw_net_packet& p, uint32_t* ip_len) {
  const bool v6 = p.family == kAfInet6;
  const size_t ip_hdr = v6 ? 40 : 20;
  const size_t l4_hdr = p.protocol == kTcp ? 20 : p.protocol == kUdp ? 8 : 0;
  std::string s(ip_hdr + l4_hdr, '\0');
  const uint32_t total = static_cast<uint32_t>(ip_hdr + l4_hdr) + (l4_hdr ? p.payload_len : 0);
  *ip_len = total;
  if (v6) {
    s[0] = 0x60;
    Put16(s, 4, static_cast<uint16_t>(std::min<uint32_t>(total - 40, 0xffff)));
    s[6] = static_cast<char>(p.protocol);
    s[7] = 64;
    memcpy(&s[8], p.saddr, 16);
    memcpy(&s[24], p.daddr, 16);
  } else {
    s[0] = 0x45;
    Put16(s, 2, static_cast<uint16_t>(std::min<uint32_t>(total, 0xffff)));
    Put16(s, 6, 0x4000);  // DF
    s[8] = 64;
    s[9] = static_cast<char>(p.protocol);
    memcpy(&s[12], p.saddr, 4);
    memcpy(&s[16], p.daddr, 4);
    Put16(s, 10, Ipv4Checksum(s, 0, 20));
  }
  const size_t l4 = ip_hdr;
  if (p.protocol == kTcp) {
    Put16(s, l4, p.sport);
    Put16(s, l4 + 2, p.dport);
    Put32(s, l4 + 4, p.seq);
    Put32(s, l4 + 8, p.ack);
    s[l4 + 12] = 5 << 4;  // data offset: 20 bytes (options are not recorded)
    s[l4 + 13] = static_cast<char>(p.tcp_flags);
    Put16(s, l4 + 14, 0xffff);  // window: not recorded
  } else if (p.protocol == kUdp) {
    Put16(s, l4, p.sport);
    Put16(s, l4 + 2, p.dport);
    Put16(s, l4 + 4, static_cast<uint16_t>(std::min<uint32_t>(8 + p.payload_len, 0xffff)));
  }
  return s;
}

std::string FormatAddr(uint16_t family, const uint8_t* addr, uint16_t port) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (family == kAfInet) inet_ntop(AF_INET, addr, buf, sizeof(buf));
  else if (family == kAfInet6) inet_ntop(AF_INET6, addr, buf, sizeof(buf));
  if (family == kAfInet6) return std::string("[") + buf + "]:" + std::to_string(port);
  return std::string(buf) + ":" + std::to_string(port);
}

}  // namespace jackdaw::pcap
