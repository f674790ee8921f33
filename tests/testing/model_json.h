#pragma once
// Decoded model objects (kplace/model/objects.h) rendered field by field as JSON, so tests
// compare every field of two decodes at once and print the difference readably.
#include <nlohmann/json.hpp>

#include "kplace/model/objects.h"

namespace kplace::testing {

nlohmann::json ToJson(const ObjectMeta& m);
nlohmann::json ToJson(const Node& n);
nlohmann::json ToJson(const Pod& p);
nlohmann::json ToJson(const Namespace& n);
nlohmann::json ToJson(const GenericObject& o);
nlohmann::json ToJson(const Workload& w);
nlohmann::json ToJson(const PodDisruptionBudget& b);
nlohmann::json ToJson(const PriorityClass& c);
/** Every list of the set, in its order. */
nlohmann::json ToJson(const ObjectSet& s);

}  // namespace kplace::testing
