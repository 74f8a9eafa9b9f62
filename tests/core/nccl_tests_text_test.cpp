// nccl-tests' text (core/nccl_tests_text.hpp), against lines laid out by hand from nccl-tests'
// formats (src/util.cu): "%12li  %12li  %8s  %6s  %6i" then, per timing, "  %7s  %6s  %6s" and
// "  %6g" or "    N/A".
#include "core/nccl_tests_text.hpp"

#include <gtest/gtest.h>

namespace commbound {
namespace {

TEST(NcclTestsText, FixedWidthKeepsTheWidth) {
  EXPECT_EQ(nccl_tests_fixed_width(12.345, 7), "  12.35");   // two decimals fit
  EXPECT_EQ(nccl_tests_fixed_width(12345.6, 7), "12345.6");  // one does
  EXPECT_EQ(nccl_tests_fixed_width(1234567, 7), "1234567");  // none
  EXPECT_EQ(nccl_tests_fixed_width(123456789, 7), "1.2e+08");  // past the width: exponent form
}

TEST(NcclTestsText, RowAndFooter) {
  // 1 MiB AllReduce of floats in 20 us: algbw 52.43 GB/s, busbw x 2(n-1)/n on 16 ranks = 98.30.
  NcclTestsRow row{1048576, 262144, "float", "sum", {20e-6, 52.4288e9, 98.304e9, -1}, {20e-6, 52.4288e9, 98.304e9, 0}};
  EXPECT_EQ(nccl_tests_row(row),
            "     1048576        262144     float     sum      -1    20.00   52.43   98.30    N/A    20.00   52.43   98.30"
            "       0\n");
  // One timing of two has a wrong element: 1 out of bounds; the mean busbw of the two timings.
  row.in_place.wrong = 3;
  row.in_place.bus_bw_bytes_per_s = 100e9;
  EXPECT_EQ(nccl_tests_footer({row}), "# Out of bounds values : 1 FAILED\n# Avg bus bandwidth    : 99.152\n#\n");
}

}  // namespace
}  // namespace commbound
