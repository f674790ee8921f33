#include "kplace/cli/flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_split.h"
#include "kplace/engine/framework.h"

namespace kplace::cli {

std::string& Flags::String(const std::string& name, const std::string& def, const std::string& help) {
  strings_.push_back(def);
  Flag f{name, help, def, Flag::kString};
  f.s = &strings_.back();
  flags_.push_back(f);
  return strings_.back();
}

int64_t& Flags::Int(const std::string& name, int64_t def, const std::string& help) {
  ints_.push_back(def);
  Flag f{name, help, std::to_string(def), Flag::kInt};
  f.i = &ints_.back();
  flags_.push_back(f);
  return ints_.back();
}

bool& Flags::Bool(const std::string& name, const std::string& help) {
  bools_.push_back(false);
  Flag f{name, help, "", Flag::kBool};
  f.b = &bools_.back();
  flags_.push_back(f);
  return bools_.back();
}

std::vector<std::string>& Flags::List(const std::string& name, const std::string& help) {
  lists_.emplace_back();
  Flag f{name, help, "", Flag::kList};
  f.list = &lists_.back();
  flags_.push_back(f);
  return lists_.back();
}

std::vector<std::string>& Flags::Positional(const std::string& name, const std::string& help) {
  lists_.emplace_back();
  positional_ = &lists_.back();
  positional_name_ = name;
  positional_help_ = help;
  return lists_.back();
}

void Flags::PrintHelp(FILE* out) const {
  std::fprintf(out, "usage: kplace %s [flags]%s\n\n%s\n\nflags:\n", command_.c_str(),
               positional_ ? (" " + positional_name_ + "...").c_str() : "", summary_.c_str());
  for (const Flag& f : flags_) {
    std::string left = "--" + f.name;
    if (f.kind == Flag::kString || f.kind == Flag::kList) left += "=TEXT";
    if (f.kind == Flag::kInt) left += "=N";
    std::string def = (f.kind == Flag::kString || f.kind == Flag::kInt) && !f.def.empty() ? " (default " + f.def + ")" : "";
    if (f.kind == Flag::kList) def = " (repeatable)";
    std::fprintf(out, "  %-26s %s%s\n", left.c_str(), f.help.c_str(), def.c_str());
  }
  if (positional_) std::fprintf(out, "  %-26s %s\n", positional_name_.c_str(), positional_help_.c_str());
  std::fprintf(out, "  %-26s %s\n", "--help", "show this help");
}

int Flags::Parse(int argc, char** argv) {
  for (int k = 1; k < argc; ++k) {
    std::string arg = argv[k];
    if (arg == "--help" || arg == "-h") {
      PrintHelp(stdout);
      return 0;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (!positional_) {
        std::fprintf(stderr, "kplace %s: unexpected argument \"%s\" (see --help)\n", command_.c_str(), arg.c_str());
        return 2;
      }
      positional_->push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* flag = nullptr;
    for (Flag& f : flags_) {
      if (f.name == name) flag = &f;
    }
    if (!flag) {
      std::fprintf(stderr, "kplace %s: unknown flag --%s (see --help)\n", command_.c_str(), name.c_str());
      return 2;
    }
    if (flag->kind == Flag::kBool) {
      if (has_value && value != "true" && value != "false") {
        std::fprintf(stderr, "kplace %s: --%s takes no value or true/false\n", command_.c_str(), name.c_str());
        return 2;
      }
      *flag->b = !has_value || value == "true";
      continue;
    }
    if (!has_value) {
      if (k + 1 >= argc) {
        std::fprintf(stderr, "kplace %s: --%s needs a value\n", command_.c_str(), name.c_str());
        return 2;
      }
      value = argv[++k];
    }
    switch (flag->kind) {
      case Flag::kString:
        *flag->s = value;
        break;
      case Flag::kList:
        flag->list->push_back(value);
        break;
      case Flag::kInt: {
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0') {
          std::fprintf(stderr, "kplace %s: --%s: not an integer: \"%s\"\n", command_.c_str(), name.c_str(), value.c_str());
          return 2;
        }
        if (errno == ERANGE) {
          std::fprintf(stderr, "kplace %s: --%s: out of range: \"%s\"\n", command_.c_str(), name.c_str(), value.c_str());
          return 2;
        }
        *flag->i = v;
        break;
      }
      case Flag::kBool:
        break;
    }
  }
  return -1;
}

bool ParseBackend(const std::string& text, engine::Backend* out) {
  if (text == "auto") {
    *out = engine::CudaAvailable() ? engine::Backend::kCuda : engine::Backend::kOmp;
    return true;
  }
  if (text == "omp") {
    *out = engine::Backend::kOmp;
    return true;
  }
  if (text == "cuda") {
    if (!engine::CudaAvailable()) {
      std::fprintf(stderr, "kplace: --backend=cuda: no CUDA device is visible (or this build has no CUDA backend)\n");
      return false;
    }
    *out = engine::Backend::kCuda;
    return true;
  }
  std::fprintf(stderr, "kplace: --backend must be auto, omp or cuda, got \"%s\"\n", text.c_str());
  return false;
}

bool ParseFeatureGates(const std::string& command, const std::string& text, FeatureGates* out) {
  for (const std::string& item : std::vector<std::string>(absl::StrSplit(text, ',', absl::SkipEmpty()))) {
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (!KnownFeatureGates().count(name)) {
      std::string known;
      for (const auto& [gate, on] : KnownFeatureGates()) known += (known.empty() ? "" : ", ") + gate;
      std::fprintf(stderr, "kplace %s: --feature-gates: unknown feature gate \"%s\" (kplace knows %s)\n", command.c_str(),
                   name.c_str(), known.c_str());
      return false;
    }
    if (value != "true" && value != "false") {
      std::fprintf(stderr, "kplace %s: --feature-gates: %s: expected true or false, got \"%s\"\n", command.c_str(),
                   name.c_str(), value.c_str());
      return false;
    }
    out->overrides[name] = value == "true";
  }
  return true;
}

}  // namespace kplace::cli
