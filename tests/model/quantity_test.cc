#include "kplace/model/quantity.h"

#include <gtest/gtest.h>

namespace kplace {
namespace {

struct QuantityCase {
  const char* text;
  int64_t milli;
  int64_t value;
};

TEST(QuantityTest, ParsesEverySuffixExactly) {
  const QuantityCase cases[] = {
      {"0", 0, 0},
      {"1", 1000, 1},
      {"500m", 500, 1},
      {"1.5", 1500, 2},
      {"0.5", 500, 1},
      {"100m", 100, 1},
      {"1n", 1, 1},
      {"1u", 1, 1},
      {"1500u", 2, 1},
      {"2k", 2000000, 2000},
      {"1M", 1000000000, 1000000},
      {"1G", 1000000000000, 1000000000},
      {"1Ki", 1024000, 1024},
      {"1Mi", 1048576000, 1048576},
      {"2Gi", 2147483648000, 2147483648},
      {"1Ti", 1099511627776000, 1099511627776},
      {"1e3", 1000000, 1000},
      {"1E3", 1000000, 1000},
      {"1.5e-3", 2, 1},
      {"12E", std::numeric_limits<int64_t>::max(), 12000000000000000000ull > 9223372036854775807ull ? std::numeric_limits<int64_t>::max() : 0},
      {"+3", 3000, 3},
      {".5", 500, 1},
      {"5.", 5000, 5},
      {"0.0001", 1, 1},
      {"1.0000000001", 1001, 2},
  };
  for (const QuantityCase& c : cases) {
    auto q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.has_value()) << c.text;
    EXPECT_EQ(q->MilliValue(), c.milli) << c.text;
    EXPECT_EQ(q->Value(), c.value) << c.text;
  }
}

TEST(QuantityTest, RejectsMalformedText) {
  for (const char* bad : {"", "12x", "m", "1..2", "Gi", "1 Gi", "1e", "--1", "0x10", "1KiB", "1e99999"}) {
    EXPECT_FALSE(Quantity::Parse(bad).has_value()) << bad;
  }
}

TEST(QuantityTest, SumsExactlyBeforeRounding) {
  // Two half-bytes make one byte, not two: sums happen on exact values.
  Quantity a = *Quantity::Parse("0.5");
  Quantity b = *Quantity::Parse("0.5");
  EXPECT_EQ((a + b).Value(), 1);
  EXPECT_EQ(a.Value() + b.Value(), 2);
  EXPECT_EQ((*Quantity::Parse("100m") + *Quantity::Parse("900m")).MilliValue(), 1000);
}

TEST(QuantityTest, NegativeQuantities) {
  auto q = Quantity::Parse("-1.5");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->MilliValue(), -1500);
  EXPECT_EQ(q->Value(), -1);
}

TEST(QuantityTest, RendersCanonically) {
  EXPECT_EQ(Quantity::Parse("1500m")->ToString(), "1500m");
  EXPECT_EQ(Quantity::Parse("2")->ToString(), "2");
  EXPECT_EQ(Quantity::Parse("1Ki")->ToString(), "1024");
}

}  // namespace
}  // namespace kplace
