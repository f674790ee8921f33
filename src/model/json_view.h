#pragma once
// A read-only view of one value of a simdjson DOM, with the few questions the decoders ask.
// The decoders read objects in any order and look fields up more than once, so they need a
// DOM; simdjson's is one tape per document (no allocation per value), parsed at several GB/s,
// where nlohmann's allocates a node per value and a std::map per object.
#include <cstdint>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "absl/status/status.h"

#include "kplace/model/decode.h"
#include "kplace/model/decode_notes.h"

namespace kplace {

// GCC cannot see that value_unsafe() follows a type check and warns inside simdjson.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
class JsonView {
 public:
  JsonView() = default;
  explicit JsonView(simdjson::dom::element e) : e_(e), set_(true) {}

  bool is_null() const { return !set_ || e_.type() == simdjson::dom::element_type::NULL_VALUE; }
  bool is_object() const { return set_ && e_.type() == simdjson::dom::element_type::OBJECT; }
  bool is_array() const { return set_ && e_.type() == simdjson::dom::element_type::ARRAY; }
  bool is_string() const { return set_ && e_.type() == simdjson::dom::element_type::STRING; }
  bool is_boolean() const { return set_ && e_.type() == simdjson::dom::element_type::BOOL; }
  bool is_number_integer() const {
    return set_ && (e_.type() == simdjson::dom::element_type::INT64 || e_.type() == simdjson::dom::element_type::UINT64);
  }
  bool is_number_unsigned() const { return set_ && e_.type() == simdjson::dom::element_type::UINT64; }
  bool is_number_float() const { return set_ && e_.type() == simdjson::dom::element_type::DOUBLE; }
  bool is_number() const { return is_number_integer() || is_number_float(); }

  /** nlohmann's names for the types, which the decoders' messages have always used. */
  const char* type_name() const {
    if (is_object()) return "object";
    if (is_array()) return "array";
    if (is_string()) return "string";
    if (is_boolean()) return "boolean";
    if (is_number()) return "number";
    return "null";
  }

  // Typed reads; callers check the type first.
  std::string_view str() const { return std::string_view(e_.get_string().value_unsafe()); }
  bool boolean() const { return e_.get_bool().value_unsafe(); }
  int64_t int64() const { return e_.get_int64().value_unsafe(); }
  uint64_t uint64() const { return e_.get_uint64().value_unsafe(); }
  double number() const { return e_.get_double().value_unsafe(); }

  /** The field `key` of an object; a null view when absent or not an object. A key given
   *  more than once has its last value, as Go's encoding/json (and so the API server) reads
   *  it; simdjson's at_key would give the first. */
  JsonView operator[](std::string_view key) const {
    if (!is_object()) return JsonView();
    JsonView found;
    const simdjson::dom::object object = e_.get_object().value_unsafe();
    for (simdjson::dom::key_value_pair kv : object) {
      if (kv.key == key) found = JsonView(kv.value);
    }
    return found;
  }
  bool contains(std::string_view key) const { return (*this)[key].set_; }

  /** Calls fn(key, value) for each field of an object, in input order; stops at the first
   *  non-ok status and returns it. */
  template <typename Fn>
  absl::Status ForEachField(Fn&& fn) const {
    if (is_object()) {
      const simdjson::dom::object object = e_.get_object().value_unsafe();  // not a temporary's
      for (simdjson::dom::key_value_pair kv : object) {
        absl::Status s = fn(kv.key, JsonView(kv.value));
        if (!s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }
  /** Calls fn(index, value) for each element of an array; stops at the first non-ok status. */
  template <typename Fn>
  absl::Status ForEachElement(Fn&& fn) const {
    size_t i = 0;
    if (is_array()) {
      const simdjson::dom::array array = e_.get_array().value_unsafe();
      for (simdjson::dom::element v : array) {
        absl::Status s = fn(i++, JsonView(v));
        if (!s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  /** Minified JSON text of the value ("null" for an absent one). */
  std::string dump() const { return set_ ? simdjson::minify(e_) : std::string("null"); }

 private:
  simdjson::dom::element e_;
  bool set_ = false;
};
#pragma GCC diagnostic pop

// The decoders over views (decode.h has them over nlohmann values). `default_kind` and
// `default_version` are the kind and apiVersion of an object without them (the items of a
// typed list such as PodList: ImplyListItemType).
// `notes`: what was defaulted (decode_notes.h), when given.
absl::Status DecodeDocument(JsonView doc, std::string_view file, ObjectSet* out, SkippedKinds* skipped,
                            std::vector<std::string>* invalid, std::string_view default_kind = "",
                            std::string_view default_version = "", DecodeNotes* notes = nullptr);
absl::StatusOr<Node> DecodeNode(JsonView j, std::string_view where, bool strict = true);
absl::StatusOr<Pod> DecodePod(JsonView j, std::string_view where, bool strict = true);
absl::StatusOr<Workload> DecodeWorkload(JsonView j, std::string_view kind, std::string_view where);
absl::StatusOr<Namespace> DecodeNamespace(JsonView j, std::string_view where);
absl::StatusOr<GenericObject> DecodeGeneric(JsonView j, std::string_view kind, std::string_view where);
absl::StatusOr<PodDisruptionBudget> DecodePodDisruptionBudget(JsonView j, std::string_view where);
absl::StatusOr<PriorityClass> DecodePriorityClass(JsonView j, std::string_view where);
absl::StatusOr<ResourceClaim> DecodeResourceClaim(JsonView j, std::string_view where, std::string_view default_version = "");
absl::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(JsonView j, std::string_view where, std::string_view default_version = "");
absl::StatusOr<DeviceClass> DecodeDeviceClass(JsonView j, std::string_view where, std::string_view default_version = "");
absl::StatusOr<ResourceSlice> DecodeResourceSlice(JsonView j, std::string_view where, std::string_view default_version = "");

}  // namespace kplace
