#pragma once
// Toleration ↔ taint matching on the engine (small-plugins.md §1.3), shared by
// TaintToleration and NodeUnschedulable. Taints live in per-node CSR columns of interned
// ids; the host compiles a pod's tolerations against those ids, so device code compares
// integers only. Host-safe.
#include <cstdint>
#include <string>

#include "kplace/common/host_device.h"
#include "kplace/model/objects.h"

namespace kplace::plugins {

// Effect codes. A toleration's empty effect is kEffectAny; an effect string that is none
// of the three known ones gets a code no counted taint carries, so it tolerates nothing
// that Filter or Score look at.
constexpr int8_t kEffectAny = 0;
constexpr int8_t kEffectNoSchedule = 1;
constexpr int8_t kEffectPreferNoSchedule = 2;
constexpr int8_t kEffectNoExecute = 3;
constexpr int8_t kEffectOtherTaint = 4;
constexpr int8_t kEffectOtherToleration = 5;

enum class TolerationOp : int8_t { kEqual, kExists, kLt, kGt };

constexpr int32_t kAnyTaintKey = -2;  // a toleration with an empty key

/** One toleration compiled against the taint interner. Tolerations that can match no
 *  taint (unknown key or value, Lt/Gt with the gate off or a non-canonical value, an
 *  unknown operator) are dropped at compile time rather than encoded. */
struct CompiledToleration {
  int64_t value_int;  // Lt/Gt threshold
  int32_t key_id;     // kAnyTaintKey or an interned key
  int32_t value_id;   // Equal: interned value
  TolerationOp op;
  int8_t effect;  // kEffectAny or a taint effect code
};

/** Taint columns: node i owns taints [offsets[i], offsets[i + 1]). */
struct TaintNodeView {
  const int32_t* offsets;
  const int32_t* key_id;
  const int32_t* value_id;
  const int8_t* effect;
  const uint8_t* value_is_int;  // canonical decimal int64 (§1.3)
  const int64_t* value_int;
};

KPLACE_HOST_DEVICE inline bool CompiledTolerates(const CompiledToleration& t, const TaintNodeView& v, int32_t k) {
  if (t.effect != kEffectAny && t.effect != v.effect[k]) return false;
  if (t.key_id != kAnyTaintKey && t.key_id != v.key_id[k]) return false;
  switch (t.op) {
    case TolerationOp::kEqual:
      return t.value_id == v.value_id[k];
    case TolerationOp::kExists:
      return true;
    case TolerationOp::kLt:
      return v.value_is_int[k] && v.value_int[k] < t.value_int;
    case TolerationOp::kGt:
      return v.value_is_int[k] && v.value_int[k] > t.value_int;
  }
  return false;
}

KPLACE_HOST_DEVICE inline bool AnyCompiledTolerates(const CompiledToleration* list, int32_t count,
                                                    const TaintNodeView& v, int32_t k) {
  for (int32_t j = 0; j < count; ++j) {
    if (CompiledTolerates(list[j], v, k)) return true;
  }
  return false;
}

// ---- host-only helpers ----------------------------------------------------------

inline int8_t TaintEffectCode(const std::string& effect) {
  if (effect == "NoSchedule") return kEffectNoSchedule;
  if (effect == "PreferNoSchedule") return kEffectPreferNoSchedule;
  if (effect == "NoExecute") return kEffectNoExecute;
  return kEffectOtherTaint;
}

inline int8_t TolerationEffectCode(const std::string& effect) {
  if (effect.empty()) return kEffectAny;
  int8_t code = TaintEffectCode(effect);
  return code == kEffectOtherTaint ? kEffectOtherToleration : code;
}

/** The canonical decimal integer check of §1.3 plus the int64 parse: no '+', no leading
 *  zeros, no "-0", no blanks, within [-2^63, 2^63-1]. */
inline bool ParseCanonicalInt64(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  size_t i = 0;
  bool negative = s[0] == '-';
  if (negative) {
    if (s.size() == 1) return false;
    i = 1;
  }
  if (s[i] == '0') {
    if (negative || s.size() != 1) return false;
    *out = 0;
    return true;
  }
  const uint64_t limit = negative ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
  uint64_t magnitude = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (magnitude > (limit - d) / 10) return false;
    magnitude = magnitude * 10 + d;
  }
  // -(2^63) has no positive int64 twin: negate in unsigned arithmetic.
  *out = negative ? static_cast<int64_t>(~magnitude + 1) : static_cast<int64_t>(magnitude);
  return true;
}

/** §1.3 on strings, for taints the host synthesizes (NodeUnschedulable). */
inline bool HostToleratesTaint(const Toleration& t, const Taint& x, bool comparison_operators) {
  if (!t.effect.empty() && t.effect != x.effect) return false;
  if (!t.key.empty() && t.key != x.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == x.value;
  if (t.op == "Exists") return true;
  if (t.op == "Lt" || t.op == "Gt") {
    int64_t want = 0, have = 0;
    if (!comparison_operators || !ParseCanonicalInt64(t.value, &want) || !ParseCanonicalInt64(x.value, &have)) {
      return false;
    }
    return t.op == "Lt" ? have < want : have > want;
  }
  return false;
}

}  // namespace kplace::plugins
