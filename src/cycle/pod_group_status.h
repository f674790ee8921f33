#pragma once
// The statuses of a PodGroup cycle as upstream's framework prints them, and GangScheduling's
// PlacementFeasible (docs/podgroup.md). Shared by the cycle and its preemption.
#include <cstdint>
#include <string>
#include <string_view>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/objects.h"

namespace kplace::cycle {

/** A group status: the wrapped error ("pod group is unschedulable") first, then the reasons. */
struct GroupStatus {
  static constexpr char kUnschedulableGroup[] = "pod group is unschedulable";
  Code code = Code::kSuccess;
  bool wrapped = false;  // carries "pod group is unschedulable" as its error
  std::string reason;    // the reasons joined by ", "; "" when none
  std::string Message() const {
    if (!wrapped) return reason;
    return reason.empty() ? kUnschedulableGroup : StrCat(kUnschedulableGroup, ", ", reason);
  }
  /** Status.AppendReason. */
  void Append(std::string_view r) { reason = reason.empty() ? std::string(r) : StrCat(reason, ", ", r); }
};

/** GangScheduling's PlacementFeasible: whether minCount can still be met (a basic group
 *  needs one pod). The message is written only for a status that ends the loop or is kept. */
struct Feasibility {
  int64_t min_count, scheduled, remaining;
  Code Check() const {
    if (remaining + scheduled < min_count) return Code::kUnschedulable;
    return scheduled < min_count ? Code::kWait : Code::kSuccess;
  }
  GroupStatus Status() const {
    const Code code = Check();
    if (code == Code::kSuccess) return {};
    return {code, false,
            StrCat("minCount (", min_count, ") ", code == Code::kWait ? "is not yet" : "cannot be", " satisfied: ",
                   scheduled, " scheduled, ", remaining, " remaining")};
  }
};

/** A PodGroup's priority as priority admission leaves it: spec.priority, else its
 *  PriorityClass's value (or the global default class's), else 0. */
int32_t PodGroupPriority(const PodGroup& group, const ObjectSet& objects);

}  // namespace kplace::cycle
