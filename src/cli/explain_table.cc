#include "kplace/cli/explain_table.h"

#include <algorithm>
#include <map>
#include <vector>

#include "kplace/common/strings.h"

namespace kplace::cli {
namespace {

// ANSI SGR attributes, by Color.
enum Color { kPlain, kBold, kGreen, kYellow, kRed };
constexpr const char* kSgr[] = {"", "1", "32", "33", "31"};

struct Cell {
  std::string text;
  bool right = false;  // numbers align right
  Color color = kPlain;
  size_t span = 1;  // columns covered: a plugin's name over its raw, norm and wtd
};
using Row = std::vector<Cell>;

Cell Num(int64_t v, Color color = kPlain) { return {std::to_string(v), true, color}; }

std::string Paint(const std::string& text, Color color, bool on) {
  return on && color != kPlain ? StrCat("\x1b[", kSgr[color], "m", text, "\x1b[0m") : text;
}

std::string Count(int64_t n, const char* what) { return StrCat(n, " ", what, n == 1 ? "" : "s"); }

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Rows as columns two spaces apart, each line after `indent`; widths come from the plain
// text, so colour codes never shift a column. A spanning cell wider than the columns it
// covers widens the first of them: right-aligned numbers then keep the groups apart.
std::string Render(const std::vector<Row>& rows, const std::string& indent, bool color) {
  std::vector<size_t> width;
  auto cells = [](const Row& row, const auto& each) {
    size_t col = 0;
    for (const Cell& c : row) {
      each(c, col);
      col += c.span;
    }
  };
  auto spanned = [&](const Cell& c, size_t col) {
    size_t w = 2 * (c.span - 1);
    for (size_t k = col; k < col + c.span; ++k) w += width[k];
    return w;
  };
  for (const Row& row : rows) {
    cells(row, [&](const Cell& c, size_t col) {
      if (width.size() < col + c.span) width.resize(col + c.span, 0);
      if (c.span == 1) width[col] = std::max(width[col], c.text.size());
    });
  }
  for (const Row& row : rows) {
    cells(row, [&](const Cell& c, size_t col) {
      if (size_t w = spanned(c, col); c.span > 1 && c.text.size() > w) width[col] += c.text.size() - w;
    });
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line = indent;
    cells(row, [&](const Cell& c, size_t col) {
      const std::string pad(spanned(c, col) - c.text.size(), ' ');
      const std::string text = Paint(c.text, c.color, color);
      line += (col > 0 ? "  " : "") + (c.right ? pad + text : text + pad);
    });
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

// Why the chosen node won, from the scored nodes (best first).
std::string Why(const cycle::Placement& p, const std::vector<const cycle::NodeExplanation*>& best_first, size_t tied,
                const TableOptions& o) {
  if (!p.explanation) return "placed";
  if (p.explanation->nodes.empty()) return "the nominated node passed every filter: taken before any scan, unscored";
  if (best_first.empty()) {
    return StrCat("the only feasible node of ", Count(static_cast<int64_t>(p.explanation->nodes.size()), "node"),
                  " visited: taken unscored, as upstream does");
  }
  const int64_t best = best_first[0]->total;
  if (tied == 1) {
    std::string next =
        best_first.size() > 1 ? StrCat(", next ", best_first[1]->total, " on ", best_first[1]->node) : "";
    return StrCat("highest final score, ", best, next);
  }
  const char* rule = o.tie_break == cycle::TieBreak::kHeap
                         ? "heap (upstream >= 1.35: the first best in Go's container/heap order)"
                         : "random (upstream <= 1.34: uniform among the best, seeded by --seed)";
  return StrCat("final score ", best, ", tied with ", Count(static_cast<int64_t>(tied - 1), "other node"),
                "; the tie-break ", rule, " chose it");
}

std::string ScoreTable(const cycle::Explanation& ex, const std::vector<const cycle::NodeExplanation*>& best_first,
                       size_t tied, const std::string& chosen, const TableOptions& o) {
  const size_t listed = std::min(best_first.size(), static_cast<size_t>(std::max<int64_t>(o.top, 0)));
  std::vector<size_t> shown;
  std::vector<std::string> skipped, zero;
  for (size_t k = 0; k < ex.score_plugins.size(); ++k) {
    if (ex.score_skipped.size() > k && ex.score_skipped[k]) {
      skipped.push_back(ex.score_plugins[k]);
      continue;
    }
    // A plugin that gave every listed node 0 (raw and normalized) adds three columns of
    // zeros: named below the table instead, unless --wide.
    bool scored = o.wide;
    for (size_t i = 0; i < listed && !scored; ++i) {
      scored = best_first[i]->raw[k] != 0 || best_first[i]->normalized[k] != 0 || best_first[i]->weighted[k] != 0;
    }
    if (scored) {
      shown.push_back(k);
    } else {
      zero.push_back(ex.score_plugins[k]);
    }
  }
  Row names = {{"RANK", false, kBold}, {"NODE", false, kBold}}, kinds = {{""}, {""}};
  for (size_t k : shown) {
    names.push_back({StrCat(ex.score_plugins[k], " x", ex.weights[k]), false, kBold, 3});
    for (const char* kind : {"raw", "norm", "wtd"}) kinds.push_back({kind, true});
  }
  names.push_back({"TOTAL", true, kBold});
  std::vector<Row> rows = {names, kinds};
  for (size_t i = 0; i < listed; ++i) {
    const cycle::NodeExplanation& n = *best_first[i];
    const bool is_chosen = n.node == chosen, is_tied = i < tied && tied > 1;
    Row row = {Num(static_cast<int64_t>(i) + 1), {n.node, false, is_chosen ? kGreen : kPlain}};
    for (size_t k : shown) {
      row.push_back(Num(n.raw[k]));
      row.push_back(Num(n.normalized[k]));
      row.push_back(Num(n.weighted[k]));
    }
    row.push_back(Num(n.total, kBold));
    if (is_chosen) {
      row.push_back({is_tied ? "<- chosen by the tie-break" : "<- chosen", false, kGreen});
    } else if (is_tied) {
      row.push_back({"tie", false, kYellow});
    }
    rows.push_back(row);
  }
  std::string out = Render(rows, "  ", o.color);
  if (listed < best_first.size()) {
    out += StrCat("  ... ", Count(static_cast<int64_t>(best_first.size() - listed), "more scored node"), " (--top)\n");
  }
  if (!zero.empty()) out += "  0 on every listed node (--wide shows them): " + Join(zero) + "\n";
  if (!skipped.empty()) out += "  no score (PreScore skipped): " + Join(skipped) + "\n";
  return out;
}

std::string FilterSummary(const cycle::Placement& p, int32_t nodes_to_find, const TableOptions& o) {
  const cycle::Explanation& ex = *p.explanation;
  struct Rejections {
    int64_t nodes = 0;
    std::map<std::string, int64_t> reasons;
  };
  std::map<std::string, Rejections> by_plugin;
  int64_t rejected = 0;
  for (const cycle::NodeExplanation& n : ex.nodes) {
    if (n.filter_plugin.empty()) continue;
    ++rejected;
    Rejections& r = by_plugin[n.filter_plugin];
    ++r.nodes;
    for (const std::string& reason : n.filter.reasons) ++r.reasons[reason];
  }
  const int64_t visited = static_cast<int64_t>(ex.nodes.size());
  if (visited == 0) {
    if (!p.node.empty()) return "";  // the nominated node, said above
    const std::string plugins = Join(p.unschedulable_plugins);
    return "  filters: no node visited: PreFilter rejected the pod" + (plugins.empty() ? "" : " (" + plugins + ")") +
           "\n";
  }
  std::string out =
      StrCat("  filters: ", Count(visited, "node"), " visited, ", p.feasible, " feasible, ", rejected, " rejected\n");
  std::vector<std::pair<std::string, const Rejections*>> order;
  for (const auto& [plugin, r] : by_plugin) order.push_back({plugin, &r});
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->nodes > b.second->nodes; });
  std::vector<Row> rows;
  for (const auto& [plugin, r] : order) {
    std::vector<std::string> reasons;
    for (const auto& [reason, count] : r->reasons) reasons.push_back(StrCat(reason, " (", count, ")"));
    rows.push_back({{plugin}, {Count(r->nodes, "node"), true, kRed}, {Join(reasons)}});
  }
  out += Render(rows, "    ", o.color);
  if (const int64_t left = o.num_nodes - visited; left > 0) {
    out += StrCat("  not visited: ", Count(left, "node"),
                  p.feasible == nodes_to_find
                      ? StrCat(": the scan stopped at numFeasibleNodesToFind = ", nodes_to_find, " feasible nodes\n")
                      : std::string(": not among PreFilter's candidates\n"));
  }
  return out;
}

}  // namespace

std::string ExplainTable(const cycle::Placement& p, int32_t nodes_to_find, const TableOptions& o) {
  std::string out = Paint(p.pod, kBold, o.color);
  if (p.other_scheduler) return out + ": not for this scheduler (no profile has its schedulerName): left alone\n";
  if (p.gated && p.gating_plugin == "SchedulingGates") {
    return out + ": " + Paint("scheduling gated", kYellow, o.color) + ": " + p.message + "\n";
  }
  if (p.gated) return out + ": " + Paint("gated by " + p.gating_plugin, kYellow, o.color) + " (PreEnqueue): " + p.message + "\n";
  std::vector<const cycle::NodeExplanation*> best_first;
  if (p.explanation) {
    for (const cycle::NodeExplanation& n : p.explanation->nodes) {
      if (n.scored) best_first.push_back(&n);
    }
  }
  // Best first; among equals the chosen node leads, then scan order.
  std::stable_sort(best_first.begin(), best_first.end(), [&](const auto* a, const auto* b) {
    return a->total != b->total ? a->total > b->total : (a->node == p.node && b->node != p.node);
  });
  size_t tied = 0;
  while (tied < best_first.size() && best_first[tied]->total == best_first[0]->total) ++tied;
  if (p.node.empty()) {
    out +=
        StrCat(": ", Paint(p.code == Code::kError ? "error" : "unschedulable", kRed, o.color), "\n  ", p.message, "\n");
  } else {
    out += StrCat(" -> ", Paint(p.node, kGreen, o.color), "\n  why: ", Why(p, best_first, tied, o), "\n");
  }
  if (p.preemption && !p.preemption->nominated_node.empty()) {
    out += StrCat("  preemption: nominated node ", p.preemption->nominated_node,
                  ", victims: ", Join(p.preemption->victims), "\n");
  }
  if (p.attempts > 1) out += StrCat("  attempts: ", p.attempts, " (this is the last)\n");
  if (!p.explanation) return out;
  if (!best_first.empty()) out += ScoreTable(*p.explanation, best_first, tied, p.node, o);
  return out + FilterSummary(p, nodes_to_find, o);
}

}  // namespace kplace::cli
