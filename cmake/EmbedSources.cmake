# embed_sources(<out.cpp> <files...>): writes a C++ file holding each file's text as a raw string,
# looked up by file name (convtune::embedded_source("conv2d.cuh")).
function(embed_sources out)
  set(body "#include <map>\n#include <string>\nnamespace convtune {\nconst std::map<std::string, std::string>& embedded_sources() {\n  static const std::map<std::string, std::string> sources = {\n")
  foreach(f ${ARGN})
    get_filename_component(name ${f} NAME)
    file(READ ${f} text)
    string(APPEND body "    {\"${name}\", R\"CONVTUNE_EMBED(${text})CONVTUNE_EMBED\"},\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${f})
  endforeach()
  string(APPEND body "  };\n  return sources;\n}\n}  // namespace convtune\n")
  file(WRITE ${out}.tmp "${body}")
  file(COPY_FILE ${out}.tmp ${out} ONLY_IF_DIFFERENT)
endfunction()
