// Model zoo: parameter counts against the published sizes (docs/reference/models.md).
#include "sim/scenario/model.hpp"

#include <gtest/gtest.h>

namespace commbound::sim {
namespace {

const Presets kPresets("calibration");

struct Published {
  const char* name;
  double params;  // as published
};

class ModelParams : public ::testing::TestWithParam<Published> {};

// Our count from the dimensions lands within 1% of the published size.
TEST_P(ModelParams, MatchPublishedSize) {
  auto m = load_model(kPresets, GetParam().name);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_NEAR(m->params(), GetParam().params, 0.01 * GetParam().params);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ModelParams,
                         ::testing::Values(Published{"llama2-7b", 6.74e9}, Published{"llama2-13b", 13.0e9},
                                           Published{"llama2-70b", 69.0e9}, Published{"llama3-8b", 8.03e9},
                                           Published{"llama3-70b", 70.6e9}, Published{"llama3.1-405b", 405e9},
                                           Published{"tinyllama-1.1b", 1.10e9}),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n) c = (c == '-' || c == '.') ? '_' : c;
                           return n;
                         });

// Llama-2 7B by hand: layer = 2*4096^2 + 2*4096*4096 + 3*4096*11008 + 2*4096 = 202,383,360;
// 32 layers + 2 * 32000*4096 + 4096 = 6,738,415,616. FLOPs per token at seq 4096:
// 6 * (32 * 202,375,168 + 131,072,000) + 12 * 32 * 4096 * 4096 = 4.8088e10.
TEST(Model, Llama2SevenBByHand) {
  auto m = load_model(kPresets, "llama2-7b");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_DOUBLE_EQ(m->layer_params(), 202383360.0);
  EXPECT_DOUBLE_EQ(m->params(), 6738415616.0);
  EXPECT_DOUBLE_EQ(m->flops_per_token(4096), 6 * (32 * 202375168.0 + 131072000.0) + 12.0 * 32 * 4096 * 4096);
}

TEST(Model, UnknownModelListsTheZoo) {
  auto m = load_model(kPresets, "llama9-1t");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("llama2-7b"), std::string::npos) << m.error().message;
}

}  // namespace
}  // namespace commbound::sim
