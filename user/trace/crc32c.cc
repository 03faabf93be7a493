#include <cstring>
#include <nmmintrin.h>

#include "trace/trace_format.h"

namespace jackdaw::trace {

// SSE4.2 CRC32C: ~8 bytes/cycle, so checksumming keeps up with capture.
__attribute__((target("sse4.2"))) uint32_t Crc32c(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t crc = 0xffffffffu;
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    crc = _mm_crc32_u64(crc, v);
    p += 8;
    len -= 8;
  }
  uint32_t c = static_cast<uint32_t>(crc);
  while (len--) c = _mm_crc32_u8(c, *p++);
  return c ^ 0xffffffffu;
}

}  // namespace jackdaw::trace
