#include "harness/gzip_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "harness/error.h"

#ifdef CONVTUNE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace convtune {

#ifdef CONVTUNE_HAVE_ZLIB

namespace {

constexpr size_t kChunk = size_t(1) << 20;

// zlib's message for the last error on `file` (errno's where zlib says the system failed).
std::string gz_error(gzFile file) {
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  return code == Z_ERRNO ? std::strerror(errno) : message;
}

}  // namespace

std::string read_gzip_file(const std::filesystem::path& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  if (!in) throw InputError(path.string() + ": cannot be read");
  std::string text, chunk(kChunk, '\0');
  int n = 0;
  while ((n = gzread(in, chunk.data(), unsigned(chunk.size()))) > 0) {
    if (gzdirect(in)) {  // zlib passes a file without the gzip header through as it is: an LFS pointer, say
      gzclose(in);
      throw InputError(path.string() + ": not a gzip file");
    }
    text.append(chunk.data(), size_t(n));
  }
  // A truncated file ends with n == 0 and an error ("unexpected end of file"), not with n < 0.
  int code = Z_OK;
  gzerror(in, &code);
  const std::string why = code == Z_OK ? "" : gz_error(in);
  gzclose(in);
  if (!why.empty()) throw InputError(path.string() + ": not a readable gzip file (" + why + ")");
  return text;
}

void write_gzip_file(const std::filesystem::path& path, const std::string& text) {
  gzFile out = gzopen(path.c_str(), "wb");
  if (!out) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
  for (size_t done = 0; done < text.size();) {
    const unsigned n = unsigned(std::min(kChunk, text.size() - done));
    if (gzwrite(out, text.data() + done, n) != int(n)) {
      const std::string why = gz_error(out);
      gzclose(out);
      throw std::runtime_error("cannot write " + path.string() + ": " + why);
    }
    done += n;
  }
  if (gzclose(out) != Z_OK) throw std::runtime_error("cannot write " + path.string() + " (closing it failed)");
}

void require_zlib(const std::string&) {}

bool zlib_available() { return true; }

#else

bool zlib_available() { return false; }

void require_zlib(const std::string& instead) {
  throw InputError("this convtune was built without zlib (install zlib1g-dev and rebuild, or " + instead + ")");
}

std::string read_gzip_file(const std::filesystem::path& path) {
  require_zlib("gunzip " + path.string());
  return "";
}

void write_gzip_file(const std::filesystem::path& path, const std::string&) {
  require_zlib("make " + path.string() + " with gzip by hand");
}

#endif

}  // namespace convtune
