#pragma once
// One function per `kplace` subcommand; argv[0] is the subcommand name.
namespace kplace::cli {
int RunBench(int argc, char** argv);
int RunGen(int argc, char** argv);
int RunConform(int argc, char** argv);
int RunSchedule(int argc, char** argv);
int RunExplain(int argc, char** argv);
int RunServe(int argc, char** argv);
int RunWhatIf(int argc, char** argv);
}  // namespace kplace::cli
