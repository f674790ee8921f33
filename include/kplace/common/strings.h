#pragma once
// String concatenation that takes std::string_view (Debian's Abseil keeps its own
// string_view type, so absl::StrCat does not accept ours).
#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kplace {
namespace strings_internal {

inline void Append(std::string& out, std::string_view s) { out.append(s.data(), s.size()); }
inline void Append(std::string& out, const char* s) { out.append(s); }
inline void Append(std::string& out, char c) { out.push_back(c); }
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
void Append(std::string& out, T v) {
  out.append(std::to_string(v));
}
// Other string views (e.g. absl::string_view from Status::message()).
template <typename T, typename = decltype(std::declval<const T&>().data()),
          typename = decltype(std::declval<const T&>().size()), typename = void>
void Append(std::string& out, const T& s) {
  out.append(s.data(), s.size());
}

}  // namespace strings_internal

/** Concatenates strings, string views, characters and numbers. */
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::Append(out, args), ...);
  return out;
}

/** `v` sorted, each string once. */
inline std::vector<std::string> SortedUnique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace kplace
