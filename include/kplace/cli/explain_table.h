#pragma once
// `kplace explain --output table`: each decision as aligned text for a person at a terminal.
#include <cstdint>
#include <string>
#include <vector>

#include "kplace/cycle/scheduler.h"

namespace kplace::cli {

struct TableOptions {
  int64_t top = 10;    // scored nodes listed, best first
  bool color = false;  // ANSI colours (only for a terminal)
  cycle::TieBreak tie_break = cycle::TieBreak::kHeap;
  int32_t num_nodes = 0;  // nodes in the cluster, for the count of nodes never visited
  bool wide = false;      // every score plugin's raw, normalized and weighted columns, zeros too
  // Lines wider than this (0: no limit) make the score table compact: weighted scores
  // under plugins' initials, with a legend; lists wrap at it.
  int32_t width = 0;
};

/** Stdout's terminal width in columns (TIOCGWINSZ); 0 when stdout is no terminal. */
int32_t TerminalColumns();
/** $COLUMNS when it is a positive number, else 0 (no limit). */
int32_t ColumnsFromEnvironment();

/** `lead`, then `items` one space apart, each but the last followed by `after_each` (","
 *  for a list, "" for words), in lines of at most `width` (0: one line); a line that
 *  breaks goes on after `indent` spaces. An item is never split. Ends with a newline. */
std::string Flow(const std::string& lead, const std::vector<std::string>& items, const std::string& after_each,
                 int32_t width, size_t indent);
/** `text` split into words at its spaces (for Flow). */
std::vector<std::string> Words(const std::string& text);

/** One pod's decision: the chosen node and why (or the unschedulable message), the top
 *  scored nodes with each score plugin's raw, normalized and weighted score and the total
 *  (a tie at the top names the tie-break that settled it), and the filter summary: nodes
 *  each filter plugin rejected, with their reasons, and the nodes not visited because
 *  `nodes_to_find` (numFeasibleNodesToFind) feasible nodes were found first. */
std::string ExplainTable(const cycle::Placement& p, int32_t nodes_to_find, const TableOptions& options);

}  // namespace kplace::cli
