// A plug-in file cut short (a partial download, a full disk) is refused before dlopen: dlopen
// maps the segments its headers name, and touching one past the end of the file is SIGBUS, not
// an error it can return.
#pragma once

#include <string>

namespace staticlm {

// Throws kInvalidArgument (naming `where` and the segment) when a 64-bit ELF file's program or
// section headers, or the bytes its segments load, lie past its end. Files that are not 64-bit
// ELF are left to dlopen, which says what they are.
void check_elf_extent(const std::string& path, const std::string& where);

}  // namespace staticlm
