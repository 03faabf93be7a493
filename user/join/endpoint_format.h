// Connection endpoints: a hash key for an address pair (to find a packet's
// socket) and their text form for a request's connections. Addresses are as
// the ABI carries them: 16 bytes, IPv4 in the first 4 (AF_INET) or mapped
// into IPv6 (::ffff:a.b.c.d).
#pragma once

#include <cstdint>
#include <string>

namespace jackdaw::join {

// Address families and protocols as the kernel numbers them (the ABI
// carries the kernel's values).
inline constexpr uint16_t kAfUnix = 1;
inline constexpr uint16_t kAfInet = 2;
inline constexpr uint16_t kAfInet6 = 10;
inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;

// ::ffff:a.b.c.d
bool IsV4Mapped(const uint8_t* addr);

// One key per connection as seen from its local end: an IPv4 connection and
// the same one through a v4-mapped IPv6 socket get the same key.
uint64_t ConnKey(uint16_t family, const uint8_t* laddr, uint16_t lport, const uint8_t* raddr, uint16_t rport);

// "10.0.0.1:80", "[2001:db8:0:0:0:0:0:1]:443" (each group in shortest hex,
// no :: compression); a v4-mapped address prints as IPv4.
std::string FormatAddr(uint16_t family, const uint8_t* addr, uint16_t port);

}  // namespace jackdaw::join
