// On-disk layout of a .jdw trace (version 3). User space only: kernel-side
// records are defined once in include/jackdaw/abi.h and stored verbatim.
//
//   FileHeader (32 bytes) | header JSON (padded to 8)
//   Chunk*                 each: ChunkHeader (24 bytes) | payload (padded to 8)
//
// Chunk kinds:
//   kRecords  records of ONE cpu (ChunkHeader.cpu), in that CPU's time order
//   kRecordsZstd  the same records compressed: ZstdPrefix (8 bytes, the
//             uncompressed length) then one zstd frame; record_count and
//             cpu as for kRecords, the CRC covers the compressed payload
//   kMeta     JSON object merged into the trace metadata: tasks seen, app
//             probes attached, the latest clock mapping (written at every
//             clock sync, so a killed recording still has one)
//   kFooter   JSON: loss counters, record counts, final clock mapping; last
//             chunk of a file whose recording ended cleanly
// Every payload is covered by a CRC32C in its chunk header, and the header
// JSON by one in the file header, so damage is located to the chunk (or the
// header) and reported with its byte offset.
//
// Versions: 1 had no header checksum (header_crc32c was reserved, 0); the
// reader still accepts it. 2 adds header_crc32c. 3 adds kRecordsZstd; a
// writer stamps 3 only on files that hold compressed chunks (an older reader
// would skip them as unknown and silently read no records), so uncompressed
// traces stay readable by version-2 readers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jackdaw::trace {

inline constexpr char kFileMagic[8] = {'J', 'D', 'W', 'T', 'R', 'A', 'C', 'E'};
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr uint32_t kUncompressedFormatVersion = 2;
inline constexpr uint32_t kOldestReadableVersion = 1;
inline constexpr uint32_t kChunkMagic = 0x4357444a;  // "JDWC"
// Bounds the damage a corrupt length field can claim.
inline constexpr uint32_t kMaxChunkPayload = 64u << 20;

enum class ChunkKind : uint16_t { kRecords = 1, kMeta = 2, kFooter = 3, kRecordsZstd = 4 };

// Leads a kRecordsZstd payload: the reader sizes its buffer from it and
// refuses a frame that decompresses to anything else.
struct ZstdPrefix {
  uint32_t raw_len;
  uint32_t reserved;
};
static_assert(sizeof(ZstdPrefix) == 8);

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_json_len;
  uint32_t header_crc32c;  // of the header JSON (version >= 2)
  uint32_t reserved0;
  uint64_t reserved1;
};
static_assert(sizeof(FileHeader) == 32);

struct ChunkHeader {
  uint32_t magic;
  uint16_t kind;  // ChunkKind
  uint16_t cpu;
  uint32_t payload_len;  // before padding
  uint32_t crc32c;       // of the payload
  uint64_t record_count;
};
static_assert(sizeof(ChunkHeader) == 24);

inline constexpr size_t PadTo8(size_t n) { return (n + 7) & ~size_t{7}; }

uint32_t Crc32c(const void* data, size_t len);

}  // namespace jackdaw::trace
