#include "join/endpoint_format.h"

#include <array>
#include <cstring>

#include "join/flat_map.h"

namespace jackdaw::join {

bool IsV4Mapped(const uint8_t* a) {
  uint64_t lo;
  uint32_t mid;
  memcpy(&lo, a, 8);
  memcpy(&mid, a + 8, 4);
  return lo == 0 && mid == 0xffff0000u;  // ::ffff:a.b.c.d (little-endian load of 00 00 ff ff)
}

uint64_t ConnKey(uint16_t family, const uint8_t* laddr, uint16_t lport, const uint8_t* raddr, uint16_t rport) {
  // The addresses are read in place (no copy: a variable-length memcpy
  // per packet was most of this function's cost).
  const uint8_t* l = laddr;
  const uint8_t* r = raddr;
  size_t n = 16;
  if (family == kAfInet6 && IsV4Mapped(laddr) && IsV4Mapped(raddr)) {
    family = kAfInet;
    l = laddr + 12;
    r = raddr + 12;
    n = 4;
  } else {
    n = family == kAfInet ? 4 : 16;
  }
  uint64_t h = Mix64(family ^ (uint64_t{lport} << 16) ^ (uint64_t{rport} << 32));
  for (size_t i = 0; i < n; i += 4) {
    uint32_t a, b;
    memcpy(&a, l + i, 4);
    memcpy(&b, r + i, 4);
    h = Mix64(h ^ a ^ (uint64_t{b} << 32));
  }
  return h;
}

std::string FormatAddr(uint16_t family, const uint8_t* a, uint16_t port) {
  // By hand: this runs for every connection of every request emitted, and
  // snprintf was a tenth of the join's time.
  char buf[64];
  char* p = buf;
  auto put_dec = [&p](unsigned v) {
    char tmp[8];
    int n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) *p++ = tmp[--n];
  };
  if (family == kAfInet || (family == kAfInet6 && IsV4Mapped(a))) {
    // Octets from a table of their decimal forms (digits, then the length).
    static constexpr auto kOctets = [] {
      std::array<std::array<char, 4>, 256> octets{};
      for (int v = 0; v < 256; v++) {
        const int len = v >= 100 ? 3 : v >= 10 ? 2 : 1;
        for (int d = len - 1, rest = v; d >= 0; d--, rest /= 10) octets[v][d] = static_cast<char>('0' + rest % 10);
        octets[v][3] = static_cast<char>(len);
      }
      return octets;
    }();
    const uint8_t* v4 = family == kAfInet ? a : a + 12;
    for (int i = 0; i < 4; i++) {
      if (i) *p++ = '.';
      const std::array<char, 4>& octet = kOctets[v4[i]];
      memcpy(p, octet.data(), 3);
      p += octet[3];
    }
  } else {
    static constexpr char kHex[] = "0123456789abcdef";
    *p++ = '[';
    for (int i = 0; i < 16; i += 2) {
      if (i) *p++ = ':';
      const unsigned g = (unsigned{a[i]} << 8) | a[i + 1];
      bool lead = true;
      for (int shift = 12; shift >= 0; shift -= 4) {
        const unsigned d = (g >> shift) & 15;
        if (lead && d == 0 && shift) continue;
        lead = false;
        *p++ = kHex[d];
      }
    }
    *p++ = ']';
  }
  *p++ = ':';
  put_dec(port);
  return std::string(buf, p);
}

}  // namespace jackdaw::join
