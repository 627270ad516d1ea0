// Kernel sources added at run time (a plug-in's, harness/plugin.h): compiled and cached by the JIT
// (harness/jit.h) as the embedded ones are, found by embedded_source() under their name.
#pragma once
#include <map>
#include <string>

namespace convtune {

// `headers` are the files the source may #include by name besides the embedded ones. Adding a name again with
// other texts is a logic_error: the cache key would no longer say what was compiled.
void add_runtime_source(const std::string& name, const std::string& text,
                        const std::map<std::string, std::string>& headers);

}  // namespace convtune
