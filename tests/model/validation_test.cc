#include "kplace/model/validation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kplace {
namespace {

TEST(ValidationTest, QualifiedNames) {
  EXPECT_TRUE(IsQualifiedName("example.com/MyName"));
  EXPECT_TRUE(IsQualifiedName("my.name"));
  EXPECT_FALSE(IsQualifiedName("a/b/c"));
  EXPECT_FALSE(IsQualifiedName("-a"));
  EXPECT_FALSE(IsQualifiedName(std::string(64, 'a')));
  EXPECT_TRUE(QualifiedNameErrors("example.com/MyName").empty());
  EXPECT_EQ(QualifiedNameErrors(std::string(64, 'a')),
            std::vector<std::string>{"name part must be no more than 63 characters"});
  EXPECT_EQ(QualifiedNameErrors("/x"), std::vector<std::string>{"prefix part must be non-empty"});
  EXPECT_EQ(QualifiedNameErrors("a/b/c"),
            std::vector<std::string>{
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
                "and '/' (e.g. 'example.com/MyName')"});
}

TEST(ValidationTest, SubdomainsCapOnlyTheTotalLength) {
  // apimachinery's IsDNS1123Subdomain has no per-label cap, unlike IsDNS1123Label.
  const std::string long_label(70, 'a');
  EXPECT_TRUE(IsDns1123Subdomain(long_label + ".example.com"));
  EXPECT_TRUE(Dns1123SubdomainErrors(long_label).empty());
  EXPECT_FALSE(IsDns1123Subdomain(std::string(254, 'a')));
  EXPECT_EQ(Dns1123SubdomainErrors(std::string(254, 'a')),
            std::vector<std::string>{"must be no more than 253 characters"});
  EXPECT_FALSE(IsDns1123Subdomain("Upper.case"));
  EXPECT_FALSE(IsDns1123Subdomain("a..b"));
  EXPECT_FALSE(IsDns1123Subdomain(""));
}

TEST(ValidationTest, LabelValues) {
  EXPECT_TRUE(IsValidLabelValue(""));
  EXPECT_TRUE(LabelValueErrors("").empty());
  EXPECT_TRUE(LabelValueErrors("my_value").empty());
  EXPECT_EQ(LabelValueErrors(std::string(64, 'v')).front(), "must be no more than 63 characters");
  EXPECT_EQ(LabelValueErrors("-x").size(), 1u);
}

TEST(ValidationTest, GoQuoteAndSlices) {
  EXPECT_EQ(GoQuote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
  EXPECT_EQ(GoQuote(std::string("\x01\x7f", 2)), "\"\\x01\\x7f\"");
  EXPECT_EQ(GoQuote("zoné"), "\"zoné\"");          // valid UTF-8 passes through
  EXPECT_EQ(GoQuote("\xff"), "\"\\xff\"");          // an invalid byte is escaped
  EXPECT_EQ(GoQuote("\xc2\x85"), "\"\\u0085\"");    // a C1 control is not printable
  EXPECT_EQ(GoStringSlice({}), "[]string(nil)");
  EXPECT_EQ(GoStringSlice({"a", "b"}), "[]string{\"a\", \"b\"}");
}

}  // namespace
}  // namespace kplace
