#pragma once
// Host helpers for NodeAffinity, shared by the reference and the engine: Go's ParseInt
// and the parse errors of node-selector requirements with upstream's exact messages
// (small-plugins.md §1.4-1.7). Host-only, host-safe (no Abseil, no CUDA).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kplace/model/objects.h"

namespace kplace::plugins::node_affinity {

/** strconv.ParseInt(s, 10, 64): optional sign, decimal digits (leading zeros allowed),
 *  in range. False on anything else. */
bool ParseGoInt64(std::string_view s, int64_t* out);

/** The errors labels.NewRequirement (through nodeSelectorRequirementsAsSelector) reports
 *  for matchExpressions entry `r` at field path `path` (e.g. "[0].matchExpressions[1]"),
 *  one message per leaf error, in upstream order. Empty when it parses. */
std::vector<std::string> LabelRequirementErrors(const NodeSelectorRequirement& r, const std::string& path);

/** The same for a matchFields entry (only In/NotIn with exactly one value parse). */
std::vector<std::string> FieldRequirementErrors(const NodeSelectorRequirement& r, const std::string& path);

/** Every parse error of a term whose path is `path` ("[i]" for preferred terms,
 *  "nodeSelectorTerms[i]" for selectors). Lists of length 0 are not parsed at all. */
std::vector<std::string> NodeSelectorTermErrors(const NodeSelectorTerm& term, const std::string& path);

/** utilerrors' aggregate text: duplicates dropped, one error bare, several "[a, b]". */
std::string AggregateErrors(const std::vector<std::string>& errors);

/** A term with neither matchExpressions nor matchFields: dropped before matching. */
inline bool IsEmptyTerm(const NodeSelectorTerm& t) { return t.match_expressions.empty() && t.match_fields.empty(); }

/** The term parses (NodeSelectorTermErrors finds nothing). */
bool Parses(const NodeSelectorTerm& t);

/** A parsable, non-empty term against `node`'s labels and, when it has a name, its
 *  metadata.name (the only field a node offers; any other reads as ""). */
bool TermMatches(const NodeSelectorTerm& t, const Node& node);

/** nodeaffinity.NodeSelector.Match as string compares: the OR of the non-empty terms; a
 *  term that does not parse never matches. NodeAffinity's required terms and a
 *  ResourceClaim allocation's node selector (DynamicResources) are matched this way. */
bool SelectorMatches(const NodeSelector& s, const Node& node);

}  // namespace kplace::plugins::node_affinity
