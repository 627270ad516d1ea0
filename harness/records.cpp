#include "harness/records.h"

#include <unistd.h>

#include <ctime>
#include <fstream>

#include "harness/error.h"
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
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw std::runtime_error("cannot open " + path.string() + " for appending");
}

RecordWriter::~RecordWriter() {
  if (file_) std::fclose(file_);
}

void RecordWriter::append(const json& record) {
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw std::runtime_error("cannot write to " + path_.string());
  fsync(fileno(file_));
}

ReadResult read_records(const std::filesystem::path& path) {
  ReadResult out;
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot be read (no records.jsonl there?)");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    try {
      json j = json::parse(line);
      if (!j.is_object() || !j.contains("problem_key") || !j.contains("candidate") || !j.contains("status"))
        throw std::runtime_error("not a record (needs problem_key, candidate, status)");
      out.records.push_back(std::move(j));
    } catch (const std::exception& e) {
      out.problems.push_back(path.string() + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return out;
}

std::set<std::string> recorded_keys(const std::vector<json>& records) {
  std::set<std::string> keys;
  for (const auto& r : records) keys.insert(record_key(r));
  return keys;
}

}  // namespace convtune
