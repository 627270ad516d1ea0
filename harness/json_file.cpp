#include "harness/json_file.h"

#include <fstream>
#include <stdexcept>

#include "harness/error.h"

namespace convtune {

void write_text_atomically(const std::filesystem::path& path, const std::string& text) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!(out << text) || !out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

void write_json_atomically(const std::filesystem::path& path, const json& j) {
  write_text_atomically(path, j.dump(2) + "\n");
}

json read_json(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) throw InputError(path.string() + ": is a directory, not a JSON file");
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot be read");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(path.string() + ": not valid JSON: " + e.what());
  }
}

}  // namespace convtune
