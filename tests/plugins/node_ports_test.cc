#include <random>

#include <gtest/gtest.h>

#include "kplace/config/profile.h"
#include "kplace/engine/framework.h"
#include "kplace/reference/plugin.h"
#include "tests/testing/differential.h"
#include "tests/testing/taint_builders.h"

namespace kplace {
namespace {

using testing::MakeHostPort;
using testing::MakeNode;
using testing::MakePortPod;

const std::vector<std::string> kPorts = {"NodePorts"};
constexpr char kNoFreePorts[] = "node(s) didn't have free ports for the requested pod ports";

struct Case {
  const char* name;
  std::vector<ContainerPort> used;
  std::vector<ContainerPort> wanted;
  bool fits;
};

TEST(NodePortsTest, FilterTable) {
  const std::vector<Case> cases = {
      {"other port", {MakeHostPort(9090, "UDP", "127.0.0.1")}, {MakeHostPort(8080, "UDP", "127.0.0.1")}, true},
      {"same udp port", {MakeHostPort(8080, "UDP", "127.0.0.1")}, {MakeHostPort(8080, "UDP", "127.0.0.1")}, false},
      {"same tcp port", {MakeHostPort(8080, "TCP", "127.0.0.1")}, {MakeHostPort(8080, "TCP", "127.0.0.1")}, false},
      {"different host ip", {MakeHostPort(8080, "TCP", "127.0.0.2")}, {MakeHostPort(8080, "TCP", "127.0.0.1")}, true},
      {"different protocol", {MakeHostPort(8080, "UDP", "127.0.0.1")}, {MakeHostPort(8080, "TCP", "127.0.0.1")}, true},
      {"second udp port conflict",
       {MakeHostPort(8080, "UDP", "127.0.0.1")},
       {MakeHostPort(8000, "UDP", "127.0.0.1"), MakeHostPort(8080, "UDP", "127.0.0.1")},
       false},
      {"wanted 0.0.0.0 against a specific ip", {MakeHostPort(8001, "TCP", "127.0.0.1")},
       {MakeHostPort(8001, "TCP", "0.0.0.0")}, false},
      {"wanted empty ip is 0.0.0.0", {MakeHostPort(8001, "TCP", "127.0.0.1")}, {MakeHostPort(8001, "TCP", "")}, false},
      {"used 0.0.0.0 against a specific ip", {MakeHostPort(8001, "TCP", "0.0.0.0")},
       {MakeHostPort(8001, "TCP", "127.0.0.1")}, false},
      {"used empty ip is 0.0.0.0", {MakeHostPort(8001, "TCP", "")}, {MakeHostPort(8001, "TCP", "10.0.0.1")}, false},
      {"empty protocol is TCP", {MakeHostPort(8001, "", "10.0.0.1")}, {MakeHostPort(8001, "TCP", "10.0.0.1")}, false},
      {"wildcard, other protocol", {MakeHostPort(8001, "TCP", "0.0.0.0")}, {MakeHostPort(8001, "UDP", "127.0.0.1")},
       true},
      {"SCTP", {MakeHostPort(8001, "SCTP", "")}, {MakeHostPort(8001, "SCTP", "1.2.3.4")}, false},
      {"unknown wanted ip against wildcard", {MakeHostPort(80, "TCP", "")}, {MakeHostPort(80, "TCP", "9.9.9.9")}, false},
      {"multiple non-conflicting",
       {MakeHostPort(9090, "TCP", "127.0.0.1"), MakeHostPort(9191, "TCP", "127.0.0.1"), MakeHostPort(8080, "TCP", "127.0.1.1")},
       {MakeHostPort(80, "TCP", "127.0.0.1"), MakeHostPort(80, "TCP", "127.0.1.1"), MakeHostPort(90, "TCP", "127.0.1.1")},
       true},
      {"no used ports", {}, {MakeHostPort(80)}, true},
  };
  for (const Case& c : cases) {
    ObjectSet cluster;
    cluster.nodes.push_back(MakeNode("m1", {}));
    cluster.pods.push_back(MakePortPod("existing", c.used, "m1"));
    Pod pod = MakePortPod("p", c.wanted);
    auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kPorts);
    auto r = testing::RunReference(cluster, pod, kPorts);
    EXPECT_TRUE(r.pre_filter[0].IsSuccess()) << c.name;
    for (const auto* out : {&e, &r}) {
      const PluginStatus& s = out->filter[0][0];
      if (c.fits) {
        EXPECT_TRUE(s.IsSuccess()) << c.name << ": " << s.Message();
      } else {
        EXPECT_EQ(s.code, Code::kUnschedulable) << c.name;
        EXPECT_EQ(s.reasons, std::vector<std::string>{kNoFreePorts}) << c.name;
      }
    }
  }
}

TEST(NodePortsTest, SidecarsCountPlainInitContainersDoNot) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("m1", {}));
  // The existing pod's port comes from a sidecar, so it is in the node's table.
  Pod existing = MakePortPod("existing", {}, "m1");
  Container sidecar;
  sidecar.restart_policy = "Always";
  sidecar.ports = {MakeHostPort(8001)};
  existing.init_containers.push_back(sidecar);
  Container plain;
  plain.ports = {MakeHostPort(9001)};
  existing.init_containers.push_back(plain);
  cluster.pods.push_back(existing);

  Pod wants_sidecar_port = MakePortPod("a", {MakeHostPort(8001, "TCP", "10.0.0.1")});
  Pod wants_plain_port = MakePortPod("b", {MakeHostPort(9001)});
  for (const Pod* pod : {&wants_sidecar_port, &wants_plain_port}) {
    auto e = testing::RunEngine(engine::Backend::kOmp, cluster, *pod, kPorts);
    auto r = testing::RunReference(cluster, *pod, kPorts);
    ASSERT_EQ(testing::Diff(e, r), "");
    EXPECT_EQ(e.filter[0][0].IsSuccess(), pod == &wants_plain_port);
  }

  // A pod whose only host port is on a plain init container: PreFilter Skip.
  Pod init_only;
  init_only.meta.name = "init-only";
  init_only.init_containers.push_back(plain);
  auto r = testing::RunReference(cluster, init_only, kPorts);
  EXPECT_TRUE(r.pre_filter[0].IsSkip());
  std::string error;
  auto fw = engine::Framework::Create(engine::Backend::kOmp, SinglePluginsProfile(kPorts), {}, &error);
  ASSERT_TRUE(fw) << error;
  engine::Snapshot snapshot(cluster, {});
  fw->Prepare(snapshot);
  engine::PreFilterResult pre = fw->PreFilter(init_only);
  EXPECT_TRUE(pre.status.IsSuccess());
  EXPECT_TRUE(pre.skip_filter[0]);
  // Filter called anyway reads no state: an Error, on both sides.
  auto codes = fw->FilterEach();
  PluginStatus engine_status = fw->Verdict(0, codes[0][0]);
  EXPECT_EQ(engine_status.code, Code::kError);
  EXPECT_EQ(engine_status, r.filter[0][0]);
  EXPECT_EQ(engine_status.Message(), "reading \"PreFilterNodePorts\" from cycleState: not found");
}

TEST(NodePortsTest, ZeroHostPortIsIgnored) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("m1", {}));
  cluster.pods.push_back(MakePortPod("existing", {MakeHostPort(0)}, "m1"));
  Pod pod = MakePortPod("p", {MakeHostPort(0)});
  EXPECT_TRUE(testing::RunReference(cluster, pod, kPorts).pre_filter[0].IsSkip());
}

std::vector<ContainerPort> RandomPorts(std::mt19937_64& rng, int max) {
  const std::vector<std::string> ips = {"", "0.0.0.0", "127.0.0.1", "10.0.0.1", "10.0.0.2"};
  const std::vector<std::string> protos = {"TCP", "UDP", "SCTP", ""};
  std::vector<ContainerPort> out;
  for (int k = rng() % (max + 1); k > 0; --k) {
    out.push_back(MakeHostPort(static_cast<int32_t>(rng() % 6) * 1000 % 5001, protos[rng() % protos.size()],
                               ips[rng() % ips.size()]));
  }
  return out;
}

TEST(NodePortsTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(20261133);
  for (int size : {0, 1, 31, 32, 33, 1000}) {
    ObjectSet cluster;
    for (int i = 0; i < size; ++i) {
      cluster.nodes.push_back(MakeNode("n" + std::to_string(i), {}));
      for (int k = rng() % 3; k > 0; --k) {
        cluster.pods.push_back(MakePortPod("e" + std::to_string(i) + "-" + std::to_string(k), RandomPorts(rng, 3),
                                           "n" + std::to_string(i)));
      }
    }
    for (int j = 0; j < 40; ++j) {
      Pod pod = MakePortPod("p" + std::to_string(j), RandomPorts(rng, 3));
      auto r = testing::RunReference(cluster, pod, kPorts);
      for (engine::Backend b : testing::TestBackends()) {
        auto e = testing::RunEngine(b, cluster, pod, kPorts);
        ASSERT_EQ(testing::Diff(e, r), "") << engine::BackendName(b) << " size " << size << " pod " << j;
      }
    }
  }
}

// Binds update the engine's columns in place (and re-lay them when a node runs out of
// room); after every bind the engine must agree with a reference built from scratch.
void CheckBindsOn(engine::Backend backend) {
  std::mt19937_64 rng(20261134);
  ObjectSet cluster;
  const int num_nodes = 33;
  for (int i = 0; i < num_nodes; ++i) cluster.nodes.push_back(MakeNode("n" + std::to_string(i), {}));
  cluster.pods.push_back(MakePortPod("e0", {MakeHostPort(1000)}, "n0"));
  ObjectSet grown = cluster;  // the reference's view, growing with every bind
  std::string error;
  auto fw = engine::Framework::Create(backend, SinglePluginsProfile(kPorts), {}, &error);
  ASSERT_TRUE(fw) << error;
  engine::Snapshot snapshot(cluster, {});
  fw->Prepare(snapshot);
  for (int b = 0; b < 300; ++b) {
    Pod probe = MakePortPod("probe", RandomPorts(rng, 2));
    probe.containers[0].ports.push_back(MakeHostPort(1000 + static_cast<int32_t>(rng() % 5)));
    engine::PreFilterResult pre = fw->PreFilter(probe);
    ASSERT_TRUE(pre.status.IsSuccess());
    ASSERT_FALSE(pre.skip_filter[0]);
    auto codes = fw->FilterEach();
    auto r = testing::RunReference(grown, probe, kPorts);
    for (int i = 0; i < num_nodes; ++i) {
      PluginStatus got = codes[0][i] == 0 ? PluginStatus::Success() : fw->Verdict(0, codes[0][i]);
      ASSERT_EQ(got, r.filter[0][i]) << "bind " << b << " node " << i;
    }
    // Few nodes take most binds, so some outgrow their room.
    int node = rng() % 4 == 0 ? static_cast<int>(rng() % num_nodes) : static_cast<int>(rng() % 3);
    Pod pod = MakePortPod("b" + std::to_string(b), RandomPorts(rng, 2));
    pod.containers[0].ports.push_back(MakeHostPort(1000 + static_cast<int32_t>(rng() % 5), "TCP", "10.0.0.1"));
    const Pod& bound = snapshot.Bind(pod, node);
    fw->Bind(bound, node);
    grown.pods.push_back(bound);
  }
}

TEST(NodePortsTest, OnBindMatchesReferenceRebuiltFromScratch) {
  for (engine::Backend backend : testing::TestBackends()) {
    SCOPED_TRACE(engine::BackendName(backend));
    CheckBindsOn(backend);
  }
}

}  // namespace
}  // namespace kplace
