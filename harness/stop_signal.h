// SIGINT and SIGTERM ask a sweep to stop after its current candidates. The supervisor and each worker
// listen while they run; in one process (--in-process) they share the one flag.
#pragma once

namespace convtune {

// Whether SIGINT or SIGTERM came since the latest StopSignals began listening.
bool stop_requested();

// Clears the flag and installs the handlers while it lives; the old handlers come back after. With
// keep_after_stop they stay once a stop came: a worker's supervisor forwards the signal too, and it must
// not kill the worker while it finishes.
class StopSignals {
 public:
  explicit StopSignals(bool keep_after_stop = false);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  bool keep_after_stop_;
  void (*old_int_)(int);
  void (*old_term_)(int);
};

}  // namespace convtune
