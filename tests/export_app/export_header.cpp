// convtune_export_header <dispatch.json> <out.h>: writes the header `convtune export` writes.
#include <fstream>
#include <iostream>

#include "harness/dispatch.h"
#include "harness/json_file.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: convtune_export_header <dispatch.json> <out.h>\n";
    return 2;
  }
  try {
    const std::string header = convtune::make_header(convtune::read_json(argv[1]));
    std::ofstream out(argv[2], std::ios::binary);
    if (!(out << header) || !out.flush()) throw std::runtime_error(std::string("cannot write ") + argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "convtune_export_header: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
