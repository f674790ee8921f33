#include "src/model/json_split.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace kplace {
namespace {

constexpr size_t kNone = std::string_view::npos;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool IsBracketOrQuote(char c) { return c == '"' || c == '{' || c == '[' || c == '}' || c == ']'; }

size_t SkipSpace(std::string_view t, size_t i) {
  while (i < t.size() && IsSpace(t[i])) ++i;
  return i;
}

// Past the closing quote of the string opening at t[i]; kNone when unterminated. memchr
// finds both quotes and backslashes many bytes at a time.
size_t StringEnd(std::string_view t, size_t i, bool* escaped) {
  for (++i; i < t.size();) {
    const char* begin = t.data() + i;
    const void* quote = std::memchr(begin, '"', t.size() - i);
    if (!quote) return kNone;
    const size_t len = static_cast<const char*>(quote) - begin;
    const void* backslash = std::memchr(begin, '\\', len);
    if (!backslash) return i + len + 1;
    *escaped = true;
    i += static_cast<const char*>(backslash) - begin + 2;  // past the escaped character
  }
  return kNone;
}

// Past the value starting at t[i]. Brackets are only counted: whether they match, and
// everything inside, is the span's parser's to check.
size_t ValueEnd(std::string_view t, size_t i) {
  if (i >= t.size()) return kNone;
  bool escaped = false;
  if (t[i] == '"') return StringEnd(t, i, &escaped);
  if (t[i] == '{' || t[i] == '[') {
    int64_t depth = 0;
    for (; i < t.size(); ++i) {
      while (i < t.size() && !IsBracketOrQuote(t[i])) ++i;
      if (i == t.size()) break;
      const char c = t[i];
      if (c == '"') {
        i = StringEnd(t, i, &escaped);
        if (i == kNone) return kNone;
        --i;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return kNone;
  }
  size_t j = i;  // a number, true, false or null
  while (j < t.size() && !IsSpace(t[j]) && t[j] != ',' && t[j] != ']' && t[j] != '}') ++j;
  return j == i ? kNone : j;
}

// At t[*i] after a member: ',' (true, more follow) or `close` (false, *done set).
bool NextMember(std::string_view t, size_t* i, char close, bool* done) {
  *i = SkipSpace(t, *i);
  if (*i < t.size() && t[*i] == ',') {
    *i = SkipSpace(t, *i + 1);
    return true;
  }
  *done = *i < t.size() && t[*i] == close;
  ++*i;
  return false;
}

bool SplitItems(std::string_view t, size_t* i, std::vector<std::string_view>* items) {
  *i = SkipSpace(t, *i + 1);
  if (*i < t.size() && t[*i] == ']') {
    ++*i;
    return true;
  }
  for (bool done = false;;) {
    const size_t end = ValueEnd(t, *i);
    if (end == kNone) return false;
    items->push_back(t.substr(*i, end - *i));
    *i = end;
    if (!NextMember(t, i, ']', &done)) return done;
  }
}

}  // namespace

bool SplitTopLevel(std::string_view t, TopLevelSpans* out) {
  size_t i = SkipSpace(t, 0);
  if (i >= t.size() || t[i] != '{') return false;
  i = SkipSpace(t, i + 1);
  if (i < t.size() && t[i] == '}') return SkipSpace(t, i + 1) == t.size();
  for (bool done = false;;) {
    if (i >= t.size() || t[i] != '"') return false;
    bool escaped = false;
    const size_t key_end = StringEnd(t, i, &escaped);
    if (key_end == kNone || escaped) return false;
    const std::string_view key = t.substr(i + 1, key_end - i - 2);
    i = SkipSpace(t, key_end);
    if (i >= t.size() || t[i] != ':') return false;
    i = SkipSpace(t, i + 1);
    if (key == "items") {
      if (out->has_items || i >= t.size() || t[i] != '[') return false;
      out->has_items = true;
      if (!SplitItems(t, &i, &out->items)) return false;
    } else {
      const size_t end = ValueEnd(t, i);
      if (end == kNone) return false;
      out->fields.emplace_back(key, t.substr(i, end - i));
      i = end;
    }
    if (!NextMember(t, &i, '}', &done)) return done && SkipSpace(t, i) == t.size();
  }
}

}  // namespace kplace
