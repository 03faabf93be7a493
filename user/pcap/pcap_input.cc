#include "pcap/pcap_input.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <time.h>

#include <cstring>

#include "pcap/packets.h"
#include "trace/event_table.h"

namespace jackdaw::pcap {
namespace {

constexpr uint16_t kEthIp = 0x0800, kEthIp6 = 0x86dd, kEthVlan = 0x8100;
constexpr uint8_t kPacketOutgoing = 4;  // linux/if_packet.h PACKET_OUTGOING

uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t Be32(const uint8_t* p) { return (uint32_t{Be16(p)} << 16) | Be16(p + 2); }

// Fills the IP and transport fields from the IP header at l3.
bool ParseIp(const uint8_t* l3, uint32_t len, jdw_net_packet* p) {
  if (len < 1) return false;
  uint32_t l4_off = 0, ip_len = 0;
  if ((l3[0] >> 4) == 4) {
    if (len < 20) return false;
    p->family = 2;
    p->protocol = l3[9];
    l4_off = (l3[0] & 0xf) * 4u;
    ip_len = Be16(l3 + 2);
    memcpy(p->saddr, l3 + 12, 4);
    memcpy(p->daddr, l3 + 16, 4);
  } else if ((l3[0] >> 4) == 6) {
    if (len < 40) return false;
    p->family = 10;
    p->protocol = l3[6];  // extension headers are not followed (as in the net probes)
    l4_off = 40;
    ip_len = Be16(l3 + 4) + 40u;
    memcpy(p->saddr, l3 + 8, 16);
    memcpy(p->daddr, l3 + 24, 16);
  } else {
    return false;
  }
  const uint8_t* l4 = l3 + l4_off;
  const uint32_t l4_len = len > l4_off ? len - l4_off : 0;
  if (p->protocol == 6 && l4_len >= 20) {
    p->sport = Be16(l4);
    p->dport = Be16(l4 + 2);
    p->seq = Be32(l4 + 4);
    p->ack = Be32(l4 + 8);
    p->tcp_flags = l4[13];
    const uint32_t hdr = l4_off + (l4[12] >> 4) * 4u;
    p->payload_len = ip_len > hdr ? ip_len - hdr : 0;
  } else if (p->protocol == 17 && l4_len >= 8) {
    p->sport = Be16(l4);
    p->dport = Be16(l4 + 2);
    p->payload_len = Be16(l4 + 4) > 8 ? Be16(l4 + 4) - 8u : 0;
  }
  return true;
}

uint64_t ClockNs(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

jdw_net_packet_record MakeRecord(const ParsedFrame& f, uint64_t ts, bool outgoing) {
  jdw_net_packet_record r{};
  r.hdr.ts = ts;
  r.hdr.type = outgoing ? JDW_EVENT_NET_XMIT : JDW_EVENT_NET_RECV;
  r.hdr.size = sizeof(r);
  r.hdr.ctx = JDW_CTX_SOFTIRQ;  // no task: the join joins it by its 5-tuple only
  r.body = f.net;
  return r;
}

}  // namespace

std::optional<ParsedFrame> ParseFrame(int link_type, const uint8_t* d, uint32_t caplen, uint32_t wire_len) {
  ParsedFrame f;
  f.net.len = wire_len;
  uint32_t off = 0;
  uint16_t proto = 0;
  switch (link_type) {
    case DLT_RAW:
    case 228:  // LINKTYPE_IPV4
    case 229:  // LINKTYPE_IPV6
      break;
    case DLT_EN10MB:
      if (caplen < 14) return std::nullopt;
      proto = Be16(d + 12);
      off = 14;
      if (proto == kEthVlan && caplen >= 18) {
        proto = Be16(d + 16);
        off = 18;
      }
      if (proto != kEthIp && proto != kEthIp6) return std::nullopt;
      break;
    case DLT_LINUX_SLL:
      if (caplen < 16) return std::nullopt;
      f.outgoing = Be16(d) == kPacketOutgoing;
      proto = Be16(d + 14);
      off = 16;
      if (proto != kEthIp && proto != kEthIp6) return std::nullopt;
      break;
    case DLT_LINUX_SLL2:
      if (caplen < 20) return std::nullopt;
      proto = Be16(d);
      f.net.ifindex = Be32(d + 4);
      f.outgoing = d[10] == kPacketOutgoing;
      off = 20;
      if (proto != kEthIp && proto != kEthIp6) return std::nullopt;
      break;
    case DLT_NULL:
    case DLT_LOOP:
      if (caplen < 4) return std::nullopt;
      off = 4;
      break;
    default:
      return std::nullopt;
  }
  if (off > caplen || !ParseIp(d + off, caplen - off, &f.net)) return std::nullopt;
  return f;
}

std::set<std::string> LocalEndpoints(const trace::TraceReader& reader) {
  std::set<std::string> out;
  reader.ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_SOCK_INFO || h.size < sizeof(jdw_sock_info_record)) return;
    jdw_sock_info s;
    memcpy(&s, trace::Payload(h), sizeof(s));
    out.insert(FormatAddr(s.family, s.saddr, s.sport));
  });
  return out;
}

StatusOr<std::unique_ptr<PcapFileReader>> PcapFileReader::Open(const std::string& path,
                                                               const trace::TraceReader& reader,
                                                               int64_t wall_offset_ns) {
  char err[PCAP_ERRBUF_SIZE] = "";
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  if (!p) return ErrStatus("--pcap-input %s: %s", path.c_str(), err);
  std::unique_ptr<PcapFileReader> r(new PcapFileReader());
  r->path_ = path;
  r->pcap_ = p;
  r->link_type_ = pcap_datalink(p);
  r->stats_.link_type = static_cast<uint64_t>(r->link_type_);
  r->locals_ = LocalEndpoints(reader);
  r->time_ = &reader.meta().time;
  r->wall_offset_ns_ = wall_offset_ns;
  return r;
}

PcapFileReader::~PcapFileReader() {
  if (pcap_) pcap_close(pcap_);
}

std::optional<jdw_net_packet_record> PcapFileReader::Next() {
  pcap_pkthdr* h;
  const u_char* d;
  int rc;
  while (pcap_ && (rc = pcap_next_ex(pcap_, &h, &d)) == 1) {
    stats_.frames++;
    std::optional<ParsedFrame> f = ParseFrame(link_type_, d, h->caplen, h->len);
    if (!f) continue;
    bool out_dir = f->outgoing == 1;
    if (f->outgoing < 0) out_dir = locals_.count(FormatAddr(f->net.family, f->net.saddr, f->net.sport)) > 0;
    const uint64_t wall = uint64_t(h->ts.tv_sec) * 1'000'000'000 + uint64_t(h->ts.tv_usec) - wall_offset_ns_;
    const uint64_t mono = wall - static_cast<uint64_t>(time_->clock.wall_minus_mono_ns);
    stats_.packets++;
    return MakeRecord(*f, time_->base == trace::Timebase::kTsc ? time_->clock.MonoToTsc(mono) : mono, out_dir);
  }
  if (pcap_ && rc == -1) error_ = ErrStatus("--pcap-input %s: %s", path_.c_str(), pcap_geterr(pcap_));
  if (pcap_) pcap_close(pcap_);
  pcap_ = nullptr;
  return std::nullopt;
}

StatusOr<std::vector<jdw_net_packet_record>> ReadPcapFile(const std::string& path, const trace::TraceReader& reader,
                                                          int64_t wall_offset_ns, PcapFileStats* stats) {
  ASSIGN_OR_RETURN(auto file, PcapFileReader::Open(path, reader, wall_offset_ns));
  std::vector<jdw_net_packet_record> out;
  while (std::optional<jdw_net_packet_record> r = file->Next()) out.push_back(*r);
  RETURN_IF_ERROR(file->error());
  if (stats) *stats = file->stats();
  return out;
}

StatusOr<std::unique_ptr<LiveCapture>> LiveCapture::Open(const std::string& iface) {
  char err[PCAP_ERRBUF_SIZE] = "";
  pcap_t* p = pcap_create(iface.c_str(), err);
  if (!p) return ErrStatus("--pcap-iface %s: %s", iface.c_str(), err);
  std::unique_ptr<LiveCapture> c(new LiveCapture());
  c->pcap_ = p;
  c->iface_ = iface;
  // Headers are all the join needs: IP + TCP with options fit in 128 bytes
  // after a cooked header.
  pcap_set_snaplen(p, 160);
  pcap_set_immediate_mode(p, 1);
  pcap_set_buffer_size(p, 8 << 20);
  pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO);
  const int rc = pcap_activate(p);
  if (rc < 0) {
    return ErrStatus("--pcap-iface %s: %s (list interfaces with: ip link)", iface.c_str(),
                     rc == PCAP_ERROR_NO_SUCH_DEVICE ? "no such interface" : pcap_geterr(p));
  }
  // Cooked headers carry the direction and the ifindex.
  if (pcap_set_datalink(p, DLT_LINUX_SLL2) != 0) (void)pcap_set_datalink(p, DLT_LINUX_SLL);
  c->link_type_ = pcap_datalink(p);
  ifaddrs* ifa = nullptr;
  if (getifaddrs(&ifa) == 0) {
    for (ifaddrs* i = ifa; i; i = i->ifa_next) {
      std::string a(16, '\0');
      if (!i->ifa_addr) continue;
      if (i->ifa_addr->sa_family == AF_INET)
        memcpy(a.data(), &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, 4);
      else if (i->ifa_addr->sa_family == AF_INET6)
        memcpy(a.data(), &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, 16);
      else
        continue;
      c->local_addrs_.insert(a);
    }
    freeifaddrs(ifa);
  }
  if (pcap_setnonblock(p, 1, err) != 0) return ErrStatus("--pcap-iface %s: %s", iface.c_str(), err);
  return c;
}

LiveCapture::~LiveCapture() {
  if (pcap_) pcap_close(pcap_);
}

Status LiveCapture::Poll(const std::function<void(const jdw_net_packet_record&)>& sink) {
  // One (wall - mono) reading per batch: the batch spans milliseconds, the
  // clocks' difference changes by NTP slew only.
  const int64_t wall_minus_mono = static_cast<int64_t>(ClockNs(CLOCK_REALTIME) - ClockNs(CLOCK_MONOTONIC));
  struct Ctx {
    LiveCapture* self;
    const std::function<void(const jdw_net_packet_record&)>* sink;
    int64_t wall_minus_mono;
  } ctx{this, &sink, wall_minus_mono};
  const int n = pcap_dispatch(
      pcap_, -1,
      [](u_char* user, const pcap_pkthdr* h, const u_char* d) {
        auto* c = reinterpret_cast<Ctx*>(user);
        std::optional<ParsedFrame> f = ParseFrame(c->self->link_type_, d, h->caplen, h->len);
        if (!f) return;
        const uint64_t wall = uint64_t(h->ts.tv_sec) * 1'000'000'000 + uint64_t(h->ts.tv_usec);
        const uint64_t mono = wall - static_cast<uint64_t>(c->wall_minus_mono);
        c->self->packets_++;
        if (f->outgoing >= 0) {
          (*c->sink)(MakeRecord(*f, mono, f->outgoing == 1));
          return;
        }
        const auto& local = c->self->local_addrs_;
        const bool src_local = local.count(std::string(reinterpret_cast<const char*>(f->net.saddr), 16)) > 0;
        const bool dst_local = local.count(std::string(reinterpret_cast<const char*>(f->net.daddr), 16)) > 0;
        if (src_local) (*c->sink)(MakeRecord(*f, mono, true));
        if (dst_local || !src_local) (*c->sink)(MakeRecord(*f, mono, false));
      },
      reinterpret_cast<u_char*>(&ctx));
  if (n == PCAP_ERROR) return ErrStatus("--pcap %s: %s", iface_.c_str(), pcap_geterr(pcap_));
  return Status::Ok();
}

uint64_t LiveCapture::kernel_drops() const {
  pcap_stat st{};
  if (pcap_stats(pcap_, &st) != 0) return 0;
  return st.ps_drop;
}

}  // namespace jackdaw::pcap
