// The three convolution-layer passes as GEMMs D[m][n] = sum_t A(m,t) B(t,n): where each GEMM element
// lives in the NCHW tensors. Shared by the NVRTC kernel (layer_implicit_gemm.cuh, where the shape is a
// struct of compile-time constants) and the CPU test (a struct of run-time ints), so that the test
// evaluates the GEMM through these very functions against each family's reference.
//
// A gather is split in two: the part that depends only on the fixed row (m of A, n of B) is computed
// once per thread (Row/Col), the part that depends on t once per k-step (Tap). a_at/b_at give the
// element's offset and whether it is there at all (false: a zero of padding, a stride gap, or outside
// the GEMM; the offset is then meaningless); a_offset/b_offset fold the two into -1 for a zero. The shape members are lowercase: the kernel's
// -D defines (N, C, H, ...) would replace uppercase names.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define IGEMM_HD __host__ __device__ __forceinline__
#else
#define IGEMM_HD inline
#endif

namespace igemm {

// A filter of at most kMaskTaps taps is gathered through a bit mask per GEMM row of the taps that land
// inside the tensor (set once per row): an element then costs a shift and an add instead of four
// compares and an index computation. Bit 31 stays clear: the tap past the end of t points at it.
constexpr int kMaskTaps = 31;
constexpr int kNoTapBit = 31;

// a_offset/b_offset of a pass G from its a_at/b_at.
template <class G>
struct Offsets {
  template <class Shape, class Row, class Tap> static IGEMM_HD int a_offset(const Shape& s, const Row& a, const Tap& k) {
    int off;
    return G::a_at(s, a, k, off) ? off : -1;
  }
  template <class Shape, class Col, class Tap> static IGEMM_HD int b_offset(const Shape& s, const Col& b, const Tap& k) {
    int off;
    return G::b_at(s, b, k, off) ? off : -1;
  }
};

// forward: m = (img, p, q), n = k, t = (c, i, j).  A = x (gathered), B = filter, D = y.
struct FwdGemm : Offsets<FwdGemm> {
  static constexpr bool kAAlongM = true;  // consecutive m = consecutive q: coalesced along m
  // x offset of image img; top-left input pixel; with the mask: base + the top-left's offset, the taps inside
  struct Row { int base, y0, x0, off; unsigned mask; bool valid; };
  struct Col { int base; bool valid; };  // filter offset of map n
  struct Tap { int t, c, i, j, off, bit; bool valid; };  // off: c*h*w + i*w + j; bit: i*s + j
  template <class Shape> static IGEMM_HD bool masked(const Shape& s) { return s.r * s.s <= kMaskTaps; }

  template <class Shape> static IGEMM_HD int m_size(const Shape& s) { return s.n * s.p * s.q; }
  template <class Shape> static IGEMM_HD int n_size(const Shape& s) { return s.k; }
  template <class Shape> static IGEMM_HD int t_size(const Shape& s) { return s.c * s.r * s.s; }

  template <class Shape> static IGEMM_HD Row row(const Shape& s, int m) {
    const int q = m % s.q, p = (m / s.q) % s.p, img = m / (s.q * s.p);
    const int base = img * s.c * s.h * s.w, y0 = p * s.u - s.pad_h, x0 = q * s.v - s.pad_w;
    const bool valid = m < m_size(s);
    unsigned mask = 0;
    if (masked(s) && valid)
      for (int i = 0; i < s.r; ++i)
        for (int j = 0; j < s.s; ++j)
          if (y0 + i >= 0 && y0 + i < s.h && x0 + j >= 0 && x0 + j < s.w) mask |= 1u << (i * s.s + j);
    return {base, y0, x0, base + y0 * s.w + x0, mask, valid};
  }
  template <class Shape> static IGEMM_HD Col col(const Shape& s, int n) {
    return {n * t_size(s), n < n_size(s)};
  }
  template <class Shape> static IGEMM_HD Tap tap(const Shape& s, int t) {
    const int c = t / (s.r * s.s), rs = t - c * s.r * s.s, i = rs / s.s, j = rs - i * s.s;
    const bool valid = t < t_size(s);
    return {t, c, i, j, (c * s.h + i) * s.w + j, valid ? rs : kNoTapBit, valid};
  }
  template <class Shape> static IGEMM_HD bool a_at(const Shape& s, const Row& a, const Tap& k, int& off) {
    if (masked(s)) {
      off = a.off + k.off;
      return (a.mask >> k.bit) & 1u;
    }
    const int y = a.y0 + k.i, x = a.x0 + k.j;
    off = a.base + (k.c * s.h + y) * s.w + x;
    return a.valid && k.valid && y >= 0 && y < s.h && x >= 0 && x < s.w;
  }
  template <class Shape> static IGEMM_HD bool b_at(const Shape&, const Col& b, const Tap& k, int& off) {
    off = b.base + k.t;
    return b.valid && k.valid;
  }
  // D[m][n] lives at d_row(m) + n * d_col_stride.
  template <class Shape> static IGEMM_HD int d_row(const Shape& s, int m) {
    const int pq = m % (s.p * s.q), img = m / (s.p * s.q);
    return img * s.k * s.p * s.q + pq;
  }
  template <class Shape> static IGEMM_HD int d_col_stride(const Shape& s) { return s.p * s.q; }
};

// backward-data: m = (img, y, x), n = c, t = (k, i, j).  A = dy (gathered), B = filter, D = dx.
// dy[img, k, p, q] reaches dx[img, c, y, x] through tap (i, j) when p*u = y + pad_h - i (exactly).
struct BwdDataGemm : Offsets<BwdDataGemm> {
  static constexpr bool kAAlongM = true;  // consecutive m = consecutive x
  // dy offset of image img; y + pad_h, x + pad_w; with the mask (stride 1): base + yp*q + xp, the taps inside
  struct Row { int base, yp, xp, off; unsigned mask; bool valid; };
  struct Col { int base; bool valid; };  // filter offset of input map n within output map 0
  struct Tap { int k, i, j, off, bit; bool valid; };  // off: (k*p - i)*q - j; bit: i*s + j
  template <class Shape> static IGEMM_HD bool masked(const Shape& s) {
    return s.u == 1 && s.v == 1 && s.r * s.s <= kMaskTaps;
  }

  template <class Shape> static IGEMM_HD int m_size(const Shape& s) { return s.n * s.h * s.w; }
  template <class Shape> static IGEMM_HD int n_size(const Shape& s) { return s.c; }
  template <class Shape> static IGEMM_HD int t_size(const Shape& s) { return s.k * s.r * s.s; }

  template <class Shape> static IGEMM_HD Row row(const Shape& s, int m) {
    const int x = m % s.w, y = (m / s.w) % s.h, img = m / (s.w * s.h);
    const int base = img * s.k * s.p * s.q, yp = y + s.pad_h, xp = x + s.pad_w;
    const bool valid = m < m_size(s);
    unsigned mask = 0;
    if (masked(s) && valid)
      for (int i = 0; i < s.r; ++i)
        for (int j = 0; j < s.s; ++j)
          if (yp - i >= 0 && yp - i < s.p && xp - j >= 0 && xp - j < s.q) mask |= 1u << (i * s.s + j);
    return {base, yp, xp, base + yp * s.q + xp, mask, valid};
  }
  template <class Shape> static IGEMM_HD Col col(const Shape& s, int n) {
    return {n * s.r * s.s, n < n_size(s)};
  }
  template <class Shape> static IGEMM_HD Tap tap(const Shape& s, int t) {
    const int k = t / (s.r * s.s), rs = t - k * s.r * s.s, i = rs / s.s, j = rs - i * s.s;
    const bool valid = t < t_size(s);
    return {k, i, j, (k * s.p - i) * s.q - j, valid ? rs : kNoTapBit, valid};
  }
  template <class Shape> static IGEMM_HD bool a_at(const Shape& s, const Row& a, const Tap& k, int& off) {
    if (masked(s)) {
      off = a.off + k.off;
      return (a.mask >> k.bit) & 1u;
    }
    const int row = a.yp - k.i, col = a.xp - k.j;  // = p*u, q*v when this tap reads the pixel
    const int p = row / s.u, q = col / s.v;
    off = a.base + (k.k * s.p + p) * s.q + q;
    return a.valid && k.valid && row >= 0 && col >= 0 && row % s.u == 0 && col % s.v == 0 && p < s.p && q < s.q;
  }
  template <class Shape> static IGEMM_HD bool b_at(const Shape& s, const Col& b, const Tap& k, int& off) {
    off = b.base + k.k * s.c * s.r * s.s + k.i * s.s + k.j;
    return b.valid && k.valid;
  }
  template <class Shape> static IGEMM_HD int d_row(const Shape& s, int m) {
    const int yx = m % (s.h * s.w), img = m / (s.h * s.w);
    return img * s.c * s.h * s.w + yx;
  }
  template <class Shape> static IGEMM_HD int d_col_stride(const Shape& s) { return s.h * s.w; }
};

// backward-filter: m = k, n = (c, i, j), t = (img, p, q).  A = dy, B = x (gathered), D = dw.
struct BwdFilterGemm : Offsets<BwdFilterGemm> {
  static constexpr bool kAAlongM = false;  // consecutive t = consecutive q: coalesced along t
  struct Row { int base; bool valid; };          // dy offset of map m in image 0
  struct Col { int base, i0, j0; bool valid; };  // x offset of map c in image 0; i - pad_h, j - pad_w
  struct Tap { int img, p, q; bool valid; };

  template <class Shape> static IGEMM_HD int m_size(const Shape& s) { return s.k; }
  template <class Shape> static IGEMM_HD int n_size(const Shape& s) { return s.c * s.r * s.s; }
  template <class Shape> static IGEMM_HD int t_size(const Shape& s) { return s.n * s.p * s.q; }

  template <class Shape> static IGEMM_HD Row row(const Shape& s, int m) {
    return {m * s.p * s.q, m < m_size(s)};
  }
  template <class Shape> static IGEMM_HD Col col(const Shape& s, int n) {
    const int j = n % s.s, i = (n / s.s) % s.r, c = n / (s.s * s.r);
    return {c * s.h * s.w, i - s.pad_h, j - s.pad_w, n < n_size(s)};
  }
  template <class Shape> static IGEMM_HD Tap tap(const Shape& s, int t) {
    return {t / (s.p * s.q), (t / s.q) % s.p, t % s.q, t < t_size(s)};
  }
  template <class Shape> static IGEMM_HD bool a_at(const Shape& s, const Row& a, const Tap& k, int& off) {
    off = a.base + (k.img * s.k * s.p + k.p) * s.q + k.q;
    return a.valid && k.valid;
  }
  template <class Shape> static IGEMM_HD bool b_at(const Shape& s, const Col& b, const Tap& k, int& off) {
    const int y = k.p * s.u + b.i0, x = k.q * s.v + b.j0;
    off = b.base + k.img * s.c * s.h * s.w + y * s.w + x;
    return b.valid && k.valid && y >= 0 && y < s.h && x >= 0 && x < s.w;
  }
  template <class Shape> static IGEMM_HD int d_row(const Shape& s, int m) { return m * n_size(s); }
  template <class Shape> static IGEMM_HD int d_col_stride(const Shape&) { return 1; }
};

}  // namespace igemm
