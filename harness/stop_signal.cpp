#include "harness/stop_signal.h"

#include <atomic>
#include <csignal>

namespace convtune {

namespace {

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

}  // namespace

bool stop_requested() { return g_stop_signal != 0; }

StopSignals::StopSignals(bool keep_after_stop) : keep_after_stop_(keep_after_stop) {
  g_stop_signal = 0;
  old_int_ = std::signal(SIGINT, on_stop_signal);
  old_term_ = std::signal(SIGTERM, on_stop_signal);
}

StopSignals::~StopSignals() {
  if (keep_after_stop_ && stop_requested()) return;
  std::signal(SIGINT, old_int_);
  std::signal(SIGTERM, old_term_);
}

}  // namespace convtune
