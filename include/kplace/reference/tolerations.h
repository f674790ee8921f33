#pragma once
// Reference toleration matching (small-plugins.md §1.3), shared by the reference
// TaintToleration and NodeUnschedulable.
#include <cstdint>
#include <string>
#include <vector>

#include "kplace/model/objects.h"

namespace kplace::reference {

/** @brief True when `s` is a canonical decimal integer within int64; sets `*out`. */
bool ParseDecimalInteger(const std::string& s, int64_t* out);

/** @brief Whether toleration `t` tolerates taint `x`; Lt/Gt only with `comparison_operators`. */
bool ToleratesTaint(const Toleration& t, const Taint& x, bool comparison_operators);

/** @brief Whether some toleration of `list` tolerates `x`. */
bool TolerationsTolerateTaint(const std::vector<Toleration>& list, const Taint& x, bool comparison_operators);

}  // namespace kplace::reference
