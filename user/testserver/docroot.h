// The static files of request types C and D (Magpie Table 1's small.gif and
// tiny.gif). The server writes them at start with deterministic contents
// (DocContent) so tests and the ground truth can check every byte, fsyncs
// them so no dirty page hides a disk read, and reads them back per request in
// one of three modes:
//   kCached    plain read(); after the first request the page cache serves it
//   kDirect    O_DIRECT with page-aligned buffers: every request reads the disk
//   kDropCache posix_fadvise(DONTNEED) before each read evicts the file's
//              pages, so the read goes to disk (the file is clean)
// The default directory is a fresh one under /var/tmp, because /tmp may be a
// tmpfs (no disk I/O, and O_DIRECT is refused there).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "testserver/request_types.h"

namespace jackdaw::testserver {

enum class ReadMode { kCached, kDirect, kDropCache };

// The deterministic contents of a static file: 64-byte lines
// "jackdaw-testserver small.dat offset 0000000064 ....\n" so any byte is
// easy to locate by eye. `size` need not be a multiple of 64.
std::string DocContent(std::string_view file_name, size_t size);

class Docroot {
 public:
  // Creates the files in `dir` (created if missing), or in a fresh
  // /var/tmp/jackdaw-testserver.XXXXXX when `dir` is empty; the latter is
  // removed again by the destructor. With kDirect, checks that the file
  // system accepts O_DIRECT and fails with a message naming the fix if not.
  static StatusOr<std::unique_ptr<Docroot>> Create(const std::string& dir, ReadMode mode);
  ~Docroot();

  // Reads the whole file of a kStatic type.
  StatusOr<std::string> Read(const RequestType& type) const;

  const std::string& dir() const { return dir_; }

 private:
  Docroot(std::string dir, ReadMode mode, bool owned)
      : dir_(std::move(dir)), mode_(mode), owned_(owned) {}
  std::string dir_;
  ReadMode mode_;
  bool owned_;  // we made the directory, so we remove it
};

}  // namespace jackdaw::testserver
