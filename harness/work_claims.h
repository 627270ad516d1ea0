// Dynamic hand-out of a sweep's work to the workers of several GPUs sharing one run folder. Unit u is
// claimed by creating <folder>/claims/unit-<u> as a hard link of a file naming the claiming GPU: link(2)
// is atomic, so each unit has one owner and a claim is never seen half-written. Claims belong to a GPU,
// not a process: a restarted worker of that GPU finishes them first.
#pragma once
#include <cstddef>
#include <filesystem>
#include <optional>
#include <vector>

namespace convtune {

class WorkClaims {
 public:
  WorkClaims(const std::filesystem::path& folder, int gpu, size_t units);
  ~WorkClaims();  // removes its link source, not its claims
  WorkClaims(const WorkClaims&) = delete;
  WorkClaims& operator=(const WorkClaims&) = delete;

  // Units this GPU's earlier workers claimed, ascending (after a crash: the one it was in, and finished
  // ones, which replay from their records at no cost).
  std::vector<size_t> held() const;
  // The next unit nobody holds, or nullopt when every unit is held. Walks the units in order, then once
  // more from the start for units handed back by a GPU that stopped.
  std::optional<size_t> claim_next();

  // A GPU that stopped for good hands its units back. Returns how many.
  static size_t release(const std::filesystem::path& folder, int gpu);
  // Drops every claim (a resumed run hands all its units out again; the finished ones replay).
  static void clear(const std::filesystem::path& folder);
  static std::filesystem::path dir(const std::filesystem::path& folder) { return folder / "claims"; }

 private:
  bool try_claim(size_t unit);

  std::filesystem::path dir_, source_;
  int gpu_;
  size_t units_, cursor_ = 0;
  bool rescanned_ = false;
};

}  // namespace convtune
