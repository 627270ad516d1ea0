#include "harness/records.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

#include "harness/error.h"
#include "harness/gzip_file.h"
#include "harness/params.h"

namespace convtune {

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string candidate_name(const std::string& variant, const json& config) {
  const std::string cfg = config_string(config);
  return cfg.empty() ? variant : variant + "[" + cfg + "]";
}

std::string record_key(const json& record) {
  // A brief (screening) measurement and the full one of the same candidate are different records.
  const bool brief = record.value("fidelity", "full") == "brief";
  return record.at("problem_key").get<std::string>() + " " + record.at("candidate").get<std::string>() +
         (brief ? " @brief" : "");
}

RecordWriter::RecordWriter(const std::filesystem::path& path) : path_(path) {
  // A new plain file beside a packed one would hide it from readers (they take the plain file), and a
  // later pack would replace the .gz with it: writers unpack a packed run first (unpack_run).
  if (!std::filesystem::exists(path) && std::filesystem::exists(packed_path(path)))
    throw InputError("cannot append to " + path.string() + ": the run is packed (" + packed_path(path).string() +
                     "); convtune unpack it first");
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);  // read: ends_mid_line
  if (fd_ < 0) throw std::runtime_error("cannot open " + path.string() + " for appending");
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) close(fd_);
}

namespace {

// Holds an exclusive flock on `fd` for its lifetime.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw std::runtime_error(std::string("cannot lock a records file: ") + std::strerror(errno));
  }
  ~FileLock() { flock(fd_, LOCK_UN); }

 private:
  int fd_;
};

// Whether the file ends inside a line: a writer killed mid-record. The next record then starts on a new
// line, so that it is not lost with the torn one.
bool ends_mid_line(int fd) {
  struct stat st {};
  char last = '\n';
  return fstat(fd, &st) == 0 && st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n';
}

}  // namespace

void RecordWriter::append(const json& record) {
  std::string line = record.dump() + "\n";
  {
    FileLock lock(fd_);
    if (ends_mid_line(fd_)) line.insert(line.begin(), '\n');
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("cannot write to " + path_.string() + ": " + std::strerror(errno));
      done += size_t(n);
    }
  }
  fsync(fd_);
}

namespace {

// A field that the commands read, of the wrong kind: an InputError naming the line and the field, for a
// record hand-edited or written by something else. (A torn line is not this: it does not parse.)
void check_record_fields(const json& j, const std::string& where) {
  auto refuse = [&](const std::string& field, const json& v, const char* allowed) {
    throw InputError(where + ": " + field + " is " + v.dump() + "; allowed: " + allowed);
  };
  for (const char* key : {"problem_key", "candidate", "status"})
    if (!j[key].is_string()) refuse(key, j[key], "a string");
  for (const char* key : {"variant", "family"})  // null in a profile of a record without them
    if (j.contains(key) && !j[key].is_string() && !j[key].is_null()) refuse(key, j[key], "a string");
  for (const char* key : {"problem", "config"})
    if (j.contains(key) && !j[key].is_object()) refuse(key, j[key], "an object");
  if (!j.contains("time")) return;  // a profile (profiles.jsonl) carries time_ms instead
  const json& time = j["time"];
  if (!time.is_object()) refuse("time", time, "an object {\"median_ms\": milliseconds, ...}");
  const json median = time.value("median_ms", json());
  if (j["status"] == status::ok && (!median.is_number() || median.get<double>() < 0))
    refuse("time.median_ms", median, "a non-negative number of milliseconds");
}

// One line of a records file into `out`: a record, or a torn line (a writer killed mid-record: the JSON
// ends early) as a problem naming the line. Any other line was not written by convtune: an InputError.
void parse_record_line(const std::string& line, const std::string& where, ReadResult& out) {
  if (line.empty()) return;
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    if (e.byte > line.size()) {  // failed at the end of input (counted one past the last byte): torn
      out.problems.push_back(where + ": " + e.what());
      return;
    }
    throw InputError(where + ": not JSON at byte " + std::to_string(e.byte) + "; allowed: one record a line, as "
                     "convtune wrote it (a line cut short by a crash is skipped with a warning)");
  } catch (const json::exception& e) {  // a number past double's range (1e400), ...
    throw InputError(where + ": not a record convtune wrote (" + std::string(e.what()) + ")");
  }
  if (!j.is_object() || !j.contains("problem_key") || !j.contains("candidate") || !j.contains("status"))
    throw InputError(where + ": not a record; allowed: an object with problem_key, candidate and status");
  check_record_fields(j, where);
  out.records.push_back(std::move(j));
}

ReadResult parse_record_lines(std::istream& in, const std::filesystem::path& where) {
  ReadResult out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) parse_record_line(line, where.string() + ":" + std::to_string(++number), out);
  return out;
}

}  // namespace

std::filesystem::path packed_path(const std::filesystem::path& path) { return path.string() + ".gz"; }

namespace {
std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
}  // namespace

std::filesystem::path stored_records_file(const std::filesystem::path& path) {
  const auto gz = packed_path(path);
  const bool plain = std::filesystem::exists(path), packed = std::filesystem::exists(gz);
  if (plain && packed && zlib_available()) {  // rare: a pack cut short, then maybe appended to; anything else loses records
    const std::string lines = read_whole_file(path), packed_lines = read_gzip_file(gz);
    if (lines.compare(0, packed_lines.size(), packed_lines) != 0)
      throw InputError(path.string() + " and " + gz.string() + " both exist, and the plain file does not begin with "
                       "the packed one's records; allowed: one of them, or the plain one holding the packed one's "
                       "records and more (move the one that is not this run's away)");
  }
  return !plain && packed ? gz : path;
}

bool records_file_exists(const std::filesystem::path& path) {
  return std::filesystem::exists(stored_records_file(path));
}

ReadResult read_records(const std::filesystem::path& path) {
  const auto stored = stored_records_file(path);
  if (stored != path) {
    std::istringstream in(read_gzip_file(stored));
    return parse_record_lines(in, stored);
  }
  std::ifstream in(path);
  if (in) return parse_record_lines(in, path);
  if (std::filesystem::exists(path)) throw InputError(path.string() + ": cannot be read");
  throw InputError(path.string() + ": not found, nor " + packed_path(path).filename().string() + " (not a run folder?)");
}

ReadResult RecordFollower::read_new() {
  ReadResult out;
  std::ifstream in(path_, std::ios::binary);
  if (!in || !in.seekg(offset_)) return out;  // not written yet
  std::string line;
  while (std::getline(in, line) && !in.eof()) {  // eof: the last line has no newline yet
    offset_ += std::streamoff(line.size()) + 1;
    parse_record_line(line, path_.string() + ":" + std::to_string(++line_), out);
  }
  return out;
}

std::set<std::string> recorded_keys(const std::vector<json>& records) {
  std::set<std::string> keys;
  for (const auto& r : records) keys.insert(record_key(r));
  return keys;
}

}  // namespace convtune
