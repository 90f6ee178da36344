// Whole-file reads and atomic writes (write to a temporary name, then rename), so that a
// failure never leaves a half-written output file behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace staticlm {

// The largest file read_file reads whole (configs, messages, templates, text inputs).
inline constexpr std::size_t kMaxReadFileBytes = std::size_t{256} << 20;
// The whole file; kInvalidFile naming the path when it cannot be read or is larger than
// kMaxReadFileBytes.
std::string read_file(const std::string& path);

// Whether anything is at path (a link is followed): a file, but also a directory, a pipe or a
// device, which the reader then refuses by name instead of the caller saying "no such file".
bool file_exists(const std::string& path);

// Calls write(out) on a stream to "<path>.tmp.<pid>", then renames it to path. If write
// throws or the stream fails, the temporary file is removed and the error propagates. A path
// that is a symbolic link replaces the file the link names; one that is a device or a pipe
// (/dev/null, a FIFO) is written in place; a directory is refused (kInvalidArgument).
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);

// What write_file_atomic(path) would refuse, found without writing anything: commands check
// their outputs before slow work. A new file is tried (the temporary name, created and removed).
void check_output_file(const std::string& path);

// A directory path can be made at (or an existing one); kInvalidArgument "WHAT PATH: ..." naming
// the reason otherwise. Nothing is left behind.
void check_output_dir(const std::string& path, const std::string& what);

// Same, for a string.
void write_text_atomic(const std::string& path, const std::string& text);

// Joins a directory and a file name with one '/'.
std::string path_join(const std::string& dir, const std::string& name);

}  // namespace staticlm
