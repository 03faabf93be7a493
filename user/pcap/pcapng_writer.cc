#include "pcap/pcapng_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/safe_file.h"

namespace jackdaw::pcap {
namespace {

constexpr uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescription = 0x00000001;
constexpr uint32_t kEnhancedPacket = 0x00000006;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEnd = 0, kOptComment = 1;
constexpr uint16_t kShbUserAppl = 4;
constexpr uint16_t kIfName = 2, kIfTsresol = 9;
constexpr uint16_t kEpbFlags = 2;

// Host byte order throughout: the SHB's byte-order magic tells readers which.
template <typename T>
void Append(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void Pad4(std::string& s) { s.append((4 - s.size() % 4) % 4, '\0'); }
void AppendOption(std::string& s, uint16_t code, std::string_view value) {
  Append<uint16_t>(s, code);
  Append<uint16_t>(s, static_cast<uint16_t>(value.size()));
  s.append(value);
  Pad4(s);
}
void EndOptions(std::string& s) {
  Append<uint16_t>(s, kOptEnd);
  Append<uint16_t>(s, 0);
}

}  // namespace

StatusOr<std::unique_ptr<PcapngWriter>> PcapngWriter::Create(const std::string& path, std::string_view application) {
  ASSIGN_OR_RETURN(FILE* f, OpenOwnedStream(path, kOutputFileMode));
  std::unique_ptr<PcapngWriter> w(new PcapngWriter(f, path));
  std::string shb;
  Append<uint32_t>(shb, kByteOrderMagic);
  Append<uint16_t>(shb, 1);  // major
  Append<uint16_t>(shb, 0);  // minor
  Append<int64_t>(shb, -1);  // section length: not known while streaming
  AppendOption(shb, kShbUserAppl, application);
  EndOptions(shb);
  RETURN_IF_ERROR(w->WriteBlock(kSectionHeader, shb));
  return w;
}

PcapngWriter::~PcapngWriter() { (void)Close(); }

StatusOr<uint32_t> PcapngWriter::AddInterface(uint16_t link_type, uint32_t snaplen, std::string_view name) {
  std::string idb;
  Append<uint16_t>(idb, link_type);
  Append<uint16_t>(idb, 0);
  Append<uint32_t>(idb, snaplen);
  AppendOption(idb, kIfName, name);
  AppendOption(idb, kIfTsresol, std::string_view("\x09", 1));  // 10^-9 s
  EndOptions(idb);
  RETURN_IF_ERROR(WriteBlock(kInterfaceDescription, idb));
  return interfaces_++;
}

Status PcapngWriter::WritePacket(uint32_t interface_id, uint64_t wall_ns, std::string_view data, uint32_t orig_len,
                                 Dir dir) {
  if (interface_id >= interfaces_) return ErrStatus("pcapng: packet for interface %u before its description", interface_id);
  std::string epb;
  Append<uint32_t>(epb, interface_id);
  Append<uint32_t>(epb, static_cast<uint32_t>(wall_ns >> 32));
  Append<uint32_t>(epb, static_cast<uint32_t>(wall_ns));
  Append<uint32_t>(epb, static_cast<uint32_t>(data.size()));
  Append<uint32_t>(epb, std::max<uint32_t>(orig_len, static_cast<uint32_t>(data.size())));
  epb.append(data);
  Pad4(epb);
  if (dir != Dir::kUnknown) {
    std::string flags;
    Append<uint32_t>(flags, static_cast<uint32_t>(dir));  // bits 0-1: inbound 1, outbound 2
    AppendOption(epb, kEpbFlags, flags);
  }
  EndOptions(epb);
  RETURN_IF_ERROR(WriteBlock(kEnhancedPacket, epb));
  packets_++;
  return Status::Ok();
}

Status PcapngWriter::WriteBlock(uint32_t type, const std::string& body) {
  if (!f_) return ErrStatus("pcapng: %s already closed", path_.c_str());
  const uint32_t total = static_cast<uint32_t>(12 + body.size());
  std::string block;
  block.reserve(total);
  Append<uint32_t>(block, type);
  Append<uint32_t>(block, total);
  block += body;
  Append<uint32_t>(block, total);
  if (fwrite(block.data(), 1, block.size(), f_) != block.size())
    return ErrStatus("cannot write %s: %s", path_.c_str(), strerror(errno));
  return Status::Ok();
}

Status PcapngWriter::Close() {
  if (!f_) return Status::Ok();
  const bool ok = fflush(f_) == 0;
  const int err = errno;
  const bool closed = fclose(f_) == 0;
  f_ = nullptr;
  if (!ok || !closed) return ErrStatus("cannot write %s: %s", path_.c_str(), strerror(err));
  return Status::Ok();
}

}  // namespace jackdaw::pcap
