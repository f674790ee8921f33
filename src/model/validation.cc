#include "kplace/model/validation.h"

#include <cstdint>
#include <cstdio>

namespace kplace {
namespace {

// apimachinery's validation messages (util/validation), verbatim: plugins report them.
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
constexpr char kDns1123LabelErrMsg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character";
constexpr char kDns1123LabelFmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
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


// A qualified name's name part (and a label value's pattern): 1..63 characters.
bool IsNamePart(std::string_view s) { return s.size() <= 63 && MatchesQualifiedName(s); }

}  // namespace

// Like apimachinery, the subdomain regex caps only the total length (253), not each label.
bool IsDns1123Subdomain(std::string_view s) { return s.size() <= 253 && MatchesDns1123Subdomain(s); }

bool IsQualifiedName(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return IsNamePart(s);
  if (s.find('/', slash + 1) != std::string_view::npos) return false;
  return IsDns1123Subdomain(s.substr(0, slash)) && IsNamePart(s.substr(slash + 1));
}

bool IsValidLabelValue(std::string_view s) { return s.empty() || IsNamePart(s); }

std::vector<std::string> Dns1123SubdomainErrors(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > 253) errs.push_back(MaxLenError(253));
  if (!MatchesDns1123Subdomain(s)) errs.push_back(RegexError(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
  return errs;
}

std::vector<std::string> Dns1123LabelErrors(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > 63) errs.push_back(MaxLenError(63));
  if (s.find('.') != std::string_view::npos || !MatchesDns1123Subdomain(s)) {
    errs.push_back(RegexError(kDns1123LabelErrMsg, kDns1123LabelFmt, {"my-name", "123-abc"}));
  }
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

size_t InvalidUtf8At(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || c > 0xF4 || i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
    }
    if (c == 0xE0 && p[i + 1] < 0xA0) return i;  // overlong
    if (c == 0xED && p[i + 1] >= 0xA0) return i;  // surrogate
    if (c == 0xF0 && p[i + 1] < 0x90) return i;  // overlong
    if (c == 0xF4 && p[i + 1] >= 0x90) return i;  // past U+10FFFF
    i += len;
  }
  return std::string_view::npos;
}

std::string InvalidUtf8Where(std::string_view text, size_t offset) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "invalid UTF-8 at line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
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

}  // namespace kplace
