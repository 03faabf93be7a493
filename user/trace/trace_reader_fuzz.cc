// libFuzzer target: any byte string given to the reader must yield either a
// trace or an error, never a crash or an out-of-bounds read (ASan).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/jdw_fuzz_" + std::to_string(getpid()) + ".jdw";
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  for (bool salvage : {false, true}) {
    auto r = jackdaw::trace::TraceReader::Open(path, {.allow_truncated = salvage});
    if (r.ok()) {
      uint64_t n = 0;
      (*r)->ForEachRecord([&](const jdw_record_header& h) { n += h.size; });
    }
  }
  return 0;
}
