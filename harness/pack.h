// Packed run folders: records.jsonl and profiles.jsonl gzip-compressed to <name>.gz (about a tenth of the
// size), so that shipped runs stay small in git and in the working tree copied to the GPU machine (64 MiB
// at most). Every reader takes either form (read_records); what appends to them (a resumed sweep,
// `convtune profile`) unpacks the folder first. Live sweeps always write the plain files.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace convtune {

// One file converted, with its sizes before and after.
struct ConvertedFile {
  std::filesystem::path from, to;
  std::uintmax_t from_bytes = 0, to_bytes = 0;
};

// What pack_run / unpack_run refuse, checked without changing anything (so that a command given several
// folders changes none when one is refused): InputError naming the folder.
void check_packable(const std::filesystem::path& folder);
void check_unpackable(const std::filesystem::path& folder);

// Each plain file: <name>.gz.tmp written, read back and compared with it, renamed to <name>.gz, and only
// then the plain file removed. Returns the files converted: none when the folder is already packed.
// InputError: not a run folder, no records in either form, a sweep's claims/ there (it is running or was
// killed: it would append to a file packed away), or convtune built without zlib.
std::vector<ConvertedFile> pack_run(const std::filesystem::path& folder);

// The reverse, with the same care: each <name>.gz whose plain file is missing. None when the folder is not
// packed. A file in both forms is left as it is (readers take the plain one; pack replaces the .gz), unless
// the plain one lacks some of the packed one's records: then both are refused, by the checks above too.
std::vector<ConvertedFile> unpack_run(const std::filesystem::path& folder);

// Some file of the folder is there only as <name>.gz.
bool is_packed(const std::filesystem::path& folder);

// "records.jsonl (15.2 MB -> 1.3 MB), profiles.jsonl (...)": the plain files' names.
std::string describe_converted(const std::vector<ConvertedFile>& files);

}  // namespace convtune
