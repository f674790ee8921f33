#include "src/model/json_split.h"

#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kplace/common/strings.h"
#include "kplace/model/decode.h"

namespace kplace {
namespace {

using json = nlohmann::json;

TEST(JsonSplitTest, SplitsFieldsAndItemsAtTheTopTwoLevels) {
  const std::string text =
      R"( { "apiVersion" : "v1", "items": [ {"a": "x\"]}"} , [1, {"b": []}],3 ,"s\\"], "kind":"List", "n": null } )";
  TopLevelSpans spans;
  ASSERT_TRUE(SplitTopLevel(text, &spans));
  ASSERT_TRUE(spans.has_items);
  ASSERT_EQ(spans.items.size(), 4u);
  EXPECT_EQ(spans.items[0], R"({"a": "x\"]}"})");
  EXPECT_EQ(spans.items[1], R"([1, {"b": []}])");
  EXPECT_EQ(spans.items[2], "3");
  EXPECT_EQ(spans.items[3], R"("s\\")");
  ASSERT_EQ(spans.fields.size(), 3u);
  EXPECT_EQ(spans.fields[0].first, "apiVersion");
  EXPECT_EQ(spans.fields[0].second, R"("v1")");
  EXPECT_EQ(spans.fields[1].first, "kind");
  EXPECT_EQ(spans.fields[1].second, R"("List")");
  EXPECT_EQ(spans.fields[2].second, "null");

  TopLevelSpans empty;
  ASSERT_TRUE(SplitTopLevel(R"({"items": [], "kind": "List"})", &empty));
  EXPECT_TRUE(empty.has_items);
  EXPECT_TRUE(empty.items.empty());
}

TEST(JsonSplitTest, RefusesWhatIsNotOneObjectOfThatShape) {
  for (const char* text : {
           R"({"items": [{} {}], "kind": "List"})",      // no comma between items
           R"({"items": [{}], "kind": "List"} x)",        // trailing text
           R"({"items": [{}], "kind": "List"}{})",        // two documents
           R"({"it\u0065ms": [{}], "kind": "List"})",     // a key with an escape
           R"({"items": {}, "kind": "List"})",            // items not a list
           R"({"items": [], "items": [], "kind": "List"})",  // items twice
           R"({"items": ["unterminated], "kind": "List"})",
           R"({"items": [{}], "kind" "List"})",           // no colon
           R"({"items": [{}],})",                          // a trailing comma
           R"([{"items": []}])",                           // not an object
           R"({"items": [{]})",                            // brackets that never close
       }) {
    TopLevelSpans spans;
    EXPECT_FALSE(SplitTopLevel(text, &spans)) << text;
  }
}

// A List of every kind the decoders read, with strings that need escapes.
json RandomList(std::mt19937* rng, int n, bool typed) {
  json items = json::array();
  auto pick = [&](int k) { return static_cast<int>((*rng)() % k); };
  for (int i = 0; i < n; ++i) {
    json o;
    const int kind = pick(5);
    const std::string name = StrCat("obj-", i);
    if (kind <= 1) {
      o = {{"metadata", {{"name", name}, {"namespace", pick(2) ? "default" : "team-b"}, {"annotations", {{"note", "a\"b\\c"}}},
                         {"labels", {{"app", StrCat("v", pick(9))}, {"note", ""}}}}},
           {"spec", {{"nodeName", pick(2) ? StrCat("node-", pick(50)) : ""},
                     {"priority", pick(1000)},
                     {"containers", {{{"name", "c"}, {"image", "img:1"},
                                      {"resources", {{"requests", {{"cpu", StrCat(pick(4000), "m")}, {"memory", pick(1 << 20)}}}}}}}},
                     {"tolerations", {{{"key", "k"}, {"operator", "Exists"}}}}}}};
      if (!typed) o["kind"] = "Pod";
    } else if (kind == 2) {
      o = {{"kind", "Node"},
           {"metadata", {{"name", StrCat("node-", i)}, {"labels", {{"topology.kubernetes.io/zone", StrCat("z", pick(3))}}}}},
           {"spec", {{"taints", {{{"key", "t"}, {"value", "x\\y"}, {"effect", "NoSchedule"}}}}}},
           {"status", {{"allocatable", {{"cpu", 0.5 + pick(64)}, {"memory", "64Gi"}, {"pods", pick(100)}}},
                       {"images", {{{"names", {"img:1", "\u00e9t\u00e9"}}, {"sizeBytes", pick(1 << 30)}}}}}}};
    } else if (kind == 3) {
      o = {{"kind", "Service"}, {"metadata", {{"name", name}}}, {"spec", {{"selector", {{"app", "v1"}}}}}};
    } else {
      o = {{"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", {{"k", "\n\t"}}}};
    }
    items.push_back(o);
  }
  return {{"apiVersion", "v1"}, {"items", items}, {"kind", typed ? "PodList" : "List"}, {"metadata", json::object()}};
}

// The fields the engine reads, in order, as one comparable string.
std::string Describe(const ObjectSet& s) {
  std::string out;
  for (const Node& n : s.nodes) {
    out += StrCat("N ", n.meta.name, " ", n.taints.size(), " ", n.images.size(), "\n");
    for (const auto& [k, v] : n.meta.labels) out += StrCat("  ", k, "=", v, "\n");
    for (const auto& [k, q] : n.allocatable) out += StrCat("  ", k, ":", static_cast<int64_t>(q.nanos()), "\n");
    for (const Taint& t : n.taints) out += StrCat("  T ", t.key, "=", t.value, ":", t.effect, "\n");
    for (const ContainerImage& im : n.images) out += StrCat("  I ", im.names.back(), " ", im.size_bytes, "\n");
  }
  for (const Pod& p : s.pods) {
    out += StrCat("P ", p.meta.namespace_, "/", p.meta.name, " ", p.node_name, " ", p.priority.value_or(-1), "\n");
    for (const auto& [k, v] : p.meta.labels) out += StrCat("  ", k, "=", v, "\n");
    for (const Container& c : p.containers) {
      for (const auto& [k, q] : c.requests) out += StrCat("  ", k, ":", static_cast<int64_t>(q.nanos()), "\n");
    }
    for (const Toleration& t : p.tolerations) out += StrCat("  T ", t.key, " ", t.op, "\n");
  }
  for (const Workload& w : s.workloads) out += StrCat("W ", w.kind, " ", w.meta.name, "\n");
  return out;
}

TEST(JsonSplitTest, ListsDecodeItemByItemAsTheWholeDocumentDoes) {
  std::mt19937 rng(7);
  for (int round = 0; round < 6; ++round) {
    const bool typed = round % 2 == 1;
    const json list = RandomList(&rng, 200, typed);
    const std::string text = list.dump(round % 3 == 0 ? 1 : -1);
    ObjectSet split, whole;
    SkippedKinds split_skipped, whole_skipped;
    ASSERT_TRUE(DecodeText(text, "l.json", &split, &split_skipped).ok());
    ASSERT_TRUE(DecodeDocument(list, "l.json", &whole, &whole_skipped).ok());
    EXPECT_EQ(Describe(split), Describe(whole));
    EXPECT_EQ(split_skipped, whole_skipped);
    EXPECT_GT(split.pods.size() + split.nodes.size(), 50u);
  }
}

TEST(JsonSplitTest, ErrorsInsideItemsNameFileObjectAndLine) {
  ObjectSet out;
  // Not JSON inside an item: the whole text's parser names it.
  absl::Status s = DecodeText("{\"kind\": \"List\", \"items\": [\n{\"kind\": \"Pod\",}\n]}", "c.json", &out);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("c.json: invalid JSON"), std::string_view::npos) << s;
  // A number past uint64 reaches the decoder, which names the field.
  s = DecodeText(R"({"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"},
                  "spec": {"priority": 99999999999999999999}}]})",
                 "c.json", &out);
  EXPECT_EQ(s.message(), "c.json: Pod default/p: spec.priority: expected an integer, got 1e+20") << s;
  // A number past double's range: an error naming the file (nlohmann's out_of_range used to
  // escape ParseDocuments and end the process; found by the fuzz targets).
  for (const char* text : {R"({"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 1e400}}]})",
                           R"({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": -1e400}})"}) {
    s = DecodeText(text, "c.json", &out);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("c.json: invalid JSON: "), std::string_view::npos) << s;
    EXPECT_NE(s.message().find("number overflow"), std::string_view::npos) << s;
  }
  // Values the API server rejects, as before.
  s = DecodeText(R"({"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"},
                  "status": {"allocatable": {"cpu": "-1"}}}]})",
                 "c.json", &out);
  EXPECT_EQ(s.message(), "c.json: Node n: status.allocatable.cpu: Invalid value: \"-1\": must be greater than or equal to 0")
      << s;
  // Deeper than the limit inside an item.
  s = DecodeText(StrCat(R"({"kind": "List", "items": [{"kind": "Pod", "x": )", std::string(300, '['),
                        std::string(300, ']'), "}]}"),
                 "c.json", &out);
  EXPECT_NE(s.message().find("nested deeper than 256 levels"), std::string_view::npos) << s;
}

TEST(JsonSplitTest, TextWithoutPaddingIsCopiedNotOverread) {
  // A view into the middle of a buffer: DecodeText may not read past its end.
  const std::string buffer = R"(xx{"kind":"List","items":[{"kind":"Namespace","metadata":{"name":"a"}}]}{{{{)";
  ObjectSet out;
  ASSERT_TRUE(DecodeText(std::string_view(buffer).substr(2, buffer.size() - 6), "v.json", &out).ok());
  ASSERT_EQ(out.namespaces.size(), 1u);
  EXPECT_EQ(out.namespaces[0].meta.name, "a");
}

}  // namespace
}  // namespace kplace
