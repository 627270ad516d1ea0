// conv2d's batch dim b (issue 39, part 3): b = 1 keeps the keys of earlier records, a batch scales the
// operands, the references and every variant's cost, and bad batches are refused naming the dim.
#include <gtest/gtest.h>

#include "harness/device.h"
#include "harness/error.h"
#include "harness/family.h"
#include "harness/variant.h"
#include "test_support.h"

using namespace convtune;

namespace {

Problem batch_of(int64_t b, int64_t h, int64_t w, int64_t r) {
  return Problem::from_json({{"family", "conv2d"}, {"h", h}, {"w", w}, {"r", r}, {"b", b}});
}

}  // namespace

TEST(Conv2dBatch, OneImageKeepsTheKeyAndJsonOfEarlierRecords) {
  const Problem one = Problem::from_json({{"family", "conv2d"}, {"h", 64}, {"w", 32}, {"r", 3}});
  EXPECT_EQ(one.at("b"), 1);
  EXPECT_EQ(one.key(), "conv2d/h=64,r=3,w=32");
  EXPECT_FALSE(one.to_json().contains("b"));
  EXPECT_EQ(batch_of(1, 64, 32, 3).key(), one.key());
  EXPECT_TRUE(batch_of(1, 64, 32, 3) == one);
  // A problem written without b (a test's literal, an old caller) reads b as 1 and equals the validated one.
  const Problem literal{"conv2d", {{"h", 64}, {"w", 32}, {"r", 3}}};
  EXPECT_EQ(literal.at("b"), 1);
  EXPECT_TRUE(literal == one);
  EXPECT_EQ(Problem::from_json(one.to_json()).key(), one.key());
}

TEST(Conv2dBatch, ABatchIsInTheKeyAndTheJson) {
  const Problem p = batch_of(64, 512, 512, 1);
  EXPECT_EQ(p.key(), "conv2d/b=64,h=512,r=1,w=512");
  EXPECT_EQ(p.to_json().at("b"), 64);
  EXPECT_FALSE(p == batch_of(1, 512, 512, 1));
  EXPECT_TRUE(batch_of(1, 512, 512, 1) < p || p < batch_of(1, 512, 512, 1));
  EXPECT_EQ(Problem::from_json(p.to_json()).key(), p.key());
}

TEST(Conv2dBatch, OperandsFlopsAndBytesScaleWithTheBatch) {
  const Problem p = batch_of(3, 10, 20, 2);
  const auto ops = p.operands();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].elements, 600);  // images
  EXPECT_EQ(ops[1].elements, 25);   // one filter for all
  EXPECT_EQ(ops[2].elements, 600);
  EXPECT_DOUBLE_EQ(p.direct_flops(), 2.0 * 25 * 600);
  EXPECT_DOUBLE_EQ(p.min_bytes(), 4.0 * (600 + 25 + 600));
}

TEST(Conv2dBatch, EveryVariantsByteModelIsTheBatchTimesOneImages) {
  // Whole tiles per image: b images cost b times one image's traffic and work, for every config of every variant.
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Problem one = batch_of(1, 96, 128, 3), five = batch_of(5, 96, 128, 3);
  int checked = 0;
  for (const Variant* v : test::builtin_variants("conv2d")) {
    auto configs = v->space(one, dev).enumerate();
    for (size_t i = 0; i < configs.size() && i < 8; ++i) {
      const Config& c = configs[i];
      const Cost a = v->cost(one, c), b = v->cost(five, c);
      EXPECT_DOUBLE_EQ(b.flops, 5 * a.flops) << v->name();
      if (a.bytes_model == one.min_bytes())  // a library's model: the minimum traffic, one filter for all
        EXPECT_DOUBLE_EQ(b.bytes_model, 4.0 * (2 * 5 * 96 * 128 + 49)) << v->name();
      else
        EXPECT_NEAR(b.bytes_model, 5 * a.bytes_model, 1e-9 * b.bytes_model) << v->name() << " " << c.dump();
      EXPECT_NEAR(b.flops_variant, 5 * a.flops_variant, 1e-9 * b.flops_variant) << v->name() << " " << c.dump();
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(Conv2dBatch, TheCpuReferenceFiltersEachImageAlone) {
  // Image k of a batch gives what it gives alone: no tap reaches into the image before or after it.
  const Problem batch = batch_of(3, 5, 4, 1), one = batch_of(1, 5, 4, 1);
  const auto inputs = test::random_inputs(batch, 41);
  const auto all = cpu_reference(batch, inputs);
  ASSERT_EQ(all.size(), 60u);
  for (int k = 0; k < 3; ++k) {
    std::vector<std::vector<float>> alone = {
        std::vector<float>(inputs[0].begin() + 20 * k, inputs[0].begin() + 20 * (k + 1)), inputs[1]};
    const auto ref = cpu_reference(one, alone);
    for (int i = 0; i < 20; ++i) EXPECT_DOUBLE_EQ(all[size_t(20 * k + i)], ref[size_t(i)]) << "image " << k << " at " << i;
  }
}

TEST(Conv2dBatch, BadBatchesAreRefusedNamingTheDim) {
  for (const int64_t b : {int64_t(0), int64_t(-2), int64_t(65536)}) {
    try {
      batch_of(b, 8, 8, 1);
      FAIL() << "b = " << b << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("problem.b"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("1..65535"), std::string::npos) << e.what();
    }
  }
}

TEST(Conv2dBatch, TheFamilyVerifiesBatchesOnTheGpu) {
  int batched = 0;
  for (const Problem& p : find_family("conv2d").test_problems()) batched += p.at("b") > 1;
  EXPECT_GE(batched, 3);
}
