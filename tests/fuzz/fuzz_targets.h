// Fuzz targets over jackdaw's parsed structures. Each takes arbitrary bytes
// and must return without crashing, hanging or reading out of bounds,
// whatever the bytes. They are driven two ways: by libFuzzer (`make fuzz`,
// one binary per target, clang + ASan/UBSan) and by a short deterministic
// mutation run in the test suite (fuzz_smoke_test.cc), both seeded with
// real traces and schemas.
//
// Raw bytes under the chunk checksums mostly die at the CRC check, so the
// targets below frame the fuzzed bytes with valid magic, lengths and
// checksums and aim them at what comes after: the metadata JSON, the record
// fields, the join over those records, and the schema language.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jackdaw::fuzz {

// The whole file as given (framing included).
void FuzzTraceFile(const uint8_t* data, size_t size);
// The bytes as header JSON, and as meta and footer JSON behind a good header.
void FuzzTraceMetadata(const uint8_t* data, size_t size);
// The bytes as records with valid framing, read and then joined with every
// shipped schema through join::ExtractRequests.
void FuzzRecordsAndJoin(const uint8_t* data, size_t size);
// Compressed record chunks: the bytes as a zstd frame, and as records
// compressed properly and then damaged (CRC recomputed).
void FuzzCompressedChunks(const uint8_t* data, size_t size);
// The bytes as schema text.
void FuzzSchema(const uint8_t* data, size_t size);

// Directory of the shipped schemas (user/schemas), for the join target.
void SetSchemaDir(const std::string& dir);

}  // namespace jackdaw::fuzz
