#include "kplace/state/node_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kplace::state {
namespace {

Node ZonedNode(const std::string& name, const std::string& zone) {
  Node n;
  n.meta.name = name;
  if (!zone.empty()) n.meta.labels["topology.kubernetes.io/zone"] = zone;
  return n;
}

std::vector<std::string> Names(const std::vector<Node>& nodes, const std::vector<int32_t>& order) {
  std::vector<std::string> out;
  for (int32_t i : order) out.push_back(nodes[i].meta.name);
  return out;
}

TEST(NodeTreeTest, ZoneRoundRobinOfUnevenZones) {
  // zone1 has 4 nodes and zone2 has 2: n1, n5, n2, n6, n3, n4.
  std::vector<Node> nodes = {ZonedNode("n1", "z1"), ZonedNode("n2", "z1"), ZonedNode("n3", "z1"),
                             ZonedNode("n4", "z1"), ZonedNode("n5", "z2"), ZonedNode("n6", "z2")};
  std::vector<const Node*> ptrs;
  for (const Node& n : nodes) ptrs.push_back(&n);
  EXPECT_EQ(Names(nodes, ZoneRoundRobinOrder(ptrs)),
            (std::vector<std::string>{"n1", "n5", "n2", "n6", "n3", "n4"}));
}

TEST(NodeTreeTest, SpecWorkedExampleInterleavedInsertion) {
  std::vector<Node> nodes = {ZonedNode("a1", "z1"), ZonedNode("a2", "z1"), ZonedNode("b1", "z2"),
                             ZonedNode("a3", "z1"), ZonedNode("b2", "z2"), ZonedNode("a4", "z1")};
  std::vector<const Node*> ptrs;
  for (const Node& n : nodes) ptrs.push_back(&n);
  EXPECT_EQ(Names(nodes, ZoneRoundRobinOrder(ptrs)),
            (std::vector<std::string>{"a1", "b1", "a2", "b2", "a3", "a4"}));
}

TEST(NodeTreeTest, ZoneKeyPrefersBetaLabelsByPresence) {
  Node n = ZonedNode("n", "ga-zone");
  n.meta.labels["failure-domain.beta.kubernetes.io/zone"] = "";
  n.meta.labels["topology.kubernetes.io/region"] = "r";
  EXPECT_EQ(ZoneKey(n), std::string("r:\x00:", 4));
  EXPECT_EQ(ZoneKey(ZonedNode("m", "")), "");
}

// The live tree's in-place steps give the list a tree built afresh gives.
TEST(NodeTreeTest, AppendLeaveAndEnterMatchAFreshTree) {
  std::vector<Node> nodes = {ZonedNode("a1", "z1"), ZonedNode("b1", "z2"), ZonedNode("a2", "z1"),
                             ZonedNode("c1", "z3"), ZonedNode("a3", "z1")};
  nodes.reserve(16);
  auto fresh = [&](const std::vector<int32_t>& rows) {
    std::vector<const Node*> ptrs;
    for (int32_t r : rows) ptrs.push_back(&nodes[r]);
    std::vector<int32_t> out;
    for (int32_t k : ZoneRoundRobinOrder(ptrs)) out.push_back(rows[k]);
    return out;
  };
  NodeTree tree;
  for (int32_t i = 0; i < 3; ++i) tree.Join(nodes[i], i);
  tree.Interleave();
  EXPECT_EQ(Names(nodes, tree.order()), (std::vector<std::string>{"a1", "b1", "a2"}));
  tree.Append(nodes[3], 3);  // a new zone, last
  tree.Append(nodes[4], 4);
  EXPECT_EQ(tree.order(), fresh({0, 2, 4, 1, 3}));  // zone after zone, as a rebuild lists them
  // b1, alone in z2, leaves: its zone goes; entering again brings the zone back in place.
  const NodeTree::Place was = tree.Leave(nodes[1], 1, nodes);
  tree.Interleave();
  EXPECT_EQ(was.zone, 1u);
  EXPECT_EQ(was.pos, 0u);
  EXPECT_EQ(was.list_pos, 3u);
  EXPECT_EQ(Names(nodes, tree.order()), (std::vector<std::string>{"a1", "c1", "a2", "a3"}));
  tree.Enter(nodes[1], 1, was.zone, was.pos, nodes);
  tree.Interleave();
  EXPECT_EQ(Names(nodes, tree.order()), (std::vector<std::string>{"a1", "b1", "c1", "a2", "a3"}));
  ASSERT_EQ(tree.zones().size(), 3u);
  EXPECT_EQ(tree.zones()[1], (std::vector<int32_t>{1}));
}

// A row that is the last of its zone leaves the scan order in place (Place::listed): the
// order then equals Interleave's, whichever rows leave, zones emptied included.
TEST(NodeTreeTest, LastOfItsZoneLeavesTheListInPlace) {
  std::vector<Node> nodes;
  for (int i = 0; i < 40; ++i) nodes.push_back(ZonedNode("n" + std::to_string(i), "z" + std::to_string(i * 7 % 5)));
  NodeTree tree;
  for (int32_t i = 0; i < 40; ++i) tree.Append(nodes[i], i);
  std::vector<int32_t> live(40);
  for (int32_t i = 0; i < 40; ++i) live[i] = i;
  int64_t listed = 0;
  for (int step = 0; step < 40; ++step) {
    const int32_t i = live[static_cast<size_t>(step * 13 % live.size())];  // not always a last one
    live.erase(std::find(live.begin(), live.end(), i));
    const NodeTree::Place was = tree.Leave(nodes[i], i, nodes);
    const std::vector<int32_t> in_place = tree.order();
    tree.Interleave();
    if (was.listed) {
      EXPECT_EQ(in_place, tree.order()) << "step " << step;
      ++listed;
    }
  }
  EXPECT_GT(listed, 5);
  EXPECT_LT(listed, 40);
}

}  // namespace
}  // namespace kplace::state
