// libFuzzer entry for the targets of fuzz_targets.h: one binary, the target
// chosen by JDW_FUZZ_TARGET (file, metadata, records, schema). `make fuzz`
// runs each in turn.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fuzz/fuzz_targets.h"

namespace {
void (*g_target)(const uint8_t*, size_t) = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* t = getenv("JDW_FUZZ_TARGET");
  if (!t) t = "file";
  if (!strcmp(t, "file")) g_target = jackdaw::fuzz::FuzzTraceFile;
  else if (!strcmp(t, "metadata")) g_target = jackdaw::fuzz::FuzzTraceMetadata;
  else if (!strcmp(t, "records")) g_target = jackdaw::fuzz::FuzzRecordsAndJoin;
  else if (!strcmp(t, "schema")) g_target = jackdaw::fuzz::FuzzSchema;
  else if (!strcmp(t, "compressed")) g_target = jackdaw::fuzz::FuzzCompressedChunks;
  if (!g_target) {
    fprintf(stderr, "JDW_FUZZ_TARGET=%s: expected file, metadata, records, compressed or schema\n", t);
    exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  g_target(data, size);
  return 0;
}
