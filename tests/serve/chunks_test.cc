#include "src/serve/chunks.h"

#include <gtest/gtest.h>

#include <random>

#include "kplace/common/strings.h"

namespace kplace::serve {
namespace {

// Text of `n` bytes or a little less, with one-, two-, three- and four-byte characters mixed,
// so that a cut at any byte can fall inside a character.
std::string MixedText(std::mt19937& rng, size_t n) {
  static const char* kChars[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e", "z"};
  std::string out;
  while (out.size() + 4 <= n) out += kChars[rng() % 5];
  return out;
}

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

template <typename Chunk>
struct Collected {
  std::vector<Chunk> chunks;
  LastMarked<Chunk> out{[this](const Chunk& c) {
    chunks.push_back(c);
    return true;
  }};
};

template <typename Chunk>
void ExpectOnlyTheLastMarked(const std::vector<Chunk>& chunks) {
  ASSERT_FALSE(chunks.empty());
  for (size_t i = 0; i < chunks.size(); ++i) EXPECT_EQ(chunks[i].last(), i + 1 == chunks.size()) << i;
}

TEST(ChunksTest, ChunkBytesDefaultsAndRange) {
  EXPECT_EQ(*ChunkBytes("max_chunk_bytes", 0, 256 << 20), size_t{1} << 20);
  EXPECT_EQ(*ChunkBytes("max_chunk_bytes", 0, 8192), 8192u);  // never above the server's limit
  EXPECT_EQ(*ChunkBytes("max_chunk_bytes", 4096, 8192), 4096u);
  for (int32_t bad : {-1, 1, 4095, 8193}) {
    const auto r = ChunkBytes("max_chunk_bytes", bad, 8192);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(), StrCat("max_chunk_bytes: ", bad, " is out of range (0 for 1 MiB, or 4096 to 8192 bytes)"));
  }
}

TEST(ChunksTest, Utf8PrefixNeverSplitsACharacter) {
  const std::string s = "a\xc3\xa9\xf0\x9d\x84\x9e";  // a, é (2 bytes), 𝄞 (4 bytes)
  EXPECT_EQ(Utf8Prefix(s, 0), 0u);
  EXPECT_EQ(Utf8Prefix(s, 1), 1u);
  EXPECT_EQ(Utf8Prefix(s, 2), 1u);
  EXPECT_EQ(Utf8Prefix(s, 3), 3u);
  EXPECT_EQ(Utf8Prefix(s, 4), 3u);
  EXPECT_EQ(Utf8Prefix(s, 6), 3u);
  EXPECT_EQ(Utf8Prefix(s, 7), 7u);
  EXPECT_EQ(Utf8Prefix(s, 100), 7u);
}

TEST(ChunksTest, ListChunksJoinToTheWholeListRandomized) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", nlohmann::json::array()}};
    const int n = static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) {
      // Mostly small objects, now and then one larger than a chunk.
      const size_t note = rng() % 10 == 0 ? 5000 + rng() % 5000 : rng() % 600;
      list["items"].push_back({{"kind", "Node"},
                               {"metadata", {{"name", StrCat("n", i)}, {"annotations", {{"note", MixedText(rng, note)}}}}}});
    }
    const size_t max = 4096 + rng() % 4096;
    Collected<v1::SnapshotChunk> got;
    ASSERT_TRUE(StreamList(list, 42, "inst", max, got.out));
    ExpectOnlyTheLastMarked(got.chunks);
    nlohmann::json joined = nlohmann::json::array();
    for (size_t i = 0; i < got.chunks.size(); ++i) {
      const v1::SnapshotChunk& c = got.chunks[i];
      EXPECT_EQ(c.revision(), 42u);
      EXPECT_EQ(c.instance(), "inst");
      EXPECT_EQ(c.index(), static_cast<int32_t>(i));
      ASSERT_TRUE(ValidUtf8(c.objects()));
      const nlohmann::json part = nlohmann::json::parse(c.objects());
      EXPECT_EQ(part["kind"], "List");
      EXPECT_EQ(part["apiVersion"], "v1");
      // Over the limit only with one object that is larger than the limit by itself.
      if (c.ByteSizeLong() > max) EXPECT_EQ(part["items"].size(), 1u) << "chunk " << i << " of " << c.ByteSizeLong();
      for (const auto& item : part["items"]) joined.push_back(item);
    }
    EXPECT_EQ(joined, list["items"]) << "round " << round;
    if (n == 0) EXPECT_EQ(got.chunks.size(), 1u);
  }
}

TEST(ChunksTest, ResultChunksReassembleToTheResultsRandomized) {
  std::mt19937 rng(11);
  for (int round = 0; round < 30; ++round) {
    std::vector<v1::PodPlacement> results(rng() % 40);
    for (size_t i = 0; i < results.size(); ++i) {
      results[i].set_pod(StrCat("default/p", i));
      results[i].set_node(rng() % 3 ? StrCat("n", rng() % 100) : "");
      results[i].set_message(MixedText(rng, rng() % 200));
      // Explanations from none to several chunks long.
      const uint32_t pick = rng() % 10;
      results[i].set_explanation(pick < 3 ? "" : MixedText(rng, pick < 8 ? rng() % 3000 : 4000 + rng() % 30000));
    }
    const size_t max = 4096 + rng() % 8192;
    Collected<v1::EvaluateChunk> got;
    ASSERT_TRUE(StreamResults(results, 9, "inst", max, got.out));
    ExpectOnlyTheLastMarked(got.chunks);
    std::vector<v1::PodPlacement> joined;
    for (const v1::EvaluateChunk& c : got.chunks) {
      EXPECT_EQ(c.revision(), 9u);
      EXPECT_EQ(c.instance(), "inst");
      EXPECT_LE(c.ByteSizeLong(), max);
      EXPECT_TRUE(ValidUtf8(c.explanation_continued()));
      if (!c.explanation_continued().empty()) {
        EXPECT_EQ(c.results_size(), 0);
        ASSERT_FALSE(joined.empty());
        joined.back().mutable_explanation()->append(c.explanation_continued());
      }
      for (const v1::PodPlacement& r : c.results()) {
        EXPECT_TRUE(ValidUtf8(r.explanation()));
        joined.push_back(r);
      }
    }
    ASSERT_EQ(joined.size(), results.size()) << "round " << round;
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_EQ(joined[i].SerializeAsString(), results[i].SerializeAsString()) << "round " << round << " result " << i;
    }
  }
}

TEST(ChunksTest, NoResultsIsOneLastChunk) {
  Collected<v1::EvaluateChunk> got;
  ASSERT_TRUE(StreamResults({}, 3, "inst", 4096, got.out));
  ASSERT_EQ(got.chunks.size(), 1u);
  EXPECT_TRUE(got.chunks[0].last());
  EXPECT_EQ(got.chunks[0].revision(), 3u);
}

TEST(ChunksTest, AClientThatGoesAwayStopsTheStream) {
  nlohmann::json list = {{"items", nlohmann::json::array()}};
  for (int i = 0; i < 100; ++i) list["items"].push_back({{"name", std::string(1000, 'x')}});
  int writes = 0;
  LastMarked<v1::SnapshotChunk> out([&](const v1::SnapshotChunk&) { return ++writes < 2; });
  EXPECT_FALSE(StreamList(list, 1, "inst", 4096, out));
  EXPECT_EQ(writes, 2);  // the failed write is the last one tried
}

}  // namespace
}  // namespace kplace::serve
