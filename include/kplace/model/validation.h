#pragma once
// Kubernetes name validation used by selectors and resource classification.
#include <string>
#include <string_view>
#include <vector>

namespace kplace {

/** A qualified name: optional DNS-subdomain prefix and "/", then 1-63 characters
 *  matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]. */
bool IsQualifiedName(std::string_view s);
/** A label value: empty, or at most 63 characters matching the name pattern. */
bool IsValidLabelValue(std::string_view s);
/** A DNS-1123 subdomain: at most 253 characters of dot-separated lower-case labels. */
bool IsDns1123Subdomain(std::string_view s);

// apimachinery's validation error lists (util/validation), message for message: plugins
// quote them in PreFilter errors.
/** validation.IsQualifiedName. */
std::vector<std::string> QualifiedNameErrors(std::string_view value);
/** validation.IsValidLabelValue. */
std::vector<std::string> LabelValueErrors(std::string_view value);
/** validation.IsDNS1123Subdomain. */
std::vector<std::string> Dns1123SubdomainErrors(std::string_view value);
/** validation.IsDNS1123Label (namespace names). */
std::vector<std::string> Dns1123LabelErrors(std::string_view value);
/** Where `s` stops being well-formed UTF-8 (an overlong form, a surrogate, a code point past
 *  U+10FFFF, a bad or missing continuation byte), or npos when it is well-formed. */
size_t InvalidUtf8At(std::string_view s);
/** "invalid UTF-8 at line L, column C" for the byte at `offset` of `text` (columns count bytes). */
std::string InvalidUtf8Where(std::string_view text, size_t offset);
/** Go's strconv.Quote (fmt's %q), UTF-8 aware. */
std::string GoQuote(std::string_view s);
/** fmt's %#v of a []string; an empty list prints as nil. */
std::string GoStringSlice(const std::vector<std::string>& values);

}  // namespace kplace
