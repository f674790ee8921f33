#include "kplace/cycle/node_order.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

namespace kplace::cycle {
namespace {

TEST(NodeOrderTest, NumFeasibleNodesToFind) {
  struct Case { int32_t pct, m, want; };
  const Case cases[] = {
      {0, 50, 50},     {0, 99, 99},      {0, 100, 100},   {0, 200, 100},    {0, 500, 230},
      {0, 1000, 420},  {0, 2000, 680},   {0, 5000, 500},  {0, 5124, 512},   {0, 5125, 461},
      {0, 5625, 281},  {0, 10000, 500},  {0, 20000, 1000}, {0, 100000, 5000}, {30, 5000, 1500},
      {100, 5000, 5000}, {1, 5000, 100}, {30, 50, 50},   {50, 20000, 10000},
  };
  for (const Case& c : cases) EXPECT_EQ(NumFeasibleNodesToFind(c.pct, c.m), c.want) << c.pct << " " << c.m;
}

TEST(NodeOrderTest, HeapSelectionMatchesGoContainerHeap) {
  // [3, 5a, 5b]: the right child is taken only when strictly better, so 5a wins.
  EXPECT_EQ(SelectHostHeap({3, 5, 5}), 1u);
  EXPECT_EQ(SelectHostHeap({7, 7, 7, 7}), 0u);
  EXPECT_EQ(SelectHostHeap({1, 2, 3, 4, 5}), 4u);
  EXPECT_EQ(SelectHostHeap({9}), 0u);
  // Heapify can lift a later equal maximum: [1, 9, 2, 9, 9] sifts index 1 (9 vs children 9,9:
  // not strictly better, stays), then the root swaps with its left child.
  EXPECT_EQ(SelectHostHeap({1, 9, 2, 9, 9}), 1u);
  EXPECT_EQ(SelectHostHeap({1, 2, 9, 3, 4, 9, 9}), 2u);
}

// Go's container/heap Init + Pop over indices, step by step: the oracle for the one-pass
// selection.
size_t GoHeapPop(const std::vector<int64_t>& totals) {
  std::vector<size_t> heap(totals.size());
  for (size_t i = 0; i < heap.size(); ++i) heap[i] = i;
  auto less = [&](size_t a, size_t b) { return totals[heap[a]] > totals[heap[b]]; };
  const size_t n = heap.size();
  for (size_t i = n / 2; i-- > 0;) {
    for (size_t j = i;;) {
      size_t c = 2 * j + 1;
      if (c >= n) break;
      if (c + 1 < n && less(c + 1, c)) ++c;
      if (!less(c, j)) break;
      std::swap(heap[j], heap[c]);
      j = c;
    }
  }
  return heap[0];
}

TEST(NodeOrderTest, HeapSelectionEqualsGoHeapOnRandomTotals) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    const size_t n = 1 + rng() % (trial % 10 == 0 ? 1200 : 40);
    const int64_t range = 1 + static_cast<int64_t>(rng() % 5);  // few values: many ties
    std::vector<int64_t> totals(n);
    for (int64_t& t : totals) t = static_cast<int64_t>(rng() % range) * 37;
    ASSERT_EQ(SelectHostHeap(totals), GoHeapPop(totals)) << "trial " << trial << " n " << n;
  }
}

TEST(NodeOrderTest, RandomTieBreakIsReproducibleAndUniformAmongMaxima) {
  std::vector<int64_t> totals = {5, 9, 1, 9, 9, 3};
  std::mt19937_64 a(7), b(7);
  std::map<size_t, int> hits;
  for (int i = 0; i < 3000; ++i) {
    size_t x = SelectHostRandom(totals, a);
    EXPECT_EQ(x, SelectHostRandom(totals, b));
    ++hits[x];
  }
  EXPECT_EQ(hits.size(), 3u);
  for (size_t i : {1u, 3u, 4u}) EXPECT_GT(hits[i], 850);
}

TEST(NodeOrderTest, FitErrorMessageSortsWholeItems) {
  std::map<std::string, int64_t> counts = {{"Insufficient cpu", 10}, {"node(s) didn't match Pod's node affinity/selector", 9},
                                           {"Too many pods", 1}};
  EXPECT_EQ(FitErrorMessage(20, "", counts),
            "0/20 nodes are available: 1 Too many pods, 10 Insufficient cpu, 9 node(s) didn't match Pod's node "
            "affinity/selector.");
  EXPECT_EQ(FitErrorMessage(3, "pod has unbound immediate PersistentVolumeClaims", {}),
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.");
}

}  // namespace
}  // namespace kplace::cycle
