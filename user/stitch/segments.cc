#include "stitch/segments.h"

#include <algorithm>
#include <tuple>
#include <unordered_set>

namespace jackdaw::stitch {

std::string Flow::ToString() const {
  return pcap::FormatAddr(family, saddr.data(), sport) + "->" + pcap::FormatAddr(family, daddr.data(), dport);
}

std::vector<std::vector<Segment>> AttributeSegments(std::span<const model::Request> requests,
                                                    std::span<const pcap::Packet> packets,
                                                    AttributionStats* stats) {
  AttributionStats st;
  // Packets sorted by (time, cpu, type): a request event finds its record by
  // binary search.
  std::vector<const pcap::Packet*> by_key;
  by_key.reserve(packets.size());
  for (const pcap::Packet& p : packets) by_key.push_back(&p);
  auto key = [](const pcap::Packet* p) { return std::tuple(p->mono_ns, p->cpu, p->record_type); };
  std::sort(by_key.begin(), by_key.end(), [&](auto* a, auto* b) { return key(a) < key(b); });

  std::vector<std::vector<Segment>> out(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    const model::Request& req = requests[r];
    std::unordered_set<std::string> locals;  // local ends of the request's connections
    for (const model::Endpoint& e : req.connections) locals.insert(e.local);
    for (uint32_t i = 0; i < req.events.size(); ++i) {
      const model::RequestEvent& ev = req.events[i];
      if (ev.synthetic != model::SyntheticKind::kNone) continue;
      if (ev.record_type != JDW_EVENT_NET_XMIT && ev.record_type != JDW_EVENT_NET_RECV) continue;
      st.packet_events++;
      const auto want = std::tuple(ev.ts_ns, ev.cpu, ev.record_type);
      auto it = std::lower_bound(by_key.begin(), by_key.end(), want,
                                 [&](const pcap::Packet* p, const auto& k) { return key(p) < k; });
      if (it == by_key.end() || key(*it) != want) {
        st.unmatched_events++;
        continue;
      }
      const pcap::Packet& p = **it;
      if (p.net.protocol != 6 || p.net.payload_len == 0) continue;
      const bool out_dir = p.dir == pcap::Direction::kOut;
      const std::string local = out_dir ? pcap::FormatAddr(p.net.family, p.net.saddr, p.net.sport)
                                        : pcap::FormatAddr(p.net.family, p.net.daddr, p.net.dport);
      if (!locals.count(local)) {
        st.other_end++;
        continue;
      }
      Segment s;
      s.flow.family = p.net.family;
      s.flow.sport = p.net.sport;
      s.flow.dport = p.net.dport;
      std::copy(std::begin(p.net.saddr), std::end(p.net.saddr), s.flow.saddr.begin());
      std::copy(std::begin(p.net.daddr), std::end(p.net.daddr), s.flow.daddr.begin());
      s.seq = p.net.seq;
      s.len = p.net.payload_len;
      s.mono_ns = p.mono_ns;
      s.dir = p.dir;
      s.event = i;
      out[r].push_back(s);
      st.data_segments++;
    }
  }
  if (stats) *stats = st;
  return out;
}

}  // namespace jackdaw::stitch
