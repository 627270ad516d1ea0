// Shared machinery of the conv2d_separable variants: their kernels (kernels/separable_*.cuh) are compiled with
// NVRTC with the radius and the tiling as compile-time defines; every kernel is `name(in, out, h, w)`, and a
// plan runs one or more of them in turn (steps), each from the image or a float scratch array to the scratch
// or the output. The two filter vectors go to constant memory (c_col, c_row) in bind, once per filter.
#pragma once
#include <string>
#include <vector>

#include "harness/variant.h"
#include "variants/conv2d_separable/separable.h"

namespace convtune {

// The tiling every separable kernel shares: BLOCK_X x BLOCK_Y threads, each computing PX outputs along x
// (also the vector width of its shared-memory loads) of PY rows; the block's output tile is tw() x th().
struct SeparableTiling {
  int64_t block_x, block_y, px, py;
  explicit SeparableTiling(const Config& c);
  int64_t tw() const { return block_x * px; }
  int64_t th() const { return block_y * py; }
  int64_t threads() const { return block_x * block_y; }
  // Host mirrors of separable_common.cuh's LEAD, WIN and ROW_PITCH: the row pass's tile in floats per row.
  static int64_t lead(int64_t r) { return (r + 3) / 4 * 4; }
  int64_t window(int64_t r) const { return (lead(r) - r + px + 2 * r + px - 1) / px * px; }
  int64_t row_pitch(int64_t r) const { return (tw() - px + window(r) + 3) / 4 * 4; }
  std::vector<std::string> defines(int64_t r) const;
};

// One kernel launch of a plan. Its input is the image or the scratch array, its output the scratch array or
// the problem's output.
struct SeparableStep {
  std::string kernel;
  dim3 grid, block;
  int64_t smem = 0;  // dynamic shared memory, bytes
  bool from_scratch = false, to_scratch = false;
};

class JitSeparableVariant : public Variant {
 public:
  std::string family() const override { return kConv2dSeparable; }
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override;
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev,
                                JitCache& jit) const override;
  virtual std::vector<SeparableStep> steps(const Separable& p, const SeparableTiling& t) const = 0;

 protected:
  virtual std::string source() const = 0;
  virtual std::vector<json> py_values() const = 0;  // outputs per thread along y: the variant's own choice
  virtual bool needs_scratch() const { return false; }  // an h x w float intermediate in global memory
};

inline unsigned blocks_for(int64_t n, int64_t per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

}  // namespace convtune
