#include "kplace/cli/explain_table.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "absl/strings/str_split.h"
#include "kplace/common/strings.h"
#include "kplace/model/quantity.h"

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

// An amount as a quantity reads: cpu from millicores ("2", "1500m"), memory and storage in
// the largest binary unit that holds it whole ("8Gi"), other resources as counts.
std::string Amount(const std::string& resource, int64_t v) {
  if (resource == "cpu") return Quantity::FromNanos(static_cast<__int128>(v) * 1000000).ToString();
  if (resource == "memory" || resource == "ephemeral-storage" || resource.rfind("hugepages-", 0) == 0) {
    for (const auto& [unit, size] : {std::pair{"Ti", int64_t{1} << 40}, {"Gi", int64_t{1} << 30}, {"Mi", int64_t{1} << 20},
                                      {"Ki", int64_t{1} << 10}}) {
      if (v != 0 && v % size == 0) return StrCat(v / size, unit);
    }
  }
  return std::to_string(v);
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

// The widest line of `text`, colour codes included (only the plain layout is measured).
size_t Widest(const std::string& text) {
  size_t widest = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    widest = std::max(widest, end - at);
    at = end + 1;
  }
  return widest;
}

// A plugin's capitals (NodeResourcesFit: NRF), made unique with a number.
std::vector<std::string> Initials(const std::vector<std::string>& plugins) {
  std::vector<std::string> out;
  for (const std::string& name : plugins) {
    std::string caps;
    for (char c : name) {
      if (c >= 'A' && c <= 'Z') caps += c;
    }
    if (caps.empty()) caps = name.substr(0, 2);
    std::string unique = caps;
    for (int n = 2; std::find(out.begin(), out.end(), unique) != out.end(); ++n) unique = StrCat(caps, n);
    out.push_back(unique);
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
  // Each plugin's raw, normalized and weighted score; on a terminal too narrow for that,
  // only the weighted score under the plugin's initials, with a legend (--wide: all).
  auto table = [&](bool compact) {
    const std::vector<std::string> initials = compact ? Initials(ex.score_plugins) : std::vector<std::string>();
    Row names = {{"RANK", false, kBold}, {"NODE", false, kBold}}, kinds = {{""}, {""}};
    for (size_t k : shown) {
      if (compact) {
        names.push_back({initials[k], true, kBold});
        continue;
      }
      names.push_back({StrCat(ex.score_plugins[k], " x", ex.weights[k]), false, kBold, 3});
      for (const char* kind : {"raw", "norm", "wtd"}) kinds.push_back({kind, true});
    }
    names.push_back({"TOTAL", true, kBold});
    std::vector<Row> rows = {names};
    if (!compact) rows.push_back(kinds);
    for (size_t i = 0; i < listed; ++i) {
      const cycle::NodeExplanation& n = *best_first[i];
      const bool is_chosen = n.node == chosen, is_tied = i < tied && tied > 1;
      Row row = {Num(static_cast<int64_t>(i) + 1), {n.node, false, is_chosen ? kGreen : kPlain}};
      for (size_t k : shown) {
        if (!compact) {
          row.push_back(Num(n.raw[k]));
          row.push_back(Num(n.normalized[k]));
        }
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
    std::string text = Render(rows, "  ", o.color);
    if (compact) {
      std::vector<std::string> legend;
      for (size_t k : shown) legend.push_back(StrCat(initials[k], " ", ex.score_plugins[k], " x", ex.weights[k]));
      text += Flow("  weighted scores (--wide: raw and normalized too): ", legend, ",", o.width, 4);
    }
    return text;
  };
  std::string out = table(false);
  if (!o.wide && o.width > 0 && Widest(out) > static_cast<size_t>(o.width)) out = table(true);
  if (listed < best_first.size()) {
    out += StrCat("  ... ", Count(static_cast<int64_t>(best_first.size() - listed), "more scored node"), " (--top)\n");
  }
  if (!zero.empty()) out += Flow("  0 on every listed node (--wide shows them): ", zero, ",", o.width, 4);
  if (!skipped.empty()) out += Flow("  no score (PreScore skipped): ", skipped, ",", o.width, 4);
  return out;
}

std::string FilterSummary(const cycle::Placement& p, int32_t nodes_to_find, const TableOptions& o) {
  const cycle::Explanation& ex = *p.explanation;
  // For a resource reason: what the pod requests and the most any rejected node has free.
  struct Closest {
    int64_t requested = 0, free = 0;
    std::string node;
  };
  struct Rejections {
    int64_t nodes = 0;
    std::map<std::string, int64_t> reasons;
    std::map<std::string, Closest> closest;
  };
  std::map<std::string, Rejections> by_plugin;
  int64_t rejected = 0;
  for (const cycle::NodeExplanation& n : ex.nodes) {
    if (n.filter_plugin.empty()) continue;
    ++rejected;
    Rejections& r = by_plugin[n.filter_plugin];
    ++r.nodes;
    for (const std::string& reason : n.filter.reasons) ++r.reasons[reason];
    for (const InsufficientResource& x : n.insufficient) {
      auto [it, fresh] = r.closest.try_emplace(InsufficientReason(x));
      if (fresh || x.capacity - x.used > it->second.free) it->second = {x.requested, x.capacity - x.used, n.node};
    }
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
  // Plugin and node count as columns; each row's reasons flow after them, wrapped under
  // their own start.
  std::vector<Row> rows;
  std::vector<std::vector<std::string>> reasons_of;
  for (const auto& [plugin, r] : order) {
    std::vector<std::string> reasons;
    for (const auto& [reason, count] : r->reasons) {
      auto c = r->closest.find(reason);
      const bool amounts = c != r->closest.end() && reason != "Too many pods";
      const std::string resource = amounts ? reason.substr(reason.find(' ') + 1) : "";
      reasons.push_back(amounts ? StrCat(reason, " (", count, "; requests ", Amount(resource, c->second.requested),
                                         ", at most ", Amount(resource, std::max<int64_t>(c->second.free, 0)),
                                         " free on ", c->second.node, ")")
                                : StrCat(reason, " (", count, ")"));
    }
    rows.push_back({{plugin}, {Count(r->nodes, "node"), true, kRed}});
    reasons_of.push_back(std::move(reasons));
  }
  const std::string plain = Render(rows, "    ", false), painted = Render(rows, "    ", o.color);
  for (size_t i = 0, at = 0, at_painted = 0; i < rows.size(); ++i) {
    const size_t end = plain.find('\n', at), end_painted = painted.find('\n', at_painted);
    const size_t columns = end - at + 2;
    std::string flowed = Flow(std::string(columns, ' '), Words(Join(reasons_of[i])), "", o.width, columns);
    out += painted.substr(at_painted, end_painted - at_painted) + "  " + flowed.substr(columns);
    at = end + 1;
    at_painted = end_painted + 1;
  }
  if (const int64_t left = o.num_nodes - visited; left > 0) {
    out += StrCat("  not visited: ", Count(left, "node"),
                  p.feasible == nodes_to_find
                      ? StrCat(": the scan stopped at numFeasibleNodesToFind = ", nodes_to_find, " feasible nodes\n")
                      : std::string(": not among PreFilter's candidates\n"));
  }
  return out;
}

}  // namespace

std::string Flow(const std::string& lead, const std::vector<std::string>& items, const std::string& after_each,
                 int32_t width, size_t indent) {
  std::string out = lead;
  size_t line = lead.size();
  bool first_on_line = true;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = items[i] + (i + 1 < items.size() ? after_each : "");
    if (!first_on_line && width > 0 && line + 1 + item.size() > static_cast<size_t>(width)) {
      out += "\n" + std::string(indent, ' ');
      line = indent;
      first_on_line = true;
    }
    if (!first_on_line) {
      out += " ";
      ++line;
    }
    out += item;
    line += item.size();
    first_on_line = false;
  }
  return out + "\n";
}

std::vector<std::string> Words(const std::string& text) { return absl::StrSplit(text, ' ', absl::SkipEmpty()); }

int32_t TerminalColumns() {
  struct winsize w {};
  return ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 ? w.ws_col : 0;
}

int32_t ColumnsFromEnvironment() {
  const char* v = std::getenv("COLUMNS");
  if (v == nullptr) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end != v && *end == '\0' && n > 0 && n < 100000 ? static_cast<int32_t>(n) : 0;
}

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
    out += StrCat(": ", Paint(p.code == Code::kError ? "error" : "unschedulable", kRed, o.color), "\n",
                  Flow("  ", Words(p.message), "", o.width, 4));
  } else {
    out += StrCat(" -> ", Paint(p.node, kGreen, o.color), "\n", Flow("  why: ", Words(Why(p, best_first, tied, o)), "", o.width, 4));
  }
  if (p.preemption && !p.preemption->nominated_node.empty()) {
    out += StrCat("  preemption: nominated node ", p.preemption->nominated_node,
                  ", victims: ", Join(p.preemption->victims), "\n");
  }
  if (p.attempts > 1) out += StrCat("  attempts: ", p.attempts, " (this is the last)\n");
  if (p.pod_group) {  // the group's outcome after its PodGroup cycle
    const cycle::PodGroupOutcome& g = *p.pod_group;
    out += Flow(StrCat("  pod group ", g.pod_group, ": "),
                Words(StrCat(g.scheduled ? "scheduled" : g.reason == "SchedulerError" ? "error" : "unschedulable",
                             g.message.empty() ? "" : StrCat(": ", g.message))),
                "", o.width, 4);
  }
  if (!p.explanation) return out;
  if (!best_first.empty()) out += ScoreTable(*p.explanation, best_first, tied, p.node, o);
  return out + FilterSummary(p, nodes_to_find, o);
}

}  // namespace kplace::cli
