// Records: one JSON object per candidate x problem, appended to records.jsonl and flushed as each one
// completes, so a crash loses nothing and a rerun can resume.
#pragma once
#include <ios>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

constexpr int kSchemaVersion = 1;

// Statuses a record can carry.
namespace status {
constexpr const char* ok = "ok";
constexpr const char* skipped = "skipped";
constexpr const char* compile_error = "compile_error";
constexpr const char* runtime_error = "runtime_error";
constexpr const char* wrong_result = "wrong_result";
constexpr const char* timeout = "timeout";
}  // namespace status

// A failure that marks the candidate as never safe (wrong_result or runtime_error on any problem): a family's
// safe default and the dispatch model's candidates avoid it; not merely absent, as a refusal is.
inline bool is_wrong(const json& r) {
  const std::string st = r.value("status", "");
  return st == status::wrong_result || st == status::runtime_error;
}

// An ok record's median time in ms (its time block's median_ms).
inline double record_median_ms(const json& r) { return r.at("time").at("median_ms").get<double>(); }

// UTC time as 2026-11-22T05:07:09Z, for records and summaries.
std::string now_iso();

// "conv2d.tiled[tile_x=32,tile_y=8]": a name that explains itself in any table.
std::string candidate_name(const std::string& variant, const json& config);
// What identifies a measurement for resume: problem key + candidate name (+ " @brief" for screening).
std::string record_key(const json& record);

// Several processes may append to one file (the workers of a multi-GPU sweep): each record is one
// write(2) under an exclusive flock on an O_APPEND descriptor, so lines never interleave. Refuses
// (InputError) a file that exists only packed (<name>.gz): unpack the run first.
class RecordWriter {
 public:
  explicit RecordWriter(const std::filesystem::path& path);  // appends
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  void append(const json& record);  // one line, synced to disk

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

struct ReadResult {
  std::vector<json> records;
  std::vector<std::string> problems;  // lines that could not be read, with their line numbers
};
// Reads every complete record; a torn last line (a crash mid-write) is reported, not fatal. Where `path`
// is missing but `path`.gz is there (a packed run folder, see harness/pack.h), reads that.
ReadResult read_records(const std::filesystem::path& path);
// `path`.gz: where a packed run folder keeps `path` (harness/pack.h).
std::filesystem::path packed_path(const std::filesystem::path& path);
// The file that holds `path`'s lines: `path`, or `path`.gz when only that is there. Where both are (a pack cut
// short after its rename, perhaps appended to since) readers take the plain file, which must begin with the
// packed one's lines: InputError naming both where it does not (the plain file would hide records).
std::filesystem::path stored_records_file(const std::filesystem::path& path);
// Whether `path` or `path`.gz is there.
bool records_file_exists(const std::filesystem::path& path);
std::set<std::string> recorded_keys(const std::vector<json>& records);

// Follows a records file that others append to: each call returns the records completed since the last
// one. A line still being written (no newline yet) waits for a later call.
class RecordFollower {
 public:
  explicit RecordFollower(std::filesystem::path path) : path_(std::move(path)) {}
  ReadResult read_new();

 private:
  std::filesystem::path path_;
  std::streamoff offset_ = 0;
  int line_ = 0;
};

}  // namespace convtune
