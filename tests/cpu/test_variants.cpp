// The conv2d variants without a GPU: spaces, constraints with reasons, cost models checked against the
// seeds' formulas by hand, and the CPU reference.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/family.h"
#include "harness/variant.h"
#include "variants/conv2d/spectral.h"

using namespace convtune;

namespace {

Problem valid_conv2d(int64_t h, int64_t w, int64_t r) {
  return Problem::from_json({{"family", "conv2d"}, {"h", h}, {"w", w}, {"r", r}});
}
const Variant& registered(const char* n) { return Registry::instance().get(n); }

}  // namespace

TEST(Variants, TheSeedStrategiesAndBaselinesAreRegistered) {
  for (const char* n : {"conv2d.naive", "conv2d.constant", "conv2d.coarsened", "conv2d.tiled_in",
                        "conv2d.tiled_halo_l2", "conv2d.register_tiled", "conv2d.pipelined", "conv2d.shuffle_halo",
                        "conv2d.wgmma_toeplitz", "conv2d.spectral_tiled", "conv2d.row_bands",
                        "conv2d.spectral_rows", "conv2d.cudnn", "conv2d.fft"})
    EXPECT_NE(Registry::instance().find(n), nullptr) << n;
  EXPECT_TRUE(registered("conv2d.cudnn").library());
  EXPECT_FALSE(registered("conv2d.constant").library());
  EXPECT_EQ(Registry::instance().match("conv2d.tiled*").size(), 2u);
  EXPECT_THROW(Registry::instance().get("conv2d.none"), std::exception);
}

TEST(Variants, ConstraintsSayWhy) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  // Block = input tile: (16 + 2*16)^2 threads cannot fit in a block.
  const Status s = registered("conv2d.tiled_in").can_implement(valid_conv2d(100, 100, 16), {{"out_x", 16}, {"out_y", 16}}, dev);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("2304 threads > device limit 1024"), std::string::npos) << s.reason;
  EXPECT_TRUE(registered("conv2d.tiled_in").can_implement(valid_conv2d(100, 100, 2), {{"out_x", 16}, {"out_y", 16}}, dev).ok);
  const Status big = registered("conv2d.constant").can_implement(valid_conv2d(100, 100, 20), {{"block_x", 32}, {"block_y", 4}}, dev);
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.reason.find("radius 20 > 16"), std::string::npos);
  // Limits come from the device: a card with less shared memory refuses a large register tile.
  DeviceInfo small = dev;
  small.max_smem_per_block_optin = 48 * 1024;
  const Config rt = {{"block_x", 64}, {"block_y", 16}, {"px", 4}, {"py", 8}};
  EXPECT_TRUE(registered("conv2d.register_tiled").can_implement(valid_conv2d(4096, 4096, 8), rt, dev).ok);
  EXPECT_FALSE(registered("conv2d.register_tiled").can_implement(valid_conv2d(4096, 4096, 8), rt, small).ok);
}

TEST(Variants, CostModelsFollowTheSeedsFormulas) {
  const Problem p = valid_conv2d(64, 64, 2);  // 4096 outputs, 25 taps
  const Config tiled = {{"out_x", 16}, {"out_y", 16}};
  const Cost c = registered("conv2d.tiled_in").cost(p, tiled);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 25 * 4096);
  EXPECT_DOUBLE_EQ(c.bytes_min, 4.0 * (4096 * 2 + 25));
  // Seed 001: each block loads IN_TILE^2 = (16 + 4)^2 floats; 16 blocks; plus the outputs written once.
  EXPECT_DOUBLE_EQ(c.bytes_model, 4.0 * (16 * 20 * 20 + 4096));
  // Its arithmetic intensity tends to (2r+1)^2 / 2 flops per byte... per 4-byte element: OUT^2 FW^2 2 / (IN^2 4)
  const Problem big = valid_conv2d(16 * 1000, 16 * 1000, 2);
  const Cost cb = registered("conv2d.tiled_in").cost(big, tiled);
  const double seed_ai = 16.0 * 16 * 25 * 2 / (20.0 * 20 * 4);
  const double inputs_only = cb.bytes_model - 4.0 * 16000 * 16000;
  EXPECT_NEAR(cb.flops / inputs_only, seed_ai, 1e-9);

  // Constant memory: every tap reads the image from global memory, the filter is not counted.
  EXPECT_DOUBLE_EQ(registered("conv2d.constant").cost(p, {{"block_x", 32}, {"block_y", 4}}).bytes_model, 4.0 * 4096 * 26);
  EXPECT_DOUBLE_EQ(registered("conv2d.naive").cost(p, {{"block_x", 32}, {"block_y", 4}}).bytes_model, 4.0 * 4096 * 51);
  // Coarsened along x by 4: per thread 5 rows of (4 + 4) inputs.
  const Cost co = registered("conv2d.coarsened").cost(p, {{"block_x", 32}, {"block_y", 4}, {"coarsen", 4}, {"direction", "x"}});
  EXPECT_DOUBLE_EQ(co.bytes_model, 4.0 * (4096 / 4 * 5 * 8 + 4096));
  // Halo from L2, a 16x16 tile at r = 2: taps inside the tile along one axis are 16*5 - (2+1) - (2+1) = 74.
  const Cost h = registered("conv2d.tiled_halo_l2").cost(p, {{"tile_x", 16}, {"tile_y", 16}});
  const double halo_per_block = 25.0 * 256 - 74.0 * 74.0;
  EXPECT_DOUBLE_EQ(h.bytes_model, 4.0 * (16 * (256 + halo_per_block) + 4096));
}

TEST(Variants, PipelinedSaysWhyItCannotRun) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = registered("conv2d.pipelined");
  const Config c = {{"block_x", 64}, {"block_y", 4}, {"px", 4}, {"py", 4}, {"stages", 3}, {"steps", 16}};
  EXPECT_TRUE(v.can_implement(valid_conv2d(8192, 8192, 3), c, dev).ok);
  DeviceInfo turing = dev;  // no cp.async
  turing.cc_major = 7, turing.cc_minor = 5;
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 3), c, turing).reason.find("compute capability 8.0"),
            std::string::npos);
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 9), c, dev).reason.find("radius > 8"), std::string::npos);
  Config odd = c;
  odd["px"] = 2;
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 3), odd, dev).reason.find("multiple of 4"), std::string::npos);
  Config big = c;  // (8 + 16) * 8 * 8 * 17 iterations of the unrolled loops
  big["py"] = 8, big["px"] = 8, big["block_x"] = 32, big["block_y"] = 2;
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 8), big, dev).reason.find("unrolled patch"), std::string::npos);
  Config one_stage = c;
  one_stage["stages"] = 1;
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 3), one_stage, dev).reason.find("stages must be 2"), std::string::npos);
  // The ring (3 steps of 16 rows and 2r halo rows) must fit the device's shared memory.
  DeviceInfo small = dev;
  small.max_smem_per_block_optin = 16 * 1024;
  const Status ring = v.can_implement(valid_conv2d(8192, 8192, 3), c, small);
  EXPECT_NE(ring.reason.find("shared memory"), std::string::npos) << ring.reason;
}

TEST(Variants, PipelinedCostCountsTheStripOnce) {
  // 1024 x 1024, r = 3, strips of 256 columns, segments of 16 steps x 16 rows = 256 rows: 4 x 4 blocks.
  // A staged row: from 4 floats left of the strip (r rounded up to 4) to the last thread's window end,
  // 256 - 4 + 12 = 264 floats; a block stages its 256 rows and the 6 around them.
  const Config c = {{"block_x", 64}, {"block_y", 4}, {"px", 4}, {"py", 4}, {"stages", 3}, {"steps", 16}};
  const Cost cost = registered("conv2d.pipelined").cost(valid_conv2d(1024, 1024, 3), c);
  EXPECT_DOUBLE_EQ(cost.bytes_model, 4.0 * (16 * 262.0 * 264.0 + 1024.0 * 1024.0));
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 49 * 1024 * 1024);
  // 1000 rows: 63 steps of 16 in 4 segments (16, 16, 16, 15 steps): 1008 staged rows and 4 x 6 halo rows.
  const Cost uneven = registered("conv2d.pipelined").cost(valid_conv2d(1000, 1024, 3), c);
  EXPECT_DOUBLE_EQ(uneven.bytes_model, 4.0 * (4 * (1008.0 + 24.0) * 264.0 + 1000.0 * 1024.0));
}

TEST(Variants, ShuffleHaloSaysWhyItCannotRunAndCountsItsRows) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = registered("conv2d.shuffle_halo");
  const Config c = {{"block_x", 64}, {"block_y", 4}, {"py", 2}};
  EXPECT_TRUE(v.can_implement(valid_conv2d(8192, 8192, 3), c, dev).ok);
  EXPECT_TRUE(v.can_implement(valid_conv2d(7, 9, 0), c, dev).ok);
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 4), c, dev).reason.find("radius > 3"), std::string::npos);
  Config lone = c;
  lone["block_x"] = 32, lone["block_y"] = 1;
  EXPECT_NE(v.can_implement(valid_conv2d(64, 64, 1), lone, dev).reason.find("64 to 512 threads"), std::string::npos);
  Config tall = c;
  tall["block_y"] = 1, tall["py"] = 1;  // 65536 rows, one a block row: past the grid's 65535
  EXPECT_NE(v.can_implement(valid_conv2d(65536, 256, 1), tall, dev).reason.find("grid.y"), std::string::npos);
  // 1024 x 1024, r = 2: blocks of 256 columns x 8 rows (4 x 128); each of a block's 4 thread rows reads
  // 2 + 4 rows of 256 own and 16 edge columns (8 a warp).
  const Cost cost = v.cost(valid_conv2d(1024, 1024, 2), c);
  EXPECT_DOUBLE_EQ(cost.bytes_model, 4.0 * (4 * 128 * 4 * 6 * 272.0 + 1024.0 * 1024.0));
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 25 * 1024 * 1024);
}

TEST(Variants, RowBandsSaysWhyItCannotRunAndCountsItsRows) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = registered("conv2d.row_bands");
  const Config c = {{"band", 32}, {"py", 4}, {"threads", 64}, {"stages", 1}};
  auto batch = [](int64_t b, int64_t h, int64_t w, int64_t r) {
    return Problem::from_json({{"family", "conv2d"}, {"b", b}, {"h", h}, {"w", w}, {"r", r}});
  };
  EXPECT_TRUE(v.can_implement(batch(16384, 32, 32, 1), c, dev).ok);
  Config short_band = c;
  short_band["band"] = 8;  // 7 x 9: one band of 3 groups of 4 columns; 64 threads are still allowed
  EXPECT_TRUE(v.can_implement(valid_conv2d(7, 9, 0), short_band, dev).ok);
  EXPECT_NE(v.can_implement(valid_conv2d(64, 64, 5), c, dev).reason.find("radius > 4"), std::string::npos);
  Config odd = c;
  odd["py"] = 3;
  EXPECT_NE(v.can_implement(valid_conv2d(64, 64, 1), odd, dev).reason.find("multiple of py"), std::string::npos);
  Config wide = c;
  wide["threads"] = 128;  // a 32-wide band of 32 rows: 8 rows of 8 groups of 4 columns, 64 threads' work
  EXPECT_NE(v.can_implement(batch(8, 32, 32, 1), wide, dev).reason.find("64 groups"), std::string::npos);
  Config tall = c;
  tall["band"] = 64;
  EXPECT_NE(v.can_implement(batch(8, 16, 32, 1), tall, dev).reason.find("twice the image"), std::string::npos);
  // 8192 x 8192 at band 64: 64 + 2 staged rows of 32 KB, past the 227 KB of a block.
  tall["py"] = 1;
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 1), tall, dev).reason.find("shared memory"), std::string::npos);
  // Two stages (persistent blocks) hold two bands: 2048-wide bands of 16 + 2 rows take 144 KB each, one fits and two do not.
  Config wide_rows = {{"band", 16}, {"py", 4}, {"threads", 256}, {"stages", 1}};
  EXPECT_TRUE(v.can_implement(batch(4, 512, 2048, 1), wide_rows, dev).ok);
  wide_rows["stages"] = 2;
  EXPECT_NE(v.can_implement(batch(4, 512, 2048, 1), wide_rows, dev).reason.find("shared memory"), std::string::npos);
  Config persistent = c;
  persistent["stages"] = 2;
  EXPECT_TRUE(v.can_implement(batch(2, 32, 32, 1), persistent, dev).ok);
  EXPECT_NE(v.can_implement(batch(1, 32, 32, 1), persistent, dev).reason.find("one band"), std::string::npos);
  // Tables and records made before the parameter name no `stages`: they ran a block a band.
  const Config before = {{"band", 8}, {"py", 4}, {"threads", 64}};
  EXPECT_EQ(v.space(batch(200, 96, 96, 2), dev).complete_config(before, "choice")["stages"], 1);
  // 100 rows in bands of 32 (32, 32, 32, 4): 100 own rows and 3 inner borders of 2r = 4 halo rows, read once
  // a batch image; and every output written once.
  const Cost cost = v.cost(batch(3, 100, 40, 2), c);
  EXPECT_DOUBLE_EQ(cost.bytes_model, 4.0 * (3 * (100.0 + 3 * 4) * 40 + 3 * 100.0 * 40));
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 25 * 3 * 100 * 40);
}

TEST(Variants, WgmmaToeplitzSaysWhyItCannotRunAndCountsItsWork) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = registered("conv2d.wgmma_toeplitz");
  const Config c = {{"pw", 4}, {"ph", 8}, {"warpgroups", 2}, {"batch", 1}, {"min_blocks", 2}};
  EXPECT_TRUE(v.can_implement(valid_conv2d(8192, 8192, 4), c, dev).ok);
  EXPECT_TRUE(v.can_implement(valid_conv2d(7, 9, 0), c, dev).ok);
  DeviceInfo ampere = dev;
  ampere.cc_major = 8;
  EXPECT_NE(v.can_implement(valid_conv2d(64, 64, 4), c, ampere).reason.find("compute capability 9.0"), std::string::npos);
  EXPECT_NE(v.can_implement(valid_conv2d(64, 64, 9), c, dev).reason.find("radius > 8"), std::string::npos);
  // r = 3: the window is 10 wide, not whole float4s.
  EXPECT_NE(v.can_implement(valid_conv2d(64, 64, 3), c, dev).reason.find("multiple of 4"), std::string::npos);
  Config wide = c;
  wide["pw"] = 8;  // N = 64: past the narrow MMAs
  EXPECT_NE(v.can_implement(valid_conv2d(64, 64, 4), wide, dev).reason.find("8, 16, 24 or 32"), std::string::npos);
  // Shared memory, as the kernel lays it out: 1024 B of slack, B's big and small tiles (6 k-tiles of 32 x 32
  // floats each) and two staged tiles of 72 rows x 72 floats.
  const int smem = 1024 + 2 * 6 * 32 * 128 + 2 * 4 * 72 * 72;
  DeviceInfo tight = dev;
  tight.max_smem_per_block_optin = smem - 1;
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 4), c, tight).reason.find("shared memory " + std::to_string(smem) + " B"),
            std::string::npos);
  tight.max_smem_per_block_optin = smem;
  EXPECT_TRUE(v.can_implement(valid_conv2d(8192, 8192, 4), c, tight).ok);
  Config four = c;
  four["min_blocks"] = 4;  // 4 x 91,648 B do not fit an SM: the register cap would buy nothing
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 4), four, dev).reason.find("min_blocks = 4"), std::string::npos);
  // Plain TF32 (one product) only where a config asks for it: the GPU tests' wrong_result case.
  Config plain = c;
  plain["math"] = "tf32";
  EXPECT_TRUE(v.can_implement(valid_conv2d(64, 64, 4), plain, dev).ok);
  EXPECT_NE(v.programs(valid_conv2d(64, 64, 4), plain).front().describe().find("MATH=2"), std::string::npos);
  EXPECT_NE(v.programs(valid_conv2d(64, 64, 4), c).front().describe().find("MATH=1"), std::string::npos);
  plain["math"] = "fp32";
  EXPECT_NE(v.can_implement(valid_conv2d(64, 64, 4), plain, dev).reason.find("math must be 3xtf32 or tf32"),
            std::string::npos);
  // 1024 x 1024, r = 4, 4 x 8 patches: K = 12 x 16 = 192 window values, 3K tensor multiply-adds an output;
  // tiles of 64 x 64 outputs stage 72 rows of 72 floats (r = 4: the halo is whole float4s).
  const Cost cost = v.cost(valid_conv2d(1024, 1024, 4), c);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 81 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(cost.flops_variant, 6.0 * 192 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(cost.bytes_model, 4.0 * (16 * 16 * 72.0 * 72.0 + 1024.0 * 1024.0));
  // r = 1, 2 x 4 patches: 32 x 32 tiles stage 34 rows from 3 columns before the left halo (16-byte
  // alignment) to whole float4s: 40 floats.
  const Config narrow = {{"pw", 2}, {"ph", 4}, {"warpgroups", 2}, {"batch", 1}, {"min_blocks", 2}};
  EXPECT_DOUBLE_EQ(v.cost(valid_conv2d(1024, 1024, 1), narrow).bytes_model, 4.0 * (32 * 32 * 34.0 * 40.0 + 1024.0 * 1024.0));
}

TEST(Variants, SpectralRowsSaysWhyItCannotRun) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = registered("conv2d.spectral_rows");
  const Config c = {{"ty", 16}, {"steps", 8}, {"regs", 128}};
  EXPECT_TRUE(v.can_implement(valid_conv2d(8192, 8192, 16), c, dev).ok);
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 17), c, dev).reason.find("r = 17 > 16"), std::string::npos);
  // The ring of 16 + 2r spectrum rows and 16 rows of sums, 576 B each, and the twiddles: 28 KB at r = 8,
  // 21 KB at r = 2.
  DeviceInfo small = dev;
  small.max_smem_per_block_optin = 24 * 1024;
  EXPECT_NE(v.can_implement(valid_conv2d(8192, 8192, 8), c, small).reason.find("shared memory"), std::string::npos);
  EXPECT_TRUE(v.can_implement(valid_conv2d(8192, 8192, 2), c, small).ok);
  // Off-grid values a spec may give are refused with the reason, not compiled or divided by.
  for (const auto& [name, bad] : std::vector<std::pair<const char*, int>>{{"ty", 0}, {"ty", 12}, {"steps", 0}, {"regs", 0}}) {
    Config off = c;
    off[name] = bad;
    const Status s = v.can_implement(valid_conv2d(8192, 8192, 3), off, dev);
    EXPECT_FALSE(s.ok) << name << " = " << bad;
    EXPECT_NE(s.reason.find(std::string(name) + " = " + std::to_string(bad)), std::string::npos) << s.reason;
  }
}

TEST(Variants, SpectralRowsCostCountsEachSegmentsRows) {
  // 1024^2, r = 3: tiles of 64 - 6 = 58 valid columns stepped by 56 from column -5 (3 - 8): 19 tiles,
  // 10 pairs; 64 steps of 16 rows in segments of 8: 8 segments, each transforming 128 + 6 rows of two tiles.
  const Cost c = registered("conv2d.spectral_rows").cost(valid_conv2d(1024, 1024, 3), {{"ty", 16}, {"steps", 8}, {"regs", 128}});
  EXPECT_DOUBLE_EQ(c.bytes_model, 80.0 * (134.0 * 2 * 64 * 4 + 7.0 * 64 * 8) + 4.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 49 * 1024 * 1024);
  // 72 rows, ty 8, steps 4: 9 steps over ceil(9 / 4) = 3 segments of 3 steps each (the kernel spreads them
  // evenly), so 72 output lines and 3 x 6 rows above segments per column of blocks.
  const Cost uneven = registered("conv2d.spectral_rows").cost(valid_conv2d(72, 1024, 3), {{"ty", 8}, {"steps", 4}, {"regs", 128}});
  EXPECT_DOUBLE_EQ(uneven.bytes_model, 10.0 * ((72.0 + 18.0) * 2 * 64 * 4 + 3.0 * 7 * 64 * 8) + 4.0 * 72 * 1024);
}

TEST(Spectral, FilterRowSpectraAreEachRowsDft) {
  // One tap, f(m0, k0 + r) = 2: row m0's spectrum is 2 exp(+2 pi i v k0 / n), every other row's is zero.
  const int r = 2, n = 16, fw = 2 * r + 1, m0 = 3, k0 = -1;
  std::vector<float> f(fw * fw, 0.0f);
  f[m0 * fw + k0 + r] = 2.0f;
  const auto rows = filter_spectra_reference(f, r, n, false);
  ASSERT_EQ(rows.size(), size_t(fw * n));
  for (int m = 0; m < fw; ++m)
    for (int v = 0; v < n; ++v) {
      const std::complex<double> want = m == m0 ? std::polar(2.0, 2.0 * M_PI * v * k0 / n) : 0.0;
      EXPECT_NEAR(std::abs(rows[size_t(m) * n + v] - want), 0.0, 1e-12) << "m " << m << " v " << v;
    }
}

TEST(Spectral, RowSpectraThroughLineTransformsGiveTheCorrelation) {
  // spectral_rows' arithmetic in float64 on the host: per output row and tile of n columns, transform each of
  // the 2r + 1 input rows (exp(-2 pi i k q / n)), sum X_m W_m / n over the filter rows, transform back
  // (exp(+2 pi i k p / n), unscaled); columns r .. n - r - 1 of the tile are the correlation's, exactly.
  const int h = 9, w = 40, r = 2, n = 16, fw = 2 * r + 1, v = n - 2 * r;
  const Problem p = valid_conv2d(h, w, r);
  std::vector<float> img(h * w), f(fw * fw);
  for (int i = 0; i < h * w; ++i) img[i] = float((i * 37) % 23) - 11.0f;
  for (int i = 0; i < fw * fw; ++i) f[i] = float((i * 13) % 7) - 3.0f;
  const auto want = cpu_reference(p, {img, f});
  const auto rows = filter_spectra_reference(f, r, n, false);
  const double step = 2.0 * M_PI / n;
  int checked = 0;
  for (int y = 0; y < h; ++y)
    for (int x0 = -r; x0 + r < w; x0 += v) {  // a tile's columns x0 .. x0 + n - 1; its outputs from x0 + r
      std::vector<std::complex<double>> sum(n, 0.0);
      for (int m = 0; m < fw; ++m) {
        const int yy = y + m - r;
        for (int k = 0; k < n; ++k) {
          std::complex<double> x = 0;
          for (int q = 0; q < n; ++q) {
            const int xx = x0 + q;
            if (yy >= 0 && yy < h && xx >= 0 && xx < w) x += double(img[yy * w + xx]) * std::polar(1.0, -step * k * q);
          }
          sum[k] += x * rows[size_t(m) * n + k] / double(n);
        }
      }
      for (int q = r; q < n - r && x0 + q < w; ++q) {
        std::complex<double> out = 0;
        for (int k = 0; k < n; ++k) out += sum[k] * std::polar(1.0, step * k * q);
        EXPECT_NEAR(out.real(), want[y * w + x0 + q], 1e-9) << "y " << y << " x " << x0 + q;
        ++checked;
      }
    }
  EXPECT_EQ(checked, h * w);  // every output column belongs to exactly one tile
}

TEST(CpuReference, MatchesAHandComputedCorrelation) {
  // 3x3 image, r = 1: out(1,1) sees the whole image; out(0,0) sees its lower-right 2x2 corner.
  const Problem p = valid_conv2d(3, 3, 1);
  const std::vector<float> img = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> f = {0, 0, 0, 0, 1, 2, 0, 3, 0};  // f(0,0)=1, f(0,1)=2, f(1,0)=3
  const auto out = cpu_reference(p, {img, f});
  // out(i,j) = in(i,j) + 2 in(i,j+1) + 3 in(i+1,j)
  EXPECT_DOUBLE_EQ(out[0], 1 + 2 * 2 + 3 * 4);
  EXPECT_DOUBLE_EQ(out[4], 5 + 2 * 6 + 3 * 8);
  EXPECT_DOUBLE_EQ(out[8], 9);  // both neighbours are ghost cells
  EXPECT_DOUBLE_EQ(out[2], 3 + 3 * 6);
}
