#include "kplace/serve/server.h"

#include <gtest/gtest.h>

namespace kplace::serve {
namespace {

TEST(ServerTest, BearerSchemeInAnyCaseTokenExactly) {
  EXPECT_TRUE(BearerTokenIs("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(BearerTokenIs("bearer s3cret", "s3cret"));
  EXPECT_TRUE(BearerTokenIs("BEARER   s3cret", "s3cret"));
  EXPECT_FALSE(BearerTokenIs("Bearer S3CRET", "s3cret"));
  EXPECT_FALSE(BearerTokenIs("Bearer s3cret ", "s3cret"));
  EXPECT_FALSE(BearerTokenIs("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(BearerTokenIs("Basic s3cret", "s3cret"));
  EXPECT_FALSE(BearerTokenIs("Bearers3cret", "s3cret"));
  EXPECT_FALSE(BearerTokenIs("s3cret", "s3cret"));
  EXPECT_FALSE(BearerTokenIs("Bearer", "s3cret"));
  EXPECT_FALSE(BearerTokenIs("", "s3cret"));
}

TEST(ServerTest, AddressesNeedAPortInRange) {
  ServerOptions o;
  for (const char* good : {"127.0.0.1:0", "127.0.0.1:65535", "localhost:7450", "[::1]:80"}) {
    o.listen = good;
    EXPECT_TRUE(CheckServerOptions(o).ok()) << good << ": " << CheckServerOptions(o);
  }
  for (const char* bad : {"127.0.0.1:99999", "127.0.0.1:65536", "127.0.0.1:", "127.0.0.1", "127.0.0.1:-1", "127.0.0.1:http",
                          ":80", "127.0.0.1:1000000"}) {
    o.listen = bad;
    const absl::Status s = CheckServerOptions(o);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad << ": " << s;
    EXPECT_NE(std::string(s.message()).find("port from 0 to 65535"), std::string::npos) << s;
  }
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "127.0.0.1:70000";
  EXPECT_NE(std::string(CheckServerOptions(o).message()).find("--metrics-listen 127.0.0.1:70000"), std::string::npos);
}

}  // namespace
}  // namespace kplace::serve
