#pragma once
// Framework vocabulary shared by the reference and the engine. Host-safe: no Abseil,
// no CUDA, so nvcc-compiled plugin code may include it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kplace {

constexpr int64_t kMaxNodeScore = 100;
constexpr int64_t kMinNodeScore = 0;

/** Status codes of the scheduling framework, named as upstream. */
enum class Code : uint8_t {
  kSuccess,
  kError,
  kUnschedulable,
  kUnschedulableAndUnresolvable,
  kWait,
  kSkip,
  kPending,
};

const char* CodeName(Code code);
/** Parses "Success", "Unschedulable", ...; false when unknown. */
bool ParseCode(const std::string& name, Code* out);

/** A plugin's verdict: a code and the reasons upstream would report. */
struct PluginStatus {
  Code code = Code::kSuccess;
  std::vector<std::string> reasons;
  /** kplace's own refusal (an Error): the step needs what kplace does not model, so no
   *  decision is made. The framework passes it on as it is, never wrapped in "running
   *  plugin ..." text, and it ends the pod's cycle with its message alone. */
  bool refused = false;

  static PluginStatus Success() { return {}; }
  static PluginStatus Skip() { return {Code::kSkip, {}}; }
  static PluginStatus Make(Code code, std::string reason) { return {code, {std::move(reason)}}; }
  static PluginStatus Error(std::string reason) { return {Code::kError, {std::move(reason)}}; }
  static PluginStatus Refuse(std::string reason) { return {Code::kError, {std::move(reason)}, true}; }
  bool IsSuccess() const { return code == Code::kSuccess; }
  bool IsSkip() const { return code == Code::kSkip; }
  bool IsRejected() const {
    return code == Code::kUnschedulable || code == Code::kUnschedulableAndUnresolvable ||
           code == Code::kPending;
  }
  /** Reasons joined with ", " as upstream's Status.Message(). */
  std::string Message() const;
  friend bool operator==(const PluginStatus& a, const PluginStatus& b) {
    return a.code == b.code && a.reasons == b.reasons && a.refused == b.refused;
  }
};

/** Extension points a plugin implements, as bits. */
enum ExtensionPoint : unsigned {
  kPreFilterPoint = 1u << 0,
  kFilterPoint = 1u << 1,
  kPreScorePoint = 1u << 2,
  kScorePoint = 1u << 3,
  kNormalizeScorePoint = 1u << 4,
};

/** Feature gates at kube-scheduler v1.37 defaults, with per-run overrides. */
struct FeatureGates {
  std::map<std::string, bool> overrides;
  bool Enabled(const std::string& gate) const;
};

/** The gates kplace knows (each changes what some plugin or the cycle does), with their
 *  v1.37 defaults. */
const std::map<std::string, bool>& KnownFeatureGates();

}  // namespace kplace
