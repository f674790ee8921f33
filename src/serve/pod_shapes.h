#pragma once
// Each distinct pod shape of a request decoded once (docs/serve.md, "How requests are
// decoded"). A client that asks for 1,000 replicas of one template sends 1,000 objects that
// are byte-identical but for metadata.name, metadata.uid, metadata.creationTimestamp (the
// API server stamps each) and spec.nodeName; the decoders copy those strings into the Pod
// (DecodeMeta, DecodePodSpec), check that the name is a DNS subdomain, and parse the
// creation time, which AppendInstance repeats per pod. So a pod whose text equals an earlier
// pod's outside those string values decodes to that pod's Pod with them replaced. The
// shape key is that text with the values cut out.
//
// Why a key proves the decode: the scan that finds the three values is only right on valid
// JSON, and only a text that decoded (so parsed) ever becomes a shape. A later text with the
// same key is that valid text with plain string tokens replaced by other plain string
// tokens at the same places, so it is valid JSON too, of the same depth, and every parser
// reads it as the shape's value with those three strings changed.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "kplace/model/objects.h"

namespace kplace::serve {

/** The values cut out of a keyed text, as it holds them. */
struct PodCuts {
  std::string_view name;                               // metadata.name, never empty
  std::optional<std::string_view> uid;                 // metadata.uid, when the text has it
  std::optional<std::string_view> node_name;           // spec.nodeName, when the text has it
  std::optional<std::string_view> creation_timestamp;  // metadata.creationTimestamp, when a string
};

/** Computes shape keys; holds its buffer so that keying allocates nothing once warm. */
class PodShapeKeyer {
 public:
  /** @brief Keys `text`, one JSON object (whitespace around it allowed): true, with key()
   *  and `*cuts` set, when its "metadata" and "spec" each appear at most once (metadata
   *  at least), metadata's "name" once as a non-empty string, "uid" and spec's "nodeName"
   *  at most once as strings, "creationTimestamp" at most once, each of the three a plain JSON string (no escape, no control
   *  character, valid UTF-8), and no key on the way has an escape. False otherwise (the
   *  text is then decoded on its own). */
  bool Key(std::string_view text, PodCuts* cuts);
  /** @brief Keys a watch event that is exactly {"type": <string>, "object": <pod>} (the
   *  two in either order, nothing else): the pod as Key does, `*type` its type token
   *  (quotes included), `*object` the pod's text. */
  bool KeyEvent(std::string_view text, std::string_view* type, std::string_view* object, PodCuts* cuts);
  /** The last key: the number of cuts, each segment's length, then the segments (the text
   *  outside the cut values): equal keys mean equal segments at equal places. */
  const std::string& key() const { return key_; }

  /** One item of a List split by SplitList: its text, and whether Key succeeded on it. */
  struct Item {
    std::string_view text;
    bool keyed = false;
    PodCuts cuts;
  };
  /** @brief Splits `text`, one JSON object with "items" (a list, once), keying each item
   *  as Key does; `fields` gets the text of every other field's value, `each` every item
   *  in order (key() is that item's while it runs). Only the punctuation of the top two
   *  levels is checked: the caller must parse every field, and every item it does not know
   *  by its key. False when `text` is not of that shape (a key with an escape, "items"
   *  twice or not a list) or `each` returned false. */
  bool SplitList(std::string_view text, std::vector<std::string_view>* fields,
                 const std::function<bool(const Item&)>& each);

 private:
  class Scanner;
  bool KeyAt(Scanner* s, PodCuts* cuts);
  void BuildKey(std::string_view text, std::string_view* cut, size_t n);

  std::string key_;
};

/** What decoding a shape's first pod gave. */
struct PodShape {
  Pod pod;  // decoded, before priority admission (ResolvePriorities)
};

/** Shapes by key, for one call. */
class PodShapes {
 public:
  /** Shapes kept at most: a request of distinct pods stops paying for copies there. */
  static constexpr size_t kMaxShapes = 1024;

  const PodShape* Find(std::string_view key) const {
    auto it = shapes_.find(absl::string_view(key.data(), key.size()));  // Debian's Abseil: not std's
    return it == shapes_.end() ? nullptr : &it->second;
  }
  void Add(const std::string& key, PodShape shape) {
    if (shapes_.size() < kMaxShapes) shapes_.emplace(key, std::move(shape));
  }
  size_t size() const { return shapes_.size(); }

  /** Appends to `out` the pod a text of `shape`'s key with `cuts` decodes to, built in place
   *  (a Pod moves at about the cost of a copy). False, appending nothing, when the decode
   *  would refuse a cut value (a name that is no DNS subdomain, a creationTimestamp that is
   *  no RFC 3339 time): the general decode then names the error. */
  static bool AppendInstance(const Pod& shape, const PodCuts& cuts, std::vector<Pod>* out);

 private:
  absl::flat_hash_map<std::string, PodShape> shapes_;
};

}  // namespace kplace::serve
