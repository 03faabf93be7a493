// Files jackdaw creates as root in places other users can write (/var/tmp,
// a --work-dir, a --docroot, the directory of -o).
//
// The threat is a local user who plants a symbolic link, a hard link or a
// file of their own under the name jackdaw is about to write, so that root
// truncates /etc/shadow or hands its trace (command lines, socket endpoints,
// kernel addresses) to that user. CreateOwnedFile therefore never follows
// a final symlink (O_NOFOLLOW), never opens a FIFO or device (O_NONBLOCK +
// S_ISREG), refuses a file with other hard links or another owner, and
// leaves the file with `mode` whatever it had before. CheckPrivateDir refuses
// a directory another user could plant names in at all.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "common/status.h"

namespace jackdaw {

// What jackdaw writes (traces, packets, reports) tells whoever reads it the
// machine's command lines, endpoints and timings: its owner's alone.
inline constexpr mode_t kOutputFileMode = 0600;

// "-" as an output path is standard output, for every writer below. A
// command that prints text beside such an output moves that text to
// standard error (cli::ReserveStdoutForData), which points StdoutDataFd()
// at the real standard output.
inline bool IsStdoutPath(const std::string& path) { return path == "-"; }
inline int& StdoutDataFd() {
  static int fd = STDOUT_FILENO;
  return fd;
}

// Opens `path` for writing (not truncated: the caller truncates once it
// holds whatever lock it needs), creating it with `mode`. Returns the fd.
inline StatusOr<int> CreateOwnedFile(const std::string& path, mode_t mode) {
  if (IsStdoutPath(path)) {
    // A descriptor of its own, closed by exec: a traced command must not
    // inherit the data's stream.
    const int fd = fcntl(StdoutDataFd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return ErrStatus("cannot write to standard output: %s", strerror(errno));
    return fd;
  }
  const char* p = path.c_str();
  int fd = open(p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == ELOOP)
      return ErrStatus("refusing to write %s: it is a symbolic link (remove it or choose another path)", p);
    if (errno == ENXIO)  // a FIFO nobody reads (O_NONBLOCK) or a device without its driver
      return ErrStatus("refusing to write %s: it is not a regular file (choose a file path)", p);
    return ErrStatus("cannot create %s: %s (check the directory exists and is writable)", p,
                     strerror(errno));
  }
  struct stat st;
  Status bad;
  if (fstat(fd, &st) != 0)
    bad = ErrStatus("cannot stat %s: %s", p, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    bad = ErrStatus("refusing to write %s: it is not a regular file (choose a file path)", p);
  else if (st.st_nlink > 1)
    bad = ErrStatus("refusing to write %s: it has %ju other hard links (remove it or choose another path)",
                    p, static_cast<uintmax_t>(st.st_nlink - 1));
  else if (st.st_uid != geteuid())
    bad = ErrStatus("refusing to write %s: it belongs to uid %u, not to the user running jackdaw "
                    "(remove it or choose another path)",
                    p, static_cast<unsigned>(st.st_uid));
  else if (fchmod(fd, mode) != 0 || fcntl(fd, F_SETFL, 0) != 0)
    bad = ErrStatus("cannot set up %s: %s", p, strerror(errno));
  if (!bad.ok()) {
    close(fd);
    return bad;
  }
  return fd;
}

// Checks before any work is done that `path` can be written as
// CreateOwnedFile would write it, so a long analysis does not end in "cannot
// write". A file created only for the check is removed again.
inline Status CheckOutputFile(const std::string& path) {
  if (IsStdoutPath(path)) return Status::Ok();
  struct stat before;
  const bool existed = lstat(path.c_str(), &before) == 0;
  ASSIGN_OR_RETURN(int fd, CreateOwnedFile(path, kOutputFileMode));
  close(fd);
  if (!existed) unlink(path.c_str());
  return Status::Ok();
}

// `path` opened through CreateOwnedFile and emptied, as a stdio stream.
inline StatusOr<FILE*> OpenOwnedStream(const std::string& path, mode_t mode) {
  ASSIGN_OR_RETURN(int fd, CreateOwnedFile(path, mode));
  // Standard output is a pipe or a terminal, or a file the shell opened
  // (perhaps to append): it is written as it is.
  FILE* f = IsStdoutPath(path) || ftruncate(fd, 0) == 0 ? fdopen(fd, "w") : nullptr;
  if (!f) {
    const int e = errno;
    close(fd);
    return ErrStatus("cannot write %s: %s", path.c_str(), strerror(e));
  }
  return f;
}

// Replaces the content of `path` (written through CreateOwnedFile).
inline Status WriteOwnedFile(const std::string& path, std::string_view content, mode_t mode) {
  ASSIGN_OR_RETURN(FILE* f, OpenOwnedStream(path, mode));
  const bool written = fwrite(content.data(), 1, content.size(), f) == content.size();
  const int e = errno;
  if (fclose(f) != 0 || !written)
    return ErrStatus("error writing %s: %s (disk full?)", path.c_str(), strerror(written ? errno : e));
  return Status::Ok();
}

// An existing directory must be a real directory (not a symlink to one),
// owned by the user running jackdaw or by root, and writable by nobody else;
// a missing one is created with `create_mode`.
inline Status CheckPrivateDir(const std::string& dir, mode_t create_mode = 0700) {
  const char* d = dir.c_str();
  if (mkdir(d, create_mode) != 0 && errno != EEXIST)
    return ErrStatus("cannot create %s: %s", d, strerror(errno));
  struct stat st;
  if (lstat(d, &st) != 0) return ErrStatus("cannot stat %s: %s", d, strerror(errno));
  if (S_ISLNK(st.st_mode))
    return ErrStatus("refusing to use %s: it is a symbolic link (pass the real directory)", d);
  if (!S_ISDIR(st.st_mode)) return ErrStatus("refusing to use %s: it is not a directory", d);
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return ErrStatus("refusing to use %s: it belongs to uid %u, who could plant links in it "
                     "(remove it or pass a directory of your own)",
                     d, static_cast<unsigned>(st.st_uid));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return ErrStatus("refusing to use %s: it is writable by other users, who could plant links in it "
                     "(chmod go-w %s, or pass a directory of your own)",
                     d, d);
  return Status::Ok();
}

}  // namespace jackdaw
