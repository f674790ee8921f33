#include "src/serve/pod_shapes.h"

#include <gtest/gtest.h>

#include <optional>

#include <string>
#include <vector>

#include "kplace/common/strings.h"
#include "kplace/model/decode.h"

namespace kplace::serve {
namespace {

// SchedulingBasic's pod with the three cut fields; `extra` goes into metadata.
std::string PodText(const std::string& name, const std::string& uid, const std::string& node, const std::string& cpu = "100m",
                const std::string& extra = "") {
  return StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(",)", extra,
                uid.empty() ? "" : StrCat(R"("uid":")", uid, R"(",)"), R"("namespace":"default"},"spec":{)",
                node.empty() ? "" : StrCat(R"("nodeName":")", node, R"(",)"),
                R"("containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":")", cpu,
                R"(","memory":"500Mi"}}}]}})");
}

std::string KeyOf(const std::string& text, PodCuts* cuts = nullptr) {
  PodShapeKeyer keyer;
  PodCuts c;
  if (!keyer.Key(text, &c)) return "<not keyed>";
  if (cuts) *cuts = c;
  return keyer.key();
}

TEST(PodShapesTest, PodsThatDifferInNameUidAndNodeShareAKey) {
  PodCuts a, b;  // views into the texts
  const std::string ta = PodText("p-1", "u-1", "node-1"), tb = PodText("pod-number-22", "uid-22", "n-7");
  const std::string ka = KeyOf(ta, &a);
  const std::string kb = KeyOf(tb, &b);
  ASSERT_NE(ka, "<not keyed>");
  EXPECT_EQ(ka, kb);
  EXPECT_EQ(a.name, "p-1");
  EXPECT_EQ(*a.uid, "u-1");
  EXPECT_EQ(*a.node_name, "node-1");
  EXPECT_EQ(b.name, "pod-number-22");
  EXPECT_EQ(*b.uid, "uid-22");
  EXPECT_EQ(*b.node_name, "n-7");
  // Without uid and nodeName the cuts say so, and the key is another one.
  PodCuts c;
  const std::string tc = PodText("p-1", "", "");
  const std::string kc = KeyOf(tc, &c);
  EXPECT_NE(kc, ka);
  EXPECT_EQ(c.name, "p-1");
  EXPECT_FALSE(c.uid.has_value());
  EXPECT_FALSE(c.node_name.has_value());
  EXPECT_EQ(KeyOf(PodText("other", "", "")), kc);
}

TEST(PodShapesTest, PodsThatDifferInAnyOtherByteDoNotShare) {
  const std::string base = KeyOf(PodText("p", "u", ""));
  EXPECT_NE(KeyOf(PodText("p", "u", "", "200m")), base);                          // a request
  EXPECT_NE(KeyOf(PodText("p", "u", "", "100m", R"("labels":{"a":"b"},)")), base);  // a label
  std::string ns = PodText("p", "u", "");
  ns.replace(ns.find(R"("namespace":"default")"), 21, R"("namespace":"other")");
  EXPECT_NE(KeyOf(ns), base);
  std::string spaced = PodText("p", "u", "");
  spaced.replace(spaced.find(R"("kind":"Pod")"), 12, R"("kind": "Pod")");
  EXPECT_NE(KeyOf(spaced), base);  // the same value, another text: decoded on its own
  // A name that moves another field's place: the lengths in the key tell them apart.
  EXPECT_NE(KeyOf(PodText("p", "u", "", "100m", R"("generateName":"x",)")), base);
}

TEST(PodShapesTest, OnlyPlainStringsAreCut) {
  for (const std::string& text : {
           PodText(R"(p\u0031)", "u", ""),                                   // an escape in the name
           PodText("p", R"(u\n)", ""),                                       // in the uid
           PodText("p\x01", "u", ""),                                        // a control character
           PodText("p\xff", "u", ""),                                        // not UTF-8
           PodText("", "u", ""),                                             // an empty name
           PodText("p", "u", "", "100m", R"("name":"q",)"),                  // the name twice
           PodText("p", "u", "", "100m", R"("uid":"v",)"),                   // the uid twice
           PodText("p", "u", "", "100m", R"("n\u0061me":"q",)"),              // a key with an escape
           std::string(R"({"kind":"Pod","metadata":{"name":"p","uid":null},"spec":{}})"),  // uid not a string
           std::string(R"({"kind":"Pod","metadata":{"namespace":"d"},"spec":{}})"),        // no name
           std::string(R"({"kind":"Pod","metadata":{"name":"p"},"metadata":{"name":"p"}})"),  // metadata twice
           // creationTimestamp twice: the decode keeps the last, null here, not the cut string
           std::string(R"({"kind":"Pod","metadata":{"name":"p","creationTimestamp":"2026-12-01T10:00:00Z","creationTimestamp":null}})"),
           std::string(R"({"kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":1}})"),    // nodeName a number
           std::string(R"({"kind":"Pod","metadata":{"name":"p"}} x)"),                        // text after it
           std::string(R"({"kind":"Pod","metadata":{"name":"p")"),                           // cut short
       }) {
    EXPECT_EQ(KeyOf(text), "<not keyed>") << text;
  }
  // metadata after spec: the cuts are still found, in text order.
  PodCuts cuts;
  const std::string later = R"({"spec":{"nodeName":"n1","containers":[]},"metadata":{"uid":"u1","name":"p1"}})";
  const std::string key = KeyOf(later, &cuts);
  ASSERT_NE(key, "<not keyed>");
  EXPECT_EQ(cuts.name, "p1");
  EXPECT_EQ(*cuts.uid, "u1");
  EXPECT_EQ(*cuts.node_name, "n1");
  EXPECT_EQ(KeyOf(R"({"spec":{"nodeName":"node-2","containers":[]},"metadata":{"uid":"uu","name":"q"}})"), key);
}

// The scan tests 16 bytes at a time: quotes, escapes and brackets at every offset of a block
// (and at the text's end) must be found as a byte-by-byte scan finds them.
TEST(PodShapesTest, ScanFindsDelimitersAtEveryOffset) {
  for (size_t pad = 0; pad < 40; ++pad) {
    const std::string filler(pad, 'x');
    // An escaped quote and brackets inside a label value, then a nested object after it.
    const std::string extra = StrCat(R"("labels":{"a":")", filler, R"(\"}{[]","b":")", filler, R"("},)",
                                     R"("annotations":{"n":{"m":[)", filler.empty() ? "" : "\"\"", "]}},");
    PodCuts a, b;
    const std::string ta = PodText(StrCat("p", filler), "u-1", "node-1", "100m", extra);
    const std::string tb = PodText("q", StrCat("uid", filler), "n", "100m", extra);
    const std::string ka = KeyOf(ta, &a), kb = KeyOf(tb, &b);
    ASSERT_NE(ka, "<not keyed>") << ta;
    EXPECT_EQ(ka, kb) << pad;
    EXPECT_EQ(a.name, StrCat("p", filler));
    EXPECT_EQ(*b.uid, StrCat("uid", filler));
    EXPECT_EQ(*a.node_name, "node-1");
    // Cut short anywhere: never keyed, never read past the end.
    for (size_t cut = 1; cut < ta.size(); cut += 7) {
      EXPECT_EQ(KeyOf(ta.substr(0, cut)), "<not keyed>") << cut;
    }
  }
}

// Whenever two texts share a key, the shape's Pod with the other's cuts is the other's Pod.
TEST(PodShapesTest, InstanceIsWhatTheTextDecodesTo) {
  const std::vector<std::string> texts = {
      PodText("p-1", "u-1", "node-1"), PodText("p-2", "u-2", "node-9"),
      PodText("q", "uid", "n", "100m", R"("labels":{"app":"x"},)"),
      PodText("r", "uid-r", "m", "100m", R"("labels":{"app":"x"},)"),
      // The API server stamps each pod's creation time; past 2262 the decode's nanoseconds saturate.
      PodText("s-1", "u", "", "100m", R"("creationTimestamp":"2026-12-01T10:00:00Z",)"),
      PodText("s-2", "u", "", "100m", R"("creationTimestamp":"2026-12-01T10:00:07.5+01:00",)"),
      PodText("s-3", "u", "", "100m", R"("creationTimestamp":"9999-12-31T23:59:59Z",)"),
      PodText("s-4", "u", "", "100m", R"("creationTimestamp":"",)")};
  PodShapes shapes;
  PodShapeKeyer keyer;
  int hits = 0;
  for (const std::string& text : texts) {
    ObjectSet decoded;
    ASSERT_TRUE(DecodeText(text, "t", &decoded).ok());
    ASSERT_EQ(decoded.pods.size(), 1u);
    const Pod& want = decoded.pods[0];
    PodCuts cuts;
    ASSERT_TRUE(keyer.Key(text, &cuts)) << text;
    if (const PodShape* shape = shapes.Find(keyer.key())) {
      ++hits;
      std::vector<Pod> instances;
      ASSERT_TRUE(PodShapes::AppendInstance(shape->pod, cuts, &instances)) << text;
      ASSERT_EQ(instances.size(), 1u);
      const Pod& got = instances[0];
      EXPECT_EQ(got.meta.name, want.meta.name);
      EXPECT_EQ(got.meta.creation_timestamp, want.meta.creation_timestamp);
      EXPECT_EQ(got.meta.creation_unix, want.meta.creation_unix) << text;
      EXPECT_EQ(got.meta.uid, want.meta.uid);
      EXPECT_EQ(got.meta.namespace_, want.meta.namespace_);
      EXPECT_EQ(got.meta.labels, want.meta.labels);
      EXPECT_EQ(got.node_name, want.node_name);
      EXPECT_EQ(got.scheduler_name, want.scheduler_name);
      ASSERT_EQ(got.containers.size(), 1u);
      EXPECT_EQ(got.containers[0].requests.at("cpu").MilliValue(), 100);
      EXPECT_EQ(got.containers[0].requests.at("memory").Value(), 500LL << 20);
    } else {
      shapes.Add(keyer.key(), PodShape{want});
    }
  }
  EXPECT_EQ(hits, 5);
  EXPECT_EQ(shapes.size(), 3u);
  // Values the decode refuses give no instance: the general decode then names them.
  PodCuts cuts;  // views into the text: it must outlive them
  const std::string bad_time = PodText("s-9", "u", "", "100m", R"("creationTimestamp":"yesterday",)");
  ASSERT_TRUE(keyer.Key(bad_time, &cuts));
  const PodShape* shape = shapes.Find(keyer.key());
  ASSERT_NE(shape, nullptr);
  std::vector<Pod> none;
  EXPECT_FALSE(PodShapes::AppendInstance(shape->pod, cuts, &none));
  const std::string bad_name = PodText("S_9", "u", "", "100m", R"("creationTimestamp":"2026-12-01T10:00:00Z",)");
  ASSERT_TRUE(keyer.Key(bad_name, &cuts));
  EXPECT_FALSE(PodShapes::AppendInstance(shape->pod, cuts, &none));
  EXPECT_TRUE(none.empty());
}

TEST(PodShapesTest, KeyEventFindsTypeAndObject) {
  PodShapeKeyer keyer;
  std::string_view type, object;
  PodCuts cuts;
  const std::string pod = PodText("p", "u", "n");
  const std::string added = StrCat(R"({"type":"ADDED","object":)", pod, "}");
  ASSERT_TRUE(keyer.KeyEvent(added, &type, &object, &cuts));
  EXPECT_EQ(type, R"("ADDED")");
  EXPECT_EQ(object, pod);
  EXPECT_EQ(cuts.name, "p");
  const std::string key = keyer.key();
  const std::string deleted = StrCat(R"( { "object" : )", PodText("q", "v", "m"), R"( , "type" : "DELETED" } )");
  ASSERT_TRUE(keyer.KeyEvent(deleted, &type, &object, &cuts));
  EXPECT_EQ(type, R"("DELETED")");
  EXPECT_EQ(keyer.key(), key);  // the object's key only
  EXPECT_FALSE(keyer.KeyEvent(StrCat(R"({"type":"ADDED","object":)", pod, R"(,"extra":1})"), &type, &object, &cuts));
  EXPECT_FALSE(keyer.KeyEvent(StrCat(R"({"type":"ADDED","type":"ADDED","object":)", pod, "}"), &type, &object, &cuts));
  EXPECT_FALSE(keyer.KeyEvent(StrCat(R"({"object":)", pod, "}"), &type, &object, &cuts));
}

TEST(PodShapesTest, SplitListKeysEachItem) {
  PodShapeKeyer keyer;
  std::vector<std::string_view> fields;
  std::vector<std::string> names, keys;
  std::vector<bool> keyed;
  const std::string text = StrCat(R"({"apiVersion":"v1","items":[)", PodText("a", "", ""), ",", PodText("b", "", ""),
                                  R"(,null,{"kind":"PodGroup"}],"kind":"List"})");
  ASSERT_TRUE(keyer.SplitList(text, &fields, [&](const PodShapeKeyer::Item& item) {
    keyed.push_back(item.keyed);
    names.push_back(item.keyed ? std::string(item.cuts.name) : std::string(item.text));
    keys.push_back(item.keyed ? keyer.key() : "");
    return true;
  }));
  EXPECT_EQ(fields, (std::vector<std::string_view>{R"("v1")", R"("List")"}));
  EXPECT_EQ(keyed, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "null", R"({"kind":"PodGroup"})"}));
  EXPECT_EQ(keys[0], keys[1]);
  for (const std::string& bad : {std::string(R"({"items":{}})"), std::string(R"({"items":[],"items":[]})"),
                                 std::string(R"({"kind":"List"})"), std::string(R"({"it\u0065ms":[]})"),
                                 std::string(R"({"items":[1 2]})"), std::string("kind: List")}) {
    fields.clear();
    EXPECT_FALSE(keyer.SplitList(bad, &fields, [](const PodShapeKeyer::Item&) { return true; })) << bad;
  }
  // `each` refusing an item ends the split.
  EXPECT_FALSE(keyer.SplitList(text, &fields, [](const PodShapeKeyer::Item&) { return false; }));
}

}  // namespace
}  // namespace kplace::serve
