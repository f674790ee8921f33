#include "kplace/serve/server.h"

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <nlohmann/json.hpp>

#include "kplace/common/strings.h"
#include "kplace/v1/placement.grpc.pb.h"

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

// A cluster whose Snapshot is many 4 KiB chunks: nodes with a non-ASCII annotation, pods bound.
std::string StreamedCluster() {
  std::string items;
  for (int i = 0; i < 300; ++i) {
    items += StrCat(i ? "," : "", R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n)", i,
                    R"(","labels":{"kubernetes.io/hostname":"n)", i, R"("},"annotations":{"note":")",
                    std::string(60, 'x'), "\u00e9\u20ac", R"("}},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}})");
    items += StrCat(R"(,{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b)", i, R"(","namespace":"default"},)",
                    R"("spec":{"nodeName":"n)", i, R"(","containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}})");
  }
  return StrCat(R"({"apiVersion":"v1","kind":"List","items":[)", items, "]}");
}

// A server on a free loopback port and a client of it.
struct ServingOnLoopback {
  ServingOnLoopback() : server(LocalServer::Start(Options())) {
    if (server.ok()) {
      stub = v1::Placement::NewStub(
          grpc::CreateChannel(StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));
    }
  }
  static ServerOptions Options() {
    ServerOptions o;
    o.listen = "127.0.0.1:0";
    return o;
  }
  absl::StatusOr<std::unique_ptr<LocalServer>> server;
  std::unique_ptr<v1::Placement::Stub> stub;
};

TEST(ServerTest, StreamsGiveWhatTheUnaryCallsGive) {
  ServingOnLoopback serving;
  ASSERT_TRUE(serving.server.ok()) << serving.server.status();
  auto& stub = serving.stub;
  {
    grpc::ClientContext ctx;
    auto reader = stub->SnapshotStream(&ctx, v1::SnapshotRequest());
    v1::SnapshotChunk c;
    EXPECT_FALSE(reader->Read(&c));
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(s.error_message(), "no cluster yet: call Reset first");
  }
  {
    grpc::ClientContext ctx;
    v1::ResetRequest req;
    req.set_objects(StreamedCluster());
    v1::ResetResponse resp;
    ASSERT_TRUE(stub->Reset(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.nodes(), 300);
  }
  v1::SnapshotResponse whole;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->Snapshot(&ctx, v1::SnapshotRequest(), &whole).ok());
  }
  {
    grpc::ClientContext ctx;
    v1::SnapshotRequest req;
    req.set_max_chunk_bytes(4096);
    auto reader = stub->SnapshotStream(&ctx, req);
    nlohmann::json items = nlohmann::json::array();
    int chunks = 0;
    bool last = false;
    for (v1::SnapshotChunk c; reader->Read(&c); ++chunks) {
      EXPECT_FALSE(last) << "a chunk after the last";
      EXPECT_LE(c.ByteSizeLong(), 4096u);
      EXPECT_EQ(c.revision(), whole.revision());
      EXPECT_EQ(c.instance(), whole.instance());
      EXPECT_EQ(c.index(), chunks);
      last = c.last();
      const nlohmann::json part = nlohmann::json::parse(c.objects());
      for (const auto& item : part["items"]) items.push_back(item);
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_TRUE(last);
    EXPECT_GT(chunks, 20);
    EXPECT_EQ(items, nlohmann::json::parse(whole.objects())["items"]);
  }
  // Three pods, one too large for any node, each explained over 300 nodes.
  v1::EvaluateRequest ask;
  ask.set_pods(StrCat(R"({"apiVersion":"v1","kind":"List","items":[)",
                      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"2"}}}]}},)",
                      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"9"}}}]}},)",
                      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p3"},"spec":{"containers":[{"name":"c"}]}}]})"));
  ask.set_explain(true);
  v1::EvaluateResponse evaluated;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->Evaluate(&ctx, ask, &evaluated).ok());
    ASSERT_EQ(evaluated.results_size(), 3);
    EXPECT_GT(evaluated.results(0).explanation().size(), 4096u);
  }
  {
    grpc::ClientContext ctx;
    ask.set_max_chunk_bytes(4096);
    auto reader = stub->EvaluateStream(&ctx, ask);
    std::vector<v1::PodPlacement> results;
    int continued = 0;
    for (v1::EvaluateChunk c; reader->Read(&c);) {
      EXPECT_LE(c.ByteSizeLong(), 4096u);
      EXPECT_EQ(c.revision(), evaluated.revision());
      if (!c.explanation_continued().empty()) {
        ++continued;
        ASSERT_FALSE(results.empty());
        results.back().mutable_explanation()->append(c.explanation_continued());
      }
      for (const v1::PodPlacement& r : c.results()) results.push_back(r);
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_GT(continued, 0);
    ASSERT_EQ(results.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(results[i].SerializeAsString(), evaluated.results(i).SerializeAsString()) << i;
    EXPECT_EQ(results[1].node(), "");
    EXPECT_EQ(results[1].message(), "0/300 nodes are available: 300 Insufficient cpu. preemption: 0/300 nodes are available: 300 Preemption is not helpful for scheduling.");
  }
  {
    grpc::ClientContext ctx;
    ask.set_max_chunk_bytes(100);
    auto reader = stub->EvaluateStream(&ctx, ask);
    v1::EvaluateChunk c;
    EXPECT_FALSE(reader->Read(&c));
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "max_chunk_bytes: 100 is out of range (0 for 1 MiB, or 4096 to 268435456 bytes)");
  }
}

// A client that cancels an ApplyStream part way leaves nothing of it applied.
TEST(ServerTest, ACancelledApplyStreamAppliesNothing) {
  ServingOnLoopback serving;
  ASSERT_TRUE(serving.server.ok()) << serving.server.status();
  auto& stub = serving.stub;
  uint64_t revision = 0;
  {
    grpc::ClientContext ctx;
    v1::ResetRequest req;
    req.set_objects(StreamedCluster());
    v1::ResetResponse resp;
    ASSERT_TRUE(stub->Reset(&ctx, req, &resp).ok());
    revision = resp.revision();
  }
  {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    auto writer = stub->ApplyStream(&ctx, &resp);
    v1::ApplyRequest req;
    req.add_events(R"({"type":"DELETED","object":{"apiVersion":"v1","kind":"Node","metadata":{"name":"n0"}}})");
    ASSERT_TRUE(writer->Write(req));
    ctx.TryCancel();
    EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  grpc::ClientContext ctx;
  v1::SnapshotResponse now;
  ASSERT_TRUE(stub->Snapshot(&ctx, v1::SnapshotRequest(), &now).ok());
  EXPECT_EQ(now.revision(), revision);
  EXPECT_EQ(nlohmann::json::parse(now.objects())["items"][0]["metadata"]["name"], "n0");
}

}  // namespace
}  // namespace kplace::serve
