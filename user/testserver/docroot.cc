#include "testserver/docroot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "common/safe_file.h"

namespace jackdaw::testserver {
namespace {

constexpr size_t kDirectAlign = 4096;

struct FreeDeleter {
  void operator()(void* p) const { free(p); }
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status WriteFile(const std::string& path, const std::string& content) {
  // Never through a link planted in the docroot: the server may run as root.
  ASSIGN_OR_RETURN(int raw, CreateOwnedFile(path, 0644));
  Fd fd(raw);
  if (ftruncate(fd.get(), 0) != 0) return ErrStatus("cannot truncate %s: %s", path.c_str(), strerror(errno));
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = write(fd.get(), content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrStatus("cannot write %s: %s", path.c_str(), strerror(errno));
    off += static_cast<size_t>(n);
  }
  // Clean pages only: O_DIRECT and FADV_DONTNEED then really go to disk.
  if (fsync(fd.get()) != 0) return ErrStatus("cannot fsync %s: %s", path.c_str(), strerror(errno));
  return Status::Ok();
}

}  // namespace

std::string DocContent(std::string_view file_name, size_t size) {
  std::string out;
  out.reserve(size + 64);
  for (size_t off = 0; out.size() < size; off += 64) {
    char line[65];
    int n = snprintf(line, sizeof(line), "jackdaw-testserver %.*s offset %010zu ",
                     static_cast<int>(file_name.size()), file_name.data(), off);
    std::string l(line, static_cast<size_t>(n));
    l.resize(63, '.');
    l.push_back('\n');
    out += l;
  }
  out.resize(size);
  return out;
}

StatusOr<std::unique_ptr<Docroot>> Docroot::Create(const std::string& dir, ReadMode mode) {
  std::string path = dir;
  bool owned = false;
  if (path.empty()) {
    char tmpl[] = "/var/tmp/jackdaw-testserver.XXXXXX";
    if (!mkdtemp(tmpl))
      return ErrStatus("cannot create a docroot under /var/tmp: %s (pass --docroot DIR)",
                       strerror(errno));
    path = tmpl;
    owned = true;
  } else {
    // An existing directory someone else can write could hold their links.
    Status st = CheckPrivateDir(path, 0755);
    if (!st.ok()) return ErrStatus("--docroot: %s", st.message().c_str());
  }
  std::unique_ptr<Docroot> root(new Docroot(path, mode, owned));
  if (mode != ReadMode::kCached) {
    // tmpfs accepts O_DIRECT (Linux >= 6.6) and ignores DONTNEED, but has no
    // disk behind it: the reads the flag asks for would silently not happen.
    constexpr long kTmpfsMagic = 0x01021994, kRamfsMagic = 0x858458f6;
    struct statfs fs;
    if (statfs(path.c_str(), &fs) == 0 && (fs.f_type == kTmpfsMagic || fs.f_type == kRamfsMagic))
      return ErrStatus(
          "%s: docroot %s is on a memory file system (tmpfs/ramfs), so no disk read would "
          "happen; pass --docroot DIR on a disk-backed file system such as /var/tmp",
          mode == ReadMode::kDirect ? "--direct-io" : "--drop-cache", path.c_str());
  }
  for (const RequestType& t : kRequestTypes) {
    if (t.kind != RequestKind::kStatic) continue;
    std::string file = path + "/" + std::string(t.file_name);
    RETURN_IF_ERROR(WriteFile(file, DocContent(t.file_name, t.file_bytes)));
    if (mode == ReadMode::kDirect) {
      int fd = open(file.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
      if (fd < 0) {
        return ErrStatus(
            "--direct-io: cannot open %s with O_DIRECT: %s (the file system under %s does not "
            "support direct I/O, e.g. tmpfs; pass --docroot on a disk-backed file system such "
            "as /var/tmp, or use --drop-cache)",
            file.c_str(), strerror(errno), path.c_str());
      }
      close(fd);
    }
  }
  return root;
}

Docroot::~Docroot() {
  if (!owned_) return;
  for (const RequestType& t : kRequestTypes)
    if (t.kind == RequestKind::kStatic) unlink((dir_ + "/" + std::string(t.file_name)).c_str());
  rmdir(dir_.c_str());
}

StatusOr<std::string> Docroot::Read(const RequestType& type) const {
  std::string file = dir_ + "/" + std::string(type.file_name);
  int flags = O_RDONLY | O_CLOEXEC | (mode_ == ReadMode::kDirect ? O_DIRECT : 0);
  Fd fd(open(file.c_str(), flags));
  if (fd.get() < 0) return ErrStatus("cannot open %s: %s", file.c_str(), strerror(errno));
  if (mode_ == ReadMode::kDropCache) posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);

  // One aligned buffer serves all modes; O_DIRECT needs the buffer, offset
  // and length aligned, so read whole blocks and stop at EOF.
  size_t cap = (type.file_bytes / kDirectAlign + 1) * kDirectAlign;
  void* raw = nullptr;
  if (posix_memalign(&raw, kDirectAlign, cap) != 0) return ErrStatus("out of memory");
  std::unique_ptr<char, FreeDeleter> buf(static_cast<char*>(raw));
  size_t got = 0;
  while (got < cap) {
    ssize_t n = read(fd.get(), buf.get() + got, cap - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrStatus("cannot read %s: %s", file.c_str(), strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got % kDirectAlign != 0) break;  // short read: EOF reached
  }
  return std::string(buf.get(), got);
}

}  // namespace jackdaw::testserver
