// ParseDocuments: JSON through nlohmann's iterative parser, YAML through yaml-cpp's event
// parser with kplace's own builder. Both are guarded so that no input can drive them into
// unbounded work: nesting deeper than kMaxNestingDepth is refused before parsing (the DOM's copy
// and dump recurse), a YAML stream that stops advancing is an error (yaml-cpp returns empty
// documents forever on a stray ','), and aliases expand within a node budget (a few hundred
// bytes of nested aliases would otherwise expand to billions of nodes).
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/model/validation.h"

namespace kplace {
namespace {

using json = nlohmann::json;

// The deepest [ / { nesting outside quoted strings, and where it first exceeds `limit`.
// JSON strings use "..." with backslash escapes; YAML adds '...' with '' as the escape,
// which only matters when a quote character sits inside the other kind of string.
bool TooDeep(std::string_view text, bool yaml, int* line) {
  int depth = 0;
  *line = 1;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') ++*line;
    if (quote) {
      if (quote == '"' && c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || (yaml && c == '\'')) {
      // In YAML a quote only opens a string at the start of a token.
      if (!yaml || i == 0 || std::string_view(" \t\n[{,:-").find(text[i - 1]) != std::string_view::npos) quote = c;
    } else if (yaml && c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;  // a comment
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNestingDepth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

bool ValidUtf8(const std::string& s) { return InvalidUtf8At(s) == std::string_view::npos; }

struct YamlError {
  int line;
  std::string what;
};

// Builds JSON documents from yaml-cpp's events. Scalars become strings unless plainly typed
// (true/false/null, integers of at most 18 digits); quoted scalars stay strings; numbers
// that are not plain integers keep their text so that quantities like 1.5 or 1e3 parse
// exactly.
class JsonBuilder final : public YAML::EventHandler {
 public:
  explicit JsonBuilder(int64_t budget) : budget_(budget) {}

  std::vector<json> docs;

  void OnDocumentStart(const YAML::Mark& mark) override {
    // yaml-cpp hands back an empty document forever where it cannot advance (a stray ',').
    if (mark.pos <= last_start_) throw YamlError{mark.line + 1, "the parser cannot advance (a stray ',' or flow indicator?)"};
    last_start_ = mark.pos;
    stack_.clear();
  }
  void OnDocumentEnd() override { docs.push_back(std::move(root_)); root_ = nullptr; anchors_.clear(); }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Add(mark, nullptr, anchor, 1); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw YamlError{mark.line + 1, "unknown alias"};
    Add(mark, it->second.first, 0, it->second.second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    // JSON (and so every later stage) holds UTF-8 only; the JSON parser checks its input.
    if (!ValidUtf8(value)) throw YamlError{mark.line + 1, "invalid UTF-8 in a scalar"};
    Add(mark, Scalar(tag, value), anchor, 1, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, json::array(), anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, json::object(), anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    json value;
    YAML::anchor_t anchor;
    int64_t nodes;      // in this subtree so far
    bool want_key;      // maps: the next node is a key
    std::string key;
    int line;
  };

  static json Scalar(const std::string& tag, const std::string& s) {
    if (tag == "!") return s;  // quoted
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    if (s == "null" || s == "~" || s == "Null" || s == "NULL") return nullptr;
    if (s.empty()) return s;
    size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    bool digits = i < s.size() && s.size() - i <= 18;
    for (size_t k = i; digits && k < s.size(); ++k) digits = s[k] >= '0' && s[k] <= '9';
    if (digits) return std::stoll(s);
    return s;
  }

  void Spend(const YAML::Mark& mark, int64_t nodes) {
    budget_ -= nodes;
    if (budget_ < 0) throw YamlError{mark.line + 1, "aliases expand to too many nodes"};
  }

  void Open(const YAML::Mark& mark, json value, YAML::anchor_t anchor) {
    Spend(mark, 1);
    if (!stack_.empty() && stack_.back().value.is_object() && stack_.back().want_key) {
      throw YamlError{mark.line + 1, "a map key must be a scalar"};
    }
    stack_.push_back(Frame{std::move(value), anchor, 1, true, {}, mark.line + 1});
  }

  void Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    YAML::Mark mark;
    mark.line = f.line - 1;
    Place(mark, std::move(f.value), f.anchor, f.nodes);
  }

  // `raw`: a scalar's text, which is what a map key keeps.
  void Add(const YAML::Mark& mark, json value, YAML::anchor_t anchor, int64_t nodes, const std::string* raw = nullptr) {
    Spend(mark, nodes);
    if (!stack_.empty() && stack_.back().value.is_object() && stack_.back().want_key) {
      Frame& f = stack_.back();
      if (!raw) throw YamlError{mark.line + 1, "a map key must be a scalar"};
      f.key = *raw;
      if (f.value.contains(f.key)) throw YamlError{mark.line + 1, StrCat("duplicate key \"", f.key, "\"")};
      f.want_key = false;
      return;
    }
    Place(mark, std::move(value), anchor, nodes);
  }

  // Puts a finished node into its parent (or makes it the document's root).
  void Place(const YAML::Mark&, json value, YAML::anchor_t anchor, int64_t nodes) {
    if (anchor) anchors_[anchor] = {value, nodes};
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& f = stack_.back();
    f.nodes += nodes;
    if (f.value.is_array()) {
      f.value.push_back(std::move(value));
    } else {
      f.value[f.key] = std::move(value);
      f.want_key = true;
    }
  }

  int64_t budget_;
  int64_t last_start_ = -1;
  std::vector<Frame> stack_;
  json root_;
  std::map<YAML::anchor_t, std::pair<json, int64_t>> anchors_;
};

}  // namespace

absl::StatusOr<std::vector<json>> ParseDocuments(std::string_view text, std::string_view file) {
  size_t first = text.find_first_not_of(" \t\r\n");
  const bool is_json = first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
  int line = 0;
  if (TooDeep(text, !is_json, &line)) {
    return absl::InvalidArgumentError(
        StrCat(file, ": ", is_json ? "JSON" : "YAML", " nested deeper than ", kMaxNestingDepth, " levels at line ", line));
  }
  std::vector<json> docs;
  if (is_json) {
    try {
      docs.push_back(json::parse(text));
      return docs;
    } catch (const json::exception& e) {
      // The parser's message would quote the bad bytes back.
      if (const size_t bad = InvalidUtf8At(text); bad != std::string_view::npos) {
        return absl::InvalidArgumentError(StrCat(file, ": ", InvalidUtf8Where(text, bad)));
      }
      // parse_error, and out_of_range for a number past double's range (1e400).
      return absl::InvalidArgumentError(StrCat(file, ": invalid JSON: ", e.what()));
    }
  }
  // Expanded aliases may cost at most this many nodes: plenty for any real file (anchors of
  // templates), nothing like an alias bomb.
  JsonBuilder builder(1000000 + 64 * static_cast<int64_t>(text.size()));
  try {
    std::stringstream in{std::string(text)};
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat(file, ": invalid YAML at line ", e.mark.line + 1, ": ", e.msg));
  } catch (const YamlError& e) {
    return absl::InvalidArgumentError(
        e.line > 0 ? StrCat(file, ": invalid YAML at line ", e.line, ": ", e.what) : StrCat(file, ": invalid YAML: ", e.what));
  }
  return std::move(builder.docs);
}

}  // namespace kplace
