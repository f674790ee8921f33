#pragma once
// Internal to src/config: strict JSON field access that tracks the field path, so that
// every configuration error names the file, the field and the bad value.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "kplace/common/strings.h"

namespace kplace::config_internal {

using json = nlohmann::json;

/** A field path such as `sched.yaml: profiles[0].plugins.score.enabled[1].weight`. */
class FieldPath {
 public:
  FieldPath() = default;
  explicit FieldPath(std::string text) : text_(std::move(text)) {}
  /** The root of a file: keys follow "file: " without a dot. */
  static FieldPath File(std::string_view file) { return FieldPath(StrCat(file, ": ")); }

  FieldPath Key(std::string_view key) const {
    if (text_.empty() || EndsWithSeparator()) return FieldPath(StrCat(text_, key));
    return FieldPath(StrCat(text_, ".", key));
  }
  FieldPath Index(size_t i) const { return FieldPath(StrCat(text_, "[", i, "]")); }
  const std::string& str() const { return text_; }

  /** InvalidArgument "<path>: <what>". */
  absl::Status Error(std::string_view what) const {
    if (text_.empty()) return absl::InvalidArgumentError(std::string(what));
    if (EndsWithSeparator()) return absl::InvalidArgumentError(StrCat(text_, what));
    return absl::InvalidArgumentError(StrCat(text_, ": ", what));
  }

 private:
  bool EndsWithSeparator() const { return text_.size() >= 2 && text_.compare(text_.size() - 2, 2, ": ") == 0; }
  std::string text_;
};

/** Go-style quoted string for error messages. */
inline std::string Quote(std::string_view s) { return json(std::string(s)).dump(); }

/** Absent and null both mean "not set", as for Go pointers and slices. */
inline bool Has(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && !obj.at(key).is_null();
}

inline absl::Status ExpectObject(const json& v, const FieldPath& p) {
  if (!v.is_object()) return p.Error(StrCat("expected an object, got ", v.type_name()));
  return absl::OkStatus();
}

/** Rejects fields the v1 types do not have (kube-scheduler decodes its config strictly). */
inline absl::Status CheckFields(const json& obj, const FieldPath& p, std::initializer_list<const char*> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) return p.Key(it.key()).Error("unknown field");
  }
  return absl::OkStatus();
}

template <typename Int>
absl::Status ReadInt(const json& v, const FieldPath& p, Int* out) {
  int64_t value = 0;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return p.Error(StrCat("integer out of range, got ", v.dump()));
    }
    value = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    value = v.get<int64_t>();
  } else if (v.is_number_float() && std::fabs(v.get<double>()) < 9.2e18 && std::trunc(v.get<double>()) == v.get<double>()) {
    value = static_cast<int64_t>(v.get<double>());  // JSON writers may print 5 as 5.0
  } else {
    return p.Error(StrCat("expected an integer, got ", v.dump()));
  }
  if (value < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
      value > static_cast<int64_t>(std::numeric_limits<Int>::max())) {
    return p.Error(StrCat("integer out of range, got ", value));
  }
  *out = static_cast<Int>(value);
  return absl::OkStatus();
}

/** Reads obj[key] into *out when set; *present tells whether it was. */
template <typename Int>
absl::Status GetInt(const json& obj, const char* key, const FieldPath& p, Int* out, bool* present = nullptr) {
  if (present) *present = Has(obj, key);
  if (!Has(obj, key)) return absl::OkStatus();
  return ReadInt(obj.at(key), p.Key(key), out);
}

inline absl::Status GetString(const json& obj, const char* key, const FieldPath& p, std::string* out) {
  if (!Has(obj, key)) return absl::OkStatus();
  const json& v = obj.at(key);
  if (!v.is_string()) return p.Key(key).Error(StrCat("expected a string, got ", v.dump()));
  *out = v.get<std::string>();
  return absl::OkStatus();
}

inline absl::Status GetBool(const json& obj, const char* key, const FieldPath& p, bool* out) {
  if (!Has(obj, key)) return absl::OkStatus();
  const json& v = obj.at(key);
  if (!v.is_boolean()) return p.Key(key).Error(StrCat("expected a boolean, got ", v.dump()));
  *out = v.get<bool>();
  return absl::OkStatus();
}

/** The array at obj[key] (nullptr when unset), or an error when it is not an array. */
inline absl::Status GetArray(const json& obj, const char* key, const FieldPath& p, const json** out) {
  *out = nullptr;
  if (!Has(obj, key)) return absl::OkStatus();
  const json& v = obj.at(key);
  if (!v.is_array()) return p.Key(key).Error(StrCat("expected a list, got ", v.type_name()));
  *out = &v;
  return absl::OkStatus();
}

inline absl::Status GetStringList(const json& obj, const char* key, const FieldPath& p,
                                  std::vector<std::string>* out) {
  const json* arr = nullptr;
  if (absl::Status s = GetArray(obj, key, p, &arr); !s.ok()) return s;
  if (!arr) return absl::OkStatus();
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& e = (*arr)[i];
    if (!e.is_string()) return p.Key(key).Index(i).Error(StrCat("expected a string, got ", e.dump()));
    out->push_back(e.get<std::string>());
  }
  return absl::OkStatus();
}

}  // namespace kplace::config_internal
