#pragma once
// kube-scheduler's node tree: nodes grouped by zone in the order zones were first seen,
// listed one node of each zone in turn (the scan order every cycle starts from).
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kplace/model/objects.h"

namespace kplace::state {

/** The node tree's zone key: region + ":\x00:" + zone, or "" when both are empty; the
 *  beta failure-domain labels win when their key is present. */
std::string ZoneKey(const Node& node);

/** Indices of `nodes` (given in insertion order) in node-tree list() order. */
std::vector<int32_t> ZoneRoundRobinOrder(const std::vector<const Node*>& nodes);

/** The live node tree over node rows: zones, their members, and the round-robin list. */
class NodeTree {
 public:
  /** A node's place: its zone's index, its index in the zone, and its index in the list
   *  that lists the nodes zone after zone (what ObjectsInTreeOrder gives). */
  struct Place {
    size_t zone = 0, pos = 0, list_pos = 0;
    bool listed = false;  // Leave took the row out of the scan order too (no Interleave needed)
  };

  void Clear();
  /** Row `i` joins the end of its zone (a new zone goes last). The list is not updated:
   *  call Interleave. */
  void Join(const Node& node, int32_t i);
  /** Row `i` (with labels `node`) leaves its zone; a zone left empty is dropped. Returns
   *  where it was. `nodes`: every row's node, to index the zones again. The last row of
   *  its zone also leaves the scan order (Place::listed); otherwise call Interleave. */
  Place Leave(const Node& node, int32_t i, const std::vector<Node>& nodes);
  /** The undo of Leave: row `i` back at `place` (its zone made again when it was gone). */
  void Enter(const Node& node, int32_t i, size_t zone, size_t pos, const std::vector<Node>& nodes);
  /** Row `i` joins last in its zone and the list in place, where a rebuilt list would put it. */
  void Append(const Node& node, int32_t i);
  /** The list rebuilt from the zones: one node of each zone in turn. */
  void Interleave();

  /** Rows in scan (round-robin) order. */
  const std::vector<int32_t>& order() const { return order_; }
  /** Zones in order, the rows of each. */
  const std::vector<std::vector<int32_t>>& zones() const { return zones_; }

 private:
  void IndexZones(const std::vector<Node>& nodes);

  std::vector<int32_t> order_;
  std::vector<std::vector<int32_t>> zones_;
  std::unordered_map<std::string, size_t> zone_of_;  // zone key -> index in zones_
};

}  // namespace kplace::state
