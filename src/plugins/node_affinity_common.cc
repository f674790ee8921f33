#include "kplace/plugins/node_affinity_common.h"

#include <cstdio>
#include <set>

namespace kplace::plugins::node_affinity {
namespace {

constexpr char kQualifiedNameErrMsg[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character";
constexpr char kQualifiedNameFmt[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr char kLabelValueErrMsg[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character";
constexpr char kLabelValueFmt[] = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr char kDns1123SubdomainErrMsg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character";
constexpr char kDns1123SubdomainFmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

// validation.RegexError: examples are each followed by ", ", joined by " or ".
std::string RegexError(const std::string& msg, const std::string& fmt, const std::vector<std::string>& examples) {
  if (examples.empty()) return msg + " (regex used for validation is '" + fmt + "')";
  std::string out = msg + " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'" + examples[i] + "', ";
  }
  return out + "regex used for validation is '" + fmt + "')";
}

std::string MaxLenError(int n) { return "must be no more than " + std::to_string(n) + " characters"; }

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], anchored.
bool MatchesQualifiedName(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*, anchored; no label length cap.
bool MatchesDns1123Subdomain(std::string_view s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::vector<std::string> Dns1123SubdomainErrors(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > 253) errs.push_back(MaxLenError(253));
  if (!MatchesDns1123Subdomain(s)) errs.push_back(RegexError(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
  return errs;
}

// validation.IsQualifiedName.
std::vector<std::string> QualifiedNameErrors(std::string_view value) {
  std::vector<std::string> errs;
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t slash = value.find('/', start);
    parts.push_back(value.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  std::string_view name;
  if (parts.size() == 1) {
    name = parts[0];
  } else if (parts.size() == 2) {
    std::string_view prefix = parts[0];
    name = parts[1];
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& m : Dns1123SubdomainErrors(prefix)) errs.push_back("prefix part " + m);
    }
  } else {
    errs.push_back("a qualified name " +
                   RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}) +
                   " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errs;
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part " + MaxLenError(63));
  }
  if (!MatchesQualifiedName(name)) {
    errs.push_back("name part " + RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> LabelValueErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 63) errs.push_back(MaxLenError(63));
  if (!value.empty() && !MatchesQualifiedName(value)) {
    errs.push_back(RegexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

// Go's %q (strconv.Quote) for the strings that reach error messages.
std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\a': out += "\\a"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\v': out += "\\v"; break;
        default:
          if (c < 0x20 || c == 0x7f) {
            std::snprintf(buf, sizeof(buf), "\\x%02x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // Multi-byte UTF-8: copy valid sequences; escape invalid bytes as \x.. like Go.
    int len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (int k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (!valid) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
      ++i;
      continue;
    }
    uint32_t r = c & (0xff >> (len + 1));
    for (int k = 1; k < len; ++k) r = (r << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    if (r >= 0x80 && r < 0xa0) {  // C1 controls are not printable
      std::snprintf(buf, sizeof(buf), "\\u%04x", r);
      out += buf;
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out + "\"";
}

// Go's %#v of a []string BadValue. Empty lists print as nil (the API's usual form).
std::string GoStringSlice(const std::vector<std::string>& v) {
  if (v.empty()) return "[]string(nil)";
  std::string out = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += GoQuote(v[i]);
  }
  return out + "}";
}

std::string Invalid(const std::string& path, const std::string& shown, const std::string& detail) {
  return path + ": Invalid value: " + shown + ": " + detail;
}

}  // namespace

bool ParseGoInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  const uint64_t limit = neg ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

std::vector<std::string> LabelRequirementErrors(const NodeSelectorRequirement& r, const std::string& path) {
  std::vector<std::string> errs;
  const std::string& op = r.op;
  if (op != "In" && op != "NotIn" && op != "Exists" && op != "DoesNotExist" && op != "Gt" && op != "Lt") {
    errs.push_back(path + ".operator: Unsupported value: " + GoQuote(op));
    return errs;
  }
  std::vector<std::string> key_errs = QualifiedNameErrors(r.key);
  if (!key_errs.empty()) errs.push_back(Invalid(path + ".key", GoQuote(r.key), Join(key_errs, "; ")));
  const std::string values_path = path + ".values";
  if (op == "In" || op == "NotIn") {
    if (r.values.empty()) {
      errs.push_back(Invalid(values_path, GoStringSlice(r.values), "for 'in', 'notin' operators, values set can't be empty"));
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!r.values.empty()) {
      errs.push_back(Invalid(values_path, GoStringSlice(r.values), "values set must be empty for exists and does not exist"));
    }
  } else {
    if (r.values.size() != 1) {
      errs.push_back(Invalid(values_path, GoStringSlice(r.values), "for 'Gt', 'Lt' operators, exactly one value is required"));
    }
    for (size_t i = 0; i < r.values.size(); ++i) {
      int64_t unused;
      if (!ParseGoInt64(r.values[i], &unused)) {
        errs.push_back(Invalid(values_path + "[" + std::to_string(i) + "]", GoQuote(r.values[i]),
                               "for 'Gt', 'Lt' operators, the value must be an integer"));
      }
    }
  }
  for (size_t i = 0; i < r.values.size(); ++i) {
    std::vector<std::string> v = LabelValueErrors(r.values[i]);
    if (!v.empty()) {
      errs.push_back(Invalid(values_path + "[" + std::to_string(i) + "][" + r.key + "]", GoQuote(r.values[i]), Join(v, "; ")));
    }
  }
  return errs;
}

std::vector<std::string> FieldRequirementErrors(const NodeSelectorRequirement& r, const std::string& path) {
  if (r.op != "In" && r.op != "NotIn") {
    return {path + ".operator: Unsupported value: " + GoQuote(r.op) + ": supported values: \"In\", \"NotIn\""};
  }
  if (r.values.size() != 1) return {Invalid(path + ".values", GoStringSlice(r.values), "must have one element")};
  return {};
}

std::vector<std::string> NodeSelectorTermErrors(const NodeSelectorTerm& term, const std::string& path) {
  std::vector<std::string> errs;
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    for (std::string& e : LabelRequirementErrors(term.match_expressions[i],
                                                 path + ".matchExpressions[" + std::to_string(i) + "]")) {
      errs.push_back(std::move(e));
    }
  }
  for (size_t i = 0; i < term.match_fields.size(); ++i) {
    for (std::string& e : FieldRequirementErrors(term.match_fields[i], path + ".matchFields[" + std::to_string(i) + "]")) {
      errs.push_back(std::move(e));
    }
  }
  return errs;
}

std::string AggregateErrors(const std::vector<std::string>& errors) {
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& e : errors) {
    if (seen.insert(e).second) unique.push_back(e);
  }
  if (unique.empty()) return "";
  if (unique.size() == 1) return unique[0];
  return "[" + Join(unique, ", ") + "]";
}

}  // namespace kplace::plugins::node_affinity
