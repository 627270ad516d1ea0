#include "harness/pack.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "harness/error.h"
#include "harness/gzip_file.h"
#include "harness/records.h"

namespace convtune {

namespace fs = std::filesystem;

namespace {

// The files of a run folder that pack compresses: the large, append-only ones.
const char* const kPackedFiles[] = {"records.jsonl", "profiles.jsonl"};

std::string read_plain_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::string text(std::istreambuf_iterator<char>(in), {});  // an empty file is "", not a failure
  if (in.bad()) throw std::runtime_error("cannot read " + path.string());
  return text;
}

void write_plain_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!(out << text) || !out.flush()) throw std::runtime_error("cannot write " + path.string());
}

// fsync of a file or a folder: a file's data reaches the disk before its rename, a rename before the
// removal of the file it replaces, so that a crash never leaves neither form.
void sync_to_disk(const fs::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const bool synced = fd >= 0 && fsync(fd) == 0;
  if (fd >= 0) close(fd);
  if (!synced) throw std::runtime_error("cannot sync " + path.string() + " to disk");
}

// `from` into `to` (compressed or decompressed) through `to`.tmp: written, synced, read back and compared
// with what `from` holds, renamed to `to`, and only then `from` removed.
ConvertedFile convert(const fs::path& from, const fs::path& to, bool compress) {
  const std::string text = compress ? read_plain_file(from) : read_gzip_file(from);
  const fs::path tmp = to.string() + ".tmp";
  try {
    if (compress) write_gzip_file(tmp, text);
    else write_plain_file(tmp, text);
    sync_to_disk(tmp);
    if ((compress ? read_gzip_file(tmp) : read_plain_file(tmp)) != text)
      throw std::runtime_error(tmp.string() + " did not read back as " + from.string() + " holds it; " +
                               from.string() + " is left as it was");
    fs::rename(tmp, to);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);  // no half-written file is left beside the run's own
    throw;
  }
  sync_to_disk(to.parent_path());
  ConvertedFile out{from, to, fs::file_size(from), fs::file_size(to)};
  fs::remove(from);
  return out;
}

}  // namespace

namespace {
void require_run_folder(const fs::path& folder, const std::string& command) {
  if (!fs::exists(folder / "summary.json"))
    throw InputError(command + ": " + folder.string() + " is not a run folder (no summary.json)");
  if (!records_file_exists(folder / "records.jsonl"))
    throw InputError(command + ": " + folder.string() + " has no records.jsonl, nor records.jsonl.gz");
}
}  // namespace

namespace {
// Both forms of a file where the plain one lacks some of the packed one's records: InputError from
// stored_records_file, before anything changes.
void require_forms_agree(const fs::path& folder) {
  for (const char* name : kPackedFiles) stored_records_file(folder / name);
}
}  // namespace

void check_packable(const fs::path& folder) {
  require_run_folder(folder, "pack");
  require_forms_agree(folder);
  if (fs::exists(folder / "claims"))
    throw InputError("pack: " + folder.string() + " has claims/: a sweep is running there, or was killed "
                     "(finish it with convtune sweep --resume); it would append to a records.jsonl packed away");
}

void check_unpackable(const fs::path& folder) {
  require_run_folder(folder, "unpack");
  require_forms_agree(folder);
}

std::vector<ConvertedFile> pack_run(const fs::path& folder) {
  check_packable(folder);
  require_zlib("gzip " + (folder / "records.jsonl").string());
  std::vector<ConvertedFile> out;
  for (const char* name : kPackedFiles)
    if (fs::exists(folder / name)) out.push_back(convert(folder / name, packed_path(folder / name), true));
  return out;
}

std::vector<ConvertedFile> unpack_run(const fs::path& folder) {
  check_unpackable(folder);
  std::vector<ConvertedFile> out;
  for (const char* name : kPackedFiles)
    if (stored_records_file(folder / name) != folder / name) {
      require_zlib("gunzip " + packed_path(folder / name).string());
      out.push_back(convert(packed_path(folder / name), folder / name, false));
    }
  return out;
}

bool is_packed(const fs::path& folder) {
  for (const char* name : kPackedFiles)
    if (stored_records_file(folder / name) != folder / name) return true;
  return false;
}

std::string describe_converted(const std::vector<ConvertedFile>& files) {
  auto size = [](std::uintmax_t bytes) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << double(bytes) / (bytes < 1000000 ? 1e3 : 1e6)
         << (bytes < 1000000 ? " kB" : " MB");
    return text.str();
  };
  std::string out;
  for (const ConvertedFile& f : files) {
    const fs::path& plain = f.from.extension() == ".gz" ? f.to : f.from;
    out += (out.empty() ? "" : ", ") + plain.filename().string() + " (" + size(f.from_bytes) + " -> " +
           size(f.to_bytes) + ")";
  }
  return out;
}

}  // namespace convtune
