#include "src/serve/pod_shapes.h"

#include <cstdint>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <simdjson.h>

#include "absl/time/time.h"
#include "kplace/model/validation.h"

namespace kplace::serve {

namespace {

// Bytes a scan stops at: inside a string ('"', '\\'), and between values (quotes and
// brackets). The scan loops test one table entry per byte.
struct ByteClasses {
  bool in_string[256] = {};
  bool in_value[256] = {};
  constexpr ByteClasses() {
    in_string[static_cast<unsigned char>('"')] = in_string[static_cast<unsigned char>('\\')] = true;
    for (const char c : {'"', '{', '}', '[', ']'}) in_value[static_cast<unsigned char>(c)] = true;
  }
};
constexpr ByteClasses kBytes;

// The first position at or after `pos` whose byte is in `table` (n: none). Pod JSON runs
// long between such bytes (keys, quantities, label values), so 16 bytes are tested at once
// where SSE2 is there; the table decides the rest.
template <char... Cs>
size_t FindAny(std::string_view t, size_t pos, const bool (&table)[256]) {
  const size_t n = t.size();
#if defined(__SSE2__)
  for (; pos + 16 <= n; pos += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data() + pos));
    __m128i hit = _mm_setzero_si128();
    ((hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8(Cs)))), ...);
    const int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return pos + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#endif
  while (pos < n && !table[static_cast<unsigned char>(t[pos])]) ++pos;
  return pos;
}

}  // namespace

// A forward scan over JSON text: right on valid JSON, and on anything else it stops
// without reading past the end (what it then returns does not matter: see pod_shapes.h).
class PodShapeKeyer::Scanner {
 public:
  explicit Scanner(std::string_view t) : t_(t) {}

  size_t pos = 0;
  std::string_view text() const { return t_; }
  bool At(char c) const { return pos < t_.size() && t_[pos] == c; }
  void Space() {
    while (pos < t_.size() && (t_[pos] == ' ' || t_[pos] == '\n' || t_[pos] == '\r' || t_[pos] == '\t')) ++pos;
  }
  bool AtEnd() {
    Space();
    return pos == t_.size();
  }
  // At '"': past the closing quote; *escaped when the string has a backslash.
  bool String(bool* escaped) {
    const size_t n = t_.size();
    for (++pos;; pos += 2) {
      pos = FindAny<'"', '\\'>(t_, pos, kBytes.in_string);
      if (pos >= n) return false;
      if (t_[pos] == '"') {
        ++pos;
        return true;
      }
      *escaped = true;  // a backslash: skip the character it escapes
    }
  }
  // Past the value at pos (brackets only counted, scalars up to their delimiter).
  bool Value() {
    if (pos >= t_.size()) return false;
    bool escaped = false;
    if (t_[pos] == '"') return String(&escaped);
    if (t_[pos] == '{' || t_[pos] == '[') {
      int64_t depth = 0;
      const size_t n = t_.size();
      while (pos < n) {
        pos = FindAny<'"', '{', '}', '[', ']'>(t_, pos, kBytes.in_value);
        if (pos >= n) return false;
        const char c = t_[pos];
        if (c == '"') {
          if (!String(&escaped)) return false;
          continue;
        }
        if (c == '{' || c == '[') {
          ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
          ++pos;
          return true;
        }
        ++pos;
      }
      return false;
    }
    const size_t start = pos;
    while (pos < t_.size() && t_[pos] != ',' && t_[pos] != '}' && t_[pos] != ']' && t_[pos] != ' ' && t_[pos] != '\n' &&
           t_[pos] != '\r' && t_[pos] != '\t') {
      ++pos;
    }
    return pos > start;
  }
  // A string token with no escape at pos: its span, quotes included.
  bool PlainToken(std::string_view* token) {
    if (!At('"')) return false;
    const size_t start = pos;
    bool escaped = false;
    if (!String(&escaped) || escaped) return false;
    *token = t_.substr(start, pos - start);
    return true;
  }
  // The members of the object at pos: fn(key) consumes each value; a key with an escape, or
  // fn returning false, ends the scan with false.
  template <typename Fn>
  bool Object(Fn&& fn) {
    if (!At('{')) return false;
    ++pos;
    Space();
    if (At('}')) {
      ++pos;
      return true;
    }
    for (;;) {
      std::string_view key;
      if (!PlainToken(&key)) return false;
      Space();
      if (!At(':')) return false;
      ++pos;
      Space();
      if (!fn(key.substr(1, key.size() - 2))) return false;
      Space();
      if (At(',')) {
        ++pos;
        Space();
        continue;
      }
      if (!At('}')) return false;
      ++pos;
      return true;
    }
  }

 private:
  std::string_view t_;
};

namespace {

// A string token whose bytes between the quotes are its value: no escape, no control
// character, valid UTF-8 (what a JSON parser accepts without changing a byte).
bool PlainString(std::string_view token) {
  if (token.size() < 2 || token.front() != '"' || token.back() != '"') return false;
  const std::string_view inner = token.substr(1, token.size() - 2);
  for (const char c : inner) {
    if (c == '\\' || c == '"' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return simdjson::validate_utf8(inner.data(), inner.size());
}

void AppendLength(std::string* key, size_t n) {
  const uint32_t v = static_cast<uint32_t>(n);
  key->append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string_view Unquoted(std::string_view token) { return token.substr(1, token.size() - 2); }

}  // namespace

bool PodShapeKeyer::KeyAt(Scanner* s, PodCuts* cuts) {
  const size_t start = s->pos;
  std::optional<std::string_view> name, uid, node_name, created;
  bool metadata = false, spec = false, created_seen = false;
  // One of the three values: a plain string token, once.
  const auto cut = [&](std::optional<std::string_view>* into) {
    std::string_view token;
    if (*into || !s->PlainToken(&token) || !PlainString(token)) return false;
    *into = token;
    return true;
  };
  const bool ok = s->Object([&](std::string_view key) {
    if (key == "metadata") {
      if (metadata) return false;
      metadata = true;
      return s->Object([&](std::string_view k) {
        if (k == "name") return cut(&name);
        if (k == "uid") return cut(&uid);
        if (k == "creationTimestamp") {
          // Given twice, the decode keeps the last (as Go does): not a text to key.
          if (created_seen) return false;
          created_seen = true;
          if (s->At('"')) return cut(&created);
        }
        return s->Value();
      });
    }
    if (key == "spec") {
      if (spec) return false;
      spec = true;
      if (!s->At('{')) return s->Value();  // the decoder names what is wrong
      return s->Object([&](std::string_view k) { return k == "nodeName" ? cut(&node_name) : s->Value(); });
    }
    return s->Value();
  });
  if (!ok || !name || name->size() <= 2) return false;
  // The cut tokens in text order (metadata may follow spec).
  std::string_view cut_tokens[4];
  size_t n = 0;
  for (const std::optional<std::string_view>* c : {&name, &uid, &node_name, &created}) {
    if (*c) cut_tokens[n++] = **c;
  }
  for (size_t i = 1; i < n; ++i) {
    for (size_t j = i; j > 0 && cut_tokens[j].data() < cut_tokens[j - 1].data(); --j) std::swap(cut_tokens[j], cut_tokens[j - 1]);
  }
  BuildKey(s->text().substr(start, s->pos - start), cut_tokens, n);
  cuts->name = Unquoted(*name);
  cuts->uid = uid ? std::optional<std::string_view>(Unquoted(*uid)) : std::nullopt;
  cuts->node_name = node_name ? std::optional<std::string_view>(Unquoted(*node_name)) : std::nullopt;
  cuts->creation_timestamp = created ? std::optional<std::string_view>(Unquoted(*created)) : std::nullopt;
  return true;
}

void PodShapeKeyer::BuildKey(std::string_view text, std::string_view* cut, size_t n) {
  key_.assign(1, static_cast<char>(n));
  const char* at = text.data();
  for (size_t i = 0; i < n; ++i) {
    AppendLength(&key_, static_cast<size_t>(cut[i].data() - at));
    at = cut[i].data() + cut[i].size();
  }
  AppendLength(&key_, static_cast<size_t>(text.data() + text.size() - at));
  at = text.data();
  for (size_t i = 0; i < n; ++i) {
    key_.append(at, static_cast<size_t>(cut[i].data() - at));
    at = cut[i].data() + cut[i].size();
  }
  key_.append(at, static_cast<size_t>(text.data() + text.size() - at));
}

bool PodShapeKeyer::Key(std::string_view text, PodCuts* cuts) {
  Scanner s(text);
  s.Space();
  return KeyAt(&s, cuts) && s.AtEnd();
}

bool PodShapeKeyer::KeyEvent(std::string_view text, std::string_view* type, std::string_view* object, PodCuts* cuts) {
  Scanner s(text);
  s.Space();
  bool have_type = false, have_object = false;
  const bool ok = s.Object([&](std::string_view key) {
    if (key == "type" && !have_type) {
      have_type = true;
      return s.PlainToken(type);
    }
    if (key == "object" && !have_object) {
      have_object = true;
      const size_t start = s.pos;
      if (!KeyAt(&s, cuts)) return false;
      *object = text.substr(start, s.pos - start);
      return true;
    }
    return false;
  });
  return ok && have_type && have_object && s.AtEnd();
}

bool PodShapeKeyer::SplitList(std::string_view text, std::vector<std::string_view>* fields,
                              const std::function<bool(const Item&)>& each) {
  Scanner s(text);
  s.Space();
  bool have_items = false;
  const bool ok = s.Object([&](std::string_view key) {
    if (key != "items") {
      const size_t start = s.pos;
      if (!s.Value()) return false;
      fields->push_back(text.substr(start, s.pos - start));
      return true;
    }
    if (have_items || !s.At('[')) return false;
    have_items = true;
    ++s.pos;
    s.Space();
    if (s.At(']')) {
      ++s.pos;
      return true;
    }
    for (;;) {
      Item item;
      const size_t start = s.pos;
      item.keyed = s.At('{') && KeyAt(&s, &item.cuts);
      if (!item.keyed) {
        s.pos = start;
        if (!s.Value()) return false;
      }
      item.text = text.substr(start, s.pos - start);
      if (!each(item)) return false;
      s.Space();
      if (s.At(',')) {
        ++s.pos;
        s.Space();
        continue;
      }
      if (!s.At(']')) return false;
      ++s.pos;
      return true;
    }
  });
  return ok && have_items && s.AtEnd();
}

bool PodShapes::AppendInstance(const Pod& shape, const PodCuts& cuts, std::vector<Pod>* out) {
  if (!IsDns1123Subdomain(cuts.name)) return false;  // ValidatePodName
  int64_t created = 0;
  if (cuts.creation_timestamp && !cuts.creation_timestamp->empty()) {  // as DecodeMeta reads it
    absl::Time t;
    std::string err;
    const absl::string_view text(cuts.creation_timestamp->data(), cuts.creation_timestamp->size());  // no copy per pod
    if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return false;
    created = absl::ToUnixSeconds(absl::FromUnixNanos(absl::ToUnixNanos(t)));  // nanoseconds saturate, as there
  }
  Pod& pod = out->emplace_back(shape);
  pod.meta.name = std::string(cuts.name);
  if (cuts.uid) pod.meta.uid = std::string(*cuts.uid);
  if (cuts.node_name) pod.node_name = std::string(*cuts.node_name);
  if (cuts.creation_timestamp) {
    pod.meta.creation_timestamp = std::string(*cuts.creation_timestamp);
    pod.meta.creation_unix = created;
  }
  return true;
}

}  // namespace kplace::serve
