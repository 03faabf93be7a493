// Scratch space jackdaw needs as root in a directory every user can write
// (/var/tmp). A name derived from the pid can be created first by any local
// user, with links inside that root would then write through; mkdtemp's name
// cannot be guessed, and the directory it makes is the caller's, mode 0700,
// so nothing is in it that jackdaw did not put there.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace jackdaw {

class ScratchDir {
 public:
  // A fresh PARENT/PREFIX.XXXXXX.
  static StatusOr<std::unique_ptr<ScratchDir>> Create(const std::string& parent, const std::string& prefix) {
    std::string pattern = parent + "/" + prefix + ".XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (!mkdtemp(name.data()))
      return ErrStatus("cannot create a scratch directory in %s: %s (check that %s exists and is writable)",
                       parent.c_str(), strerror(errno), parent.c_str());
    return std::unique_ptr<ScratchDir>(new ScratchDir(name.data()));
  }
  // Removed with everything in it; remove_all deletes links, never what
  // they point to.
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace jackdaw
