#include "kplace/cycle/node_order.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <unordered_map>

namespace kplace::cycle {

std::vector<int32_t> RestrictedOrder(const std::vector<int32_t>& order, const std::vector<int32_t>& allowed) {
  // Indexed by node, sized by the largest allowed: order also holds nodes past it.
  std::vector<bool> in(allowed.empty() ? 0 : static_cast<size_t>(allowed.back()) + 1, false);
  for (int32_t i : allowed) in[i] = true;
  std::vector<int32_t> out;
  out.reserve(allowed.size());
  for (int32_t i : order) {
    if (static_cast<size_t>(i) < in.size() && in[i]) out.push_back(i);
  }
  return out;
}

int32_t NumFeasibleNodesToFind(int32_t percentage, int32_t num_candidates) {
  constexpr int32_t kMinFeasibleNodesToFind = 100;
  constexpr int32_t kMinFeasibleNodesPercentageToFind = 5;
  if (num_candidates < kMinFeasibleNodesToFind) return num_candidates;
  int32_t pct = percentage;
  if (pct == 0) pct = std::max(kMinFeasibleNodesPercentageToFind, 50 - num_candidates / 125);
  int32_t n = static_cast<int32_t>(static_cast<int64_t>(num_candidates) * pct / 100);
  return std::max(n, kMinFeasibleNodesToFind);
}

size_t SelectHostHeap(const std::vector<int64_t>& totals) {
  // Go's heap.Init sifts down from n/2-1 to 0, moving a child up only when it is strictly
  // better than its parent and taking the right child only when strictly better than the
  // left. So after Init the root is, recursively, the subtree's own element when it ties
  // the subtree maximum, else the left subtree's winner when that holds the maximum, else
  // the right's: the first maximum in preorder of the implicit tree. Pop returns the root.
  // No heap: the maximum, then that descent.
  if (totals.empty()) return 0;
  return SelectHostHeap(totals, *std::max_element(totals.begin(), totals.end()));
}

size_t SelectHostHeap(const std::vector<int64_t>& totals, int64_t best) {
  const size_t n = totals.size();
  const int64_t* t = totals.data();
  // Whether the subtree under position x holds the maximum: its levels are the contiguous
  // runs [lo, lo + width) with lo -> 2 lo + 1 and width doubling.
  auto holds_best = [&](size_t x) {
    for (size_t lo = x, width = 1; lo < n; lo = 2 * lo + 1, width *= 2) {
      const int64_t* end = t + std::min(n, lo + width);
      if (std::find(t + lo, end, best) != end) return true;
    }
    return false;
  };
  size_t x = 0;  // its subtree holds the maximum
  while (t[x] != best) x = holds_best(2 * x + 1) ? 2 * x + 1 : 2 * x + 2;
  return x;
}

size_t SelectHostRandom(const std::vector<int64_t>& totals, std::mt19937_64& rng) {
  size_t chosen = 0;
  int64_t count = 0;
  for (size_t i = 0; i < totals.size(); ++i) {
    if (i == 0 || totals[i] > totals[chosen]) {
      chosen = i;
      count = 1;
    } else if (totals[i] == totals[chosen]) {
      ++count;
      if (std::uniform_int_distribution<int64_t>(0, count - 1)(rng) == 0) chosen = i;
    }
  }
  return chosen;
}

std::string FitErrorMessage(int32_t num_all_nodes, const std::string& pre_filter_message,
                            const std::map<std::string, int64_t>& reason_counts) {
  std::string msg = "0/" + std::to_string(num_all_nodes) + " nodes are available:";
  if (!pre_filter_message.empty()) return msg + " " + pre_filter_message + ".";
  std::vector<std::string> items;
  for (const auto& [reason, count] : reason_counts) items.push_back(std::to_string(count) + " " + reason);
  std::sort(items.begin(), items.end());
  if (items.empty()) return msg;
  msg += " ";
  for (size_t i = 0; i < items.size(); ++i) msg += (i ? ", " : "") + items[i];
  return msg + ".";
}

}  // namespace kplace::cycle
