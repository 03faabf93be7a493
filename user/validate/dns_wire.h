// The little of DNS (RFC 1035) the real-server suite's UDP client needs: a
// query for one name and type with recursion desired, and the header
// fields of an answer (its id, response code and answer count).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace jackdaw::validate {

// Record types the suite asks for.
inline constexpr uint16_t kDnsTypeA = 1, kDnsTypeTxt = 16, kDnsTypeAaaa = 28;

std::string DnsQuery(uint16_t id, const std::string& name, uint16_t type);

struct DnsAnswerHead {
  uint16_t id = 0;
  uint8_t rcode = 0;  // 0 NOERROR, 3 NXDOMAIN
  uint16_t answers = 0;
};
// The answer's header; an error for fewer than 12 bytes or a query.
StatusOr<DnsAnswerHead> ParseDnsAnswerHead(const std::string& packet);

}  // namespace jackdaw::validate
