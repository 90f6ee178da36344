#include "backends/plugin/elf_extent.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>

#include "base/error.h"

namespace staticlm {

void check_elf_extent(const std::string& path, const std::string& where) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return;  // dlopen says why
  const auto size = static_cast<std::uint64_t>(in.tellg());
  Elf64_Ehdr eh{};
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh)) return;
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return;
  const auto past_end = [&](std::uint64_t offset, std::uint64_t bytes) { return offset > size || bytes > size - offset; };
  const auto cut = [&](const std::string& what, std::uint64_t end) {
    invalid_argument(where + ": the file is cut short (" + what + " ends at byte " + std::to_string(end) + ", the file has " +
                     std::to_string(size) + "; a partial download?)");
  };
  const std::uint64_t ph_bytes = std::uint64_t{eh.e_phnum} * eh.e_phentsize;
  if (past_end(eh.e_phoff, ph_bytes)) cut("the program header table", eh.e_phoff + ph_bytes);
  if (eh.e_shoff != 0) {
    const std::uint64_t sh_bytes = std::uint64_t{eh.e_shnum} * eh.e_shentsize;
    if (past_end(eh.e_shoff, sh_bytes)) cut("the section header table", eh.e_shoff + sh_bytes);
  }
  if (eh.e_phentsize < sizeof(Elf64_Phdr)) return;
  for (std::uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(eh.e_phoff + std::uint64_t{i} * eh.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) return;
    if (ph.p_type == PT_LOAD && past_end(ph.p_offset, ph.p_filesz)) {
      cut("loadable segment " + std::to_string(i), ph.p_offset + ph.p_filesz);
    }
  }
}

}  // namespace staticlm
