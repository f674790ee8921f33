#pragma once
// A small flag parser shared by the subcommands: --name=value or --name value, repeated
// flags, positional arguments, and generated --help text.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "kplace/engine/plugin.h"

namespace kplace::cli {

class Flags {
 public:
  Flags(std::string command, std::string summary) : command_(std::move(command)), summary_(std::move(summary)) {}

  // Each returns a reference that Parse() fills in.
  std::string& String(const std::string& name, const std::string& def, const std::string& help);
  int64_t& Int(const std::string& name, int64_t def, const std::string& help);
  bool& Bool(const std::string& name, const std::string& help);
  std::vector<std::string>& List(const std::string& name, const std::string& help);
  /** Accept positional arguments, described as `name` in the usage line. */
  std::vector<std::string>& Positional(const std::string& name, const std::string& help);

  /** -1 to go on; otherwise the exit status (0 after --help, 2 on a bad flag). */
  int Parse(int argc, char** argv);
  void PrintHelp(FILE* out) const;

 private:
  struct Flag {
    std::string name, help, def;
    enum Kind { kString, kInt, kBool, kList } kind;
    std::string* s = nullptr;
    int64_t* i = nullptr;
    bool* b = nullptr;
    std::vector<std::string>* list = nullptr;
  };
  std::string command_, summary_;
  std::deque<Flag> flags_;
  std::deque<std::string> strings_;
  std::deque<int64_t> ints_;
  std::deque<bool> bools_;
  std::deque<std::vector<std::string>> lists_;
  std::vector<std::string>* positional_ = nullptr;
  std::string positional_name_, positional_help_;
};

/** kube-scheduler's --feature-gates syntax, "A=true,B=false", into `out->overrides`; prints
 *  an error naming `command` and returns false for a gate kplace does not know or a value
 *  that is not true/false. */
bool ParseFeatureGates(const std::string& command, const std::string& text, FeatureGates* out);

/** auto, omp or cuda; prints an error and returns false when unknown or unavailable. */
bool ParseBackend(const std::string& text, engine::Backend* out);

}  // namespace kplace::cli
