#pragma once
// `kplace explain --output table`: each decision as aligned text for a person at a terminal.
#include <cstdint>
#include <string>

#include "kplace/cycle/scheduler.h"

namespace kplace::cli {

struct TableOptions {
  int64_t top = 10;    // scored nodes listed, best first
  bool color = false;  // ANSI colours (only for a terminal)
  cycle::TieBreak tie_break = cycle::TieBreak::kHeap;
  int32_t num_nodes = 0;  // nodes in the cluster, for the count of nodes never visited
  bool wide = false;      // also the columns of score plugins that gave every listed node 0
};

/** One pod's decision: the chosen node and why (or the unschedulable message), the top
 *  scored nodes with each score plugin's raw, normalized and weighted score and the total
 *  (a tie at the top names the tie-break that settled it), and the filter summary: nodes
 *  each filter plugin rejected, with their reasons, and the nodes not visited because
 *  `nodes_to_find` (numFeasibleNodesToFind) feasible nodes were found first. */
std::string ExplainTable(const cycle::Placement& p, int32_t nodes_to_find, const TableOptions& options);

}  // namespace kplace::cli
