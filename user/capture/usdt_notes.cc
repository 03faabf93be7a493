#include "capture/usdt_notes.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <set>

namespace jackdaw::capture {

StatusOr<std::vector<UsdtProbe>> ListUsdtProbes(const std::string& binary) {
  if (elf_version(EV_CURRENT) == EV_NONE) return ErrStatus("libelf: %s", elf_errmsg(-1));
  int fd = open(binary.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrStatus("cannot open %s: %s", binary.c_str(), strerror(errno));
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    close(fd);
    return ErrStatus("%s is not an ELF binary", binary.c_str());
  }
  std::vector<UsdtProbe> probes;
  std::set<std::pair<std::string, std::string>> seen;
  size_t shstrndx;
  elf_getshdrstrndx(elf, &shstrndx);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name || strcmp(name, ".note.stapsdt") != 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    size_t off = 0, name_off, desc_off;
    GElf_Nhdr nh;
    while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
      if (nh.n_type != 3 || nh.n_descsz < 3 * sizeof(uint64_t) + 2) continue;
      const char* desc = static_cast<const char*>(data->d_buf) + desc_off;
      const char* end = desc + nh.n_descsz;
      uint64_t sema;
      memcpy(&sema, desc + 2 * sizeof(uint64_t), sizeof(sema));
      const char* provider = desc + 3 * sizeof(uint64_t);
      const char* pname = provider + strnlen(provider, end - provider) + 1;
      if (pname >= end) continue;
      UsdtProbe p{provider, std::string(pname, strnlen(pname, end - pname)), sema != 0};
      if (seen.insert({p.provider, p.name}).second) probes.push_back(p);
    }
  }
  elf_end(elf);
  close(fd);
  return probes;
}

}  // namespace jackdaw::capture
