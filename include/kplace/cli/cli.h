#pragma once

namespace kplace::cli {

/** @brief The `kplace` command line; returns the process exit status. */
int Main(int argc, char** argv);

}  // namespace kplace::cli
