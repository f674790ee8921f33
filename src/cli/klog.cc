#include "kplace/cli/klog.h"

#include <cstdio>
#include <ctime>

namespace kplace::cli {
namespace {

// Go's strconv.Quote for the ASCII that names and messages hold (klog quotes every string
// value and the message); other bytes pass through as UTF-8.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += {'\\', c};
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string KlogHeader(char severity, std::chrono::system_clock::time_point when, int64_t tid, const KlogSite& site) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  localtime_r(&secs, &tm);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(when.time_since_epoch()).count() % 1000000;
  // klog's nDigits(7, ..., pid, ' '): the last seven digits, space-padded; 0 prints blanks.
  char id[8] = "       ";
  for (int j = 6; j >= 0 && tid > 0; --j, tid /= 10) id[j] = static_cast<char>('0' + tid % 10);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%c%02d%02d %02d:%02d:%02d.%06lld %s %s:%d] ", severity, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros), id, site.file, site.line);
  return buf;
}

std::vector<std::string> KlogScoreLines(const cycle::Placement& p, std::chrono::system_clock::time_point when,
                                        int64_t tid) {
  std::vector<std::string> lines;
  if (!p.explanation) return lines;
  const cycle::Explanation& ex = *p.explanation;
  const std::string pod = Quote(p.pod);
  for (const cycle::NodeExplanation& n : ex.nodes) {
    if (!n.scored) continue;
    for (size_t k = 0; k < ex.score_plugins.size(); ++k) {
      if (ex.score_skipped.size() > k && ex.score_skipped[k]) continue;  // not in upstream's Scores list
      lines.push_back(KlogHeader('I', when, tid, kPluginScoredSite) + "\"Plugin scored node for pod\" pod=" + pod +
                      " plugin=" + Quote(ex.score_plugins[k]) + " node=" + Quote(n.node) +
                      " score=" + std::to_string(n.weighted[k]) + "\n");
    }
  }
  for (const cycle::NodeExplanation& n : ex.nodes) {
    if (!n.scored) continue;
    lines.push_back(KlogHeader('I', when, tid, kFinalScoreSite) + "\"Calculated node's final score for pod\" pod=" +
                    pod + " node=" + Quote(n.node) + " score=" + std::to_string(n.total) + "\n");
  }
  return lines;
}

}  // namespace kplace::cli
