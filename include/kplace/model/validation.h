#pragma once
// Kubernetes name validation used by selectors and resource classification.
#include <string_view>

namespace kplace {

/** A qualified name: optional DNS-subdomain prefix and "/", then 1-63 characters
 *  matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]. */
bool IsQualifiedName(std::string_view s);
/** A label value: empty, or at most 63 characters matching the name pattern. */
bool IsValidLabelValue(std::string_view s);
/** A DNS-1123 subdomain: at most 253 characters of dot-separated lower-case labels. */
bool IsDns1123Subdomain(std::string_view s);

}  // namespace kplace
