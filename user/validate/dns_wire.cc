#include "validate/dns_wire.h"

namespace jackdaw::validate {
namespace {

void Put16(std::string* out, uint16_t v) {
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v & 0xff));
}

uint16_t Get16(const std::string& s, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) << 8 | static_cast<uint8_t>(s[at + 1]));
}

}  // namespace

std::string DnsQuery(uint16_t id, const std::string& name, uint16_t type) {
  std::string q;
  Put16(&q, id);
  Put16(&q, 0x0100);  // a standard query, recursion desired
  Put16(&q, 1);       // one question
  Put16(&q, 0);
  Put16(&q, 0);
  Put16(&q, 0);
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q.push_back(static_cast<char>(dot - start));
    q.append(name, start, dot - start);
    start = dot + 1;
  }
  q.push_back('\0');
  Put16(&q, type);
  Put16(&q, 1);  // class IN
  return q;
}

StatusOr<DnsAnswerHead> ParseDnsAnswerHead(const std::string& packet) {
  if (packet.size() < 12) return ErrStatus("a DNS answer of %zu bytes (a header is 12)", packet.size());
  DnsAnswerHead h;
  h.id = Get16(packet, 0);
  const uint16_t flags = Get16(packet, 2);
  if (!(flags & 0x8000)) return ErrStatus("a DNS query where an answer was expected");
  h.rcode = flags & 0xf;
  h.answers = Get16(packet, 6);
  return h;
}

}  // namespace jackdaw::validate
