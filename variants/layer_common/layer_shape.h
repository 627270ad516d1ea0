// The NCHW shape of the convolution-layer families (layer_fwd, layer_bwd_data, layer_bwd_filter,
// layer_pool), in cuDNN's naming: input x is n x c x h x w, the filter k x c x r x s, zero padding
// pad_h/pad_w, strides u/v, dilation 1, output n x k x P x Q with the floor formula
//   P = (h + 2 pad_h - r) / u + 1,   Q = (w + 2 pad_w - s) / v + 1.
// Pooling has no k: its window is r x s and its output keeps the c maps.
// It lives in layer_fwd, the family that defines the operation; the other three folders include it from
// here so that all four parse, check and index a shape one way (copies would drift apart). The index
// helpers are host and device code, so the CPU tests run the very arithmetic the GPU references run.
#pragma once
#include <cstdint>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness/error.h"
#include "harness/problem.h"

#if defined(__CUDACC__)
#define LAYER_HOST_DEVICE __host__ __device__
#else
#define LAYER_HOST_DEVICE
#endif

namespace convtune {

// The three convolution passes, numbered as the kernels' PASS define numbers them.
enum class LayerPass : int { forward = 0, bwd_data = 1, bwd_filter = 2 };

inline const char* layer_pass_name(LayerPass pass) {
  return pass == LayerPass::forward ? "forward" : pass == LayerPass::bwd_data ? "backward-data" : "backward-filter";
}

// Coordinates of one element of a 4D tensor: (image or output map, map, row, column).
struct Nchw {
  int64_t n, c, y, x;
};

// Typed view of a layer problem. Valid (P, Q >= 1, sizes in range) once the problem passed check().
struct LayerShape {
  int64_t n, c, h, w, k, r, s, pad_h, pad_w, u, v, p, q;

  explicit LayerShape(const Problem& pr)
      : n(pr.at("n")), c(pr.at("c")), h(pr.at("h")), w(pr.at("w")),
        k(pr.dims.count("k") ? pr.at("k") : pr.at("c")),  // pooling: one output map per input map
        r(pr.at("r")), s(pr.at("s")), pad_h(pr.at("pad_h")), pad_w(pr.at("pad_w")), u(pr.at("u")),
        v(pr.at("v")), p(output_extent(h, pad_h, r, u)), q(output_extent(w, pad_w, s, v)) {}

  // C++ division truncates toward zero: a negative span would invent one output row, so it gives none.
  LAYER_HOST_DEVICE static int64_t output_extent(int64_t in, int64_t pad, int64_t taps, int64_t stride) {
    const int64_t span = in + 2 * pad - taps;
    return span < 0 ? 0 : span / stride + 1;
  }

  LAYER_HOST_DEVICE int64_t x_elements() const { return n * c * h * w; }
  LAYER_HOST_DEVICE int64_t filter_elements() const { return k * c * r * s; }
  LAYER_HOST_DEVICE int64_t y_elements() const { return n * k * p * q; }

  LAYER_HOST_DEVICE int64_t x_index(int64_t ni, int64_t ci, int64_t yi, int64_t xi) const {
    return ((ni * c + ci) * h + yi) * w + xi;
  }
  LAYER_HOST_DEVICE int64_t filter_index(int64_t ki, int64_t ci, int64_t i, int64_t j) const {
    return ((ki * c + ci) * r + i) * s + j;
  }
  LAYER_HOST_DEVICE int64_t y_index(int64_t ni, int64_t ki, int64_t pi, int64_t qi) const {
    return ((ni * k + ki) * p + pi) * q + qi;
  }
  LAYER_HOST_DEVICE Nchw x_coords(int64_t index) const { return split(index, c, h, w); }
  LAYER_HOST_DEVICE Nchw filter_coords(int64_t index) const { return split(index, c, r, s); }  // (k, c, i, j)
  LAYER_HOST_DEVICE Nchw y_coords(int64_t index) const { return split(index, k, p, q); }

  // The input pixel under filter tap (i, j) of output (pi, qi); outside [0, h) x [0, w) it is padding.
  LAYER_HOST_DEVICE int64_t in_row(int64_t pi, int64_t i) const { return pi * u - pad_h + i; }
  LAYER_HOST_DEVICE int64_t in_col(int64_t qi, int64_t j) const { return qi * v - pad_w + j; }
  LAYER_HOST_DEVICE bool inside(int64_t yi, int64_t xi) const { return yi >= 0 && yi < h && xi >= 0 && xi < w; }

 private:
  LAYER_HOST_DEVICE static Nchw split(int64_t index, int64_t maps, int64_t rows, int64_t cols) {
    const int64_t col = index % cols, row = (index / cols) % rows, map = (index / cols / rows) % maps;
    return {index / cols / rows / maps, map, row, col};
  }
};

// The shape dims of every layer family, in this order. Pooling has no k, and no default stride: PyTorch's
// default there is the window itself, which a fixed default cannot say, so the stride is always explicit.
inline std::vector<DimSpec> layer_shape_dims(bool pooling) {
  const char* taps = pooling ? "window" : "filter";
  std::vector<DimSpec> d = {{"n", 1, 1 << 16, "images in the batch"},
                            {"c", 1, 1 << 16, "input maps (channels)"},
                            {"h", 1, 1 << 16, "input height"},
                            {"w", 1, 1 << 16, "input width"}};
  if (!pooling) d.push_back({"k", 1, 1 << 16, "output maps (filters)"});
  d.push_back({"r", 1, 64, std::string(taps) + " height"});
  d.push_back({"s", 1, 64, std::string(taps) + " width"});
  d.push_back({"pad_h", 0, 63, "zero padding above and below (< r)", true, 0});
  d.push_back({"pad_w", 0, 63, "zero padding left and right (< s)", true, 0});
  d.push_back({"u", 1, 64, "vertical stride", !pooling, 1});
  d.push_back({"v", 1, 64, "horizontal stride", !pooling, 1});
  return d;
}

// A complete problem from values in dims() order (the families' test shapes list them compactly);
// validated, so defaults are filled and a bad test shape fails loudly.
inline Problem layer_problem(const std::string& family, const std::vector<DimSpec>& dims,
                             const std::vector<int64_t>& values) {
  Problem pr{family, {}};
  for (size_t i = 0; i < values.size(); ++i) pr.dims[dims.at(i).name] = values[i];
  validate(pr, family + ".test_problems");
  return pr;
}

namespace layer_detail {

constexpr double kMaxTensorElements = 2147483648.0;  // 2^31: int32 indexing in kernels and libraries

inline void check_pad(const std::string& where, const char* pad, int64_t pad_value, const char* taps,
                      int64_t taps_value) {
  if (pad_value >= taps_value)
    throw InputError(where + "." + pad + ": " + std::to_string(pad_value) + " >= " + taps + " = " +
                     std::to_string(taps_value) + "; allowed: 0.." + std::to_string(taps_value - 1) +
                     " (padding smaller than the " + taps + " extent)");
}

inline void check_not_empty(const std::string& where, const char* in, int64_t in_value, const char* pad,
                            int64_t pad_value, const char* taps, int64_t taps_value, const char* out) {
  if (in_value + 2 * pad_value < taps_value)
    throw InputError(where + "." + in + ": " + std::to_string(in_value) + " gives an empty output (" + out +
                     " < 1: " + in + " + 2*" + pad + " = " + std::to_string(in_value + 2 * pad_value) + " < " +
                     taps + " = " + std::to_string(taps_value) + "); allowed: " + in + " + 2*" + pad +
                     " >= " + taps);
}

// Products in double: four dims of up to 2^16 overflow int64.
inline void check_elements(const std::string& where, const std::vector<std::string>& dims, const char* tensor,
                           const char* formula, double elements) {
  if (elements < kMaxTensorElements) return;
  std::string fields;
  for (const auto& d : dims) fields += (fields.empty() ? "" : ", ") + where + "." + d;
  std::ostringstream o;
  o << fields << ": " << tensor << " (" << formula << ") would have " << std::fixed << std::setprecision(0)
    << elements << " elements; allowed: fewer than 2^31 = 2147483648 per tensor";
  throw InputError(o.str());
}

}  // namespace layer_detail

// The rules every layer family shares: padding smaller than the filter (or window), a non-empty output,
// every tensor under 2^31 elements. Errors name `where`.<dim> and what is allowed.
inline void check_layer_shape(const Problem& pr, const std::string& where) {
  using namespace layer_detail;
  const LayerShape l(pr);
  const bool pooling = !pr.dims.count("k");
  check_pad(where, "pad_h", l.pad_h, "r", l.r);
  check_pad(where, "pad_w", l.pad_w, "s", l.s);
  check_not_empty(where, "h", l.h, "pad_h", l.pad_h, "r", l.r, "P");
  check_not_empty(where, "w", l.w, "pad_w", l.pad_w, "s", l.s, "Q");
  const double n = double(l.n), c = double(l.c), k = double(l.k);
  check_elements(where, {"n", "c", "h", "w"}, "input x", "n*c*h*w", n * c * double(l.h) * double(l.w));
  if (pooling) {
    check_elements(where, {"n", "c", "h", "w"}, "output y", "n*c*P*Q", n * c * double(l.p) * double(l.q));
    return;
  }
  check_elements(where, {"k", "c", "r", "s"}, "filter", "k*c*r*s", k * c * double(l.r) * double(l.s));
  check_elements(where, {"n", "k", "h", "w"}, "output y", "n*k*P*Q", n * k * double(l.p) * double(l.q));
}

}  // namespace convtune
