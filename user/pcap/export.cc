#include "pcap/export.h"

#include <map>

#include "pcap/packets.h"
#include "pcap/pcapng_writer.h"

namespace jackdaw::pcap {

StatusOr<ExportStats> ExportPcapng(const trace::TraceReader& reader, const std::string& out_path) {
  const std::vector<Packet> packets = ReadPackets(reader);
  // Nothing to write: whatever is at out_path stays as it was.
  if (packets.empty()) return ExportStats{};
  ASSIGN_OR_RETURN(auto w, PcapngWriter::Create(out_path, "jackdaw (headers rebuilt from net records)"));
  std::map<uint32_t, uint32_t> iface_of;  // ifindex -> pcapng interface id
  ExportStats st;
  for (const Packet& p : packets) {
    auto it = iface_of.find(p.net.ifindex);
    if (it == iface_of.end()) {
      const std::string name = "ifindex" + std::to_string(p.net.ifindex) + "@" + reader.meta().host;
      ASSIGN_OR_RETURN(uint32_t id, w->AddInterface(kLinkTypeRaw, 65535, name));
      it = iface_of.emplace(p.net.ifindex, id).first;
    }
    uint32_t ip_len = 0;
    const std::string hdr = SynthesizeHeaders(p.net, &ip_len);
    RETURN_IF_ERROR(w->WritePacket(it->second, p.wall_ns, hdr, ip_len,
                                   p.dir == Direction::kOut ? PcapngWriter::Dir::kOutbound
                                                            : PcapngWriter::Dir::kInbound));
  }
  RETURN_IF_ERROR(w->Close());
  st.packets = w->packets_written();
  st.interfaces = iface_of.size();
  return st;
}

}  // namespace jackdaw::pcap
