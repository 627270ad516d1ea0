// Whole files in gzip form, through zlib. zlib is optional (CONVTUNE_HAVE_ZLIB, see CMakeLists.txt): built
// without it, these throw InputError saying how to get it, and nothing else in convtune needs it.
#pragma once
#include <filesystem>
#include <string>

namespace convtune {

// Throws that InputError when built without zlib; `instead` is what the user can do by hand ("gunzip <file>").
void require_zlib(const std::string& instead);
// Whether this convtune reads and writes .gz files.
bool zlib_available();
// The decompressed text of a .gz file. A truncated or corrupt one throws InputError naming it.
std::string read_gzip_file(const std::filesystem::path& path);
// `text` compressed into `path` (replaced if there).
void write_gzip_file(const std::filesystem::path& path, const std::string& text);

}  // namespace convtune
