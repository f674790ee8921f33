#pragma once
// Splits a top-level JSON object into its fields, and its "items" array into one span per
// element, so that a `kind: List` of 100,000 objects is parsed one item at a time instead of
// into one DOM as large as the file (three times its size in memory).
#include <string_view>
#include <utility>
#include <vector>

namespace kplace {

struct TopLevelSpans {
  /** Each field other than "items": its key (as written, unescaped only if it has no
   *  backslash) and the text of its value. */
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  /** The text of each element of "items", in order. */
  std::vector<std::string_view> items;
  bool has_items = false;
};

/** @brief Splits `text`, one JSON object, at its top two levels. Only the punctuation of
 *  those levels is checked here: the caller must parse every span it gets (each is a JSON
 *  value when `text` is valid). Returns false when `text` is not an object of that shape
 *  (a syntax error, a key with escapes, "items" not a list, given twice); the caller then
 *  parses the whole text. */
bool SplitTopLevel(std::string_view text, TopLevelSpans* out);

}  // namespace kplace
