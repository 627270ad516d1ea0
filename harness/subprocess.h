// Child processes started with an argument vector, never through a shell: a path holding quotes,
// spaces or `$(...)` reaches the program as one argument, as typed.
#pragma once
#include <string>
#include <vector>

namespace convtune {

// Runs args[0] (looked up on PATH when it has no '/') with args[1..], sharing our stdin, stdout and
// stderr, and waits for it. Returns its exit status, 128 + the signal that ended it, or 127 when it
// could not be started (as a shell would say).
int run_program(const std::vector<std::string>& args);

}  // namespace convtune
