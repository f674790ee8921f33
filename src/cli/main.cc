#include "kplace/cli/cli.h"

int main(int argc, char** argv) { return kplace::cli::Main(argc, argv); }
