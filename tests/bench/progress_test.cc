#include "kplace/bench/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "kplace/bench/sweep.h"
#include "kplace/cli/commands.h"

namespace kplace::bench {
namespace {

TEST(ProgressLineTest, BarFillsInProportion) {
  EXPECT_EQ(ProgressLine::Bar(0, 10, 10), "[>         ]");
  EXPECT_EQ(ProgressLine::Bar(5, 10, 10), "[=====>    ]");
  EXPECT_EQ(ProgressLine::Bar(10, 10, 10), "[==========]");
  EXPECT_EQ(ProgressLine::Bar(20, 10, 4), "[====]");  // clamped
  EXPECT_EQ(ProgressLine::Bar(3, 0, 4), "[>   ]");    // nothing to do yet
}

// Not a terminal (a file, a pipe, CI): a plain line per report, as before the bar.
TEST(ProgressLineTest, PlainLinesWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine p(f);
    EXPECT_FALSE(p.tty());
    EXPECT_EQ(p.interval_seconds(), 2.0);
    p.Update("engine (omp)", 300, 1000);
    p.Update("sweep", 2, 8, "points");
    p.Clear();  // no-op without a bar
  }
  std::rewind(f);
  char buf[256] = {};
  std::string text(buf, std::fread(buf, 1, sizeof buf - 1, f));
  std::fclose(f);
  EXPECT_EQ(text, "  engine (omp): 300/1000 pods\n  sweep: 2/8 points\n");
}

TEST(SweepKindsTest, ParsesNamesShortFormsAndAll) {
  auto k = ParseSweepKinds("required-anti,preferred-affinity,required-spread");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(*k, (std::vector<SweepKind>{SweepKind::kRequiredAntiAffinity, SweepKind::kPreferredAffinity,
                                        SweepKind::kRequiredSpread}));
  auto all = ParseSweepKinds("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 7u);
  auto bad = ParseSweepKinds("required-anti,sideways");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("unknown kind \"sideways\""), std::string::npos);
}

bool HaveMatplotlib() {
  return std::system("/usr/bin/python3 -c 'import matplotlib, numpy' >/dev/null 2>&1") == 0;
}

// --plot runs tools/plot_affinity.py on the sweep's CSV and leaves a PNG.
TEST(SweepPlotTest, WritesThePngThroughThePlotScript) {
  if (!HaveMatplotlib()) GTEST_SKIP() << "no python3 with matplotlib (tools/setup installs it)";
  setenv("KPLACE_TOOLS_DIR", KPLACE_SOURCE_DIR "/tools", 1);
  // Per process: two test runs on one machine must not share the files.
  const std::string stem = ::testing::TempDir() + "kplace_sweep_plot_test_" + std::to_string(getpid());
  const std::string png = stem + ".png";
  const std::string csv = stem + ".csv";
  std::remove(png.c_str());
  const std::string plot = "--plot=" + png;
  const char* argv[] = {"bench", "--sweep=affinity", "--kinds=none,required-anti,preferred-spread", "--sweep-nodes=20,40",
                        "--sweep-existing=0,40", "--pods=3", plot.c_str()};
  ASSERT_EQ(cli::RunBench(7, const_cast<char**>(argv)), 0);
  std::FILE* f = std::fopen(png.c_str(), "rb");
  ASSERT_NE(f, nullptr) << png;
  unsigned char magic[8] = {};
  ASSERT_EQ(std::fread(magic, 1, 8, f), 8u);
  std::fclose(f);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(magic) + 1, 3), "PNG");
  // The points went beside it, one row per kind, side and point.
  f = std::fopen(csv.c_str(), "rb");
  ASSERT_NE(f, nullptr) << csv;
  int lines = 0;
  for (int c; (c = std::fgetc(f)) != EOF;) lines += c == '\n';
  std::fclose(f);
  EXPECT_EQ(lines, 1 + 3 * 2 * 4);  // header + kinds x sides x points
  std::remove(png.c_str());
  std::remove(csv.c_str());
  unsetenv("KPLACE_TOOLS_DIR");
}

TEST(SweepPlotTest, MissingPythonIsAClearError) {
  setenv("KPLACE_PYTHON", "/nonexistent/python3", 1);
  const std::string plot = "--plot=" + ::testing::TempDir() + "kplace_no_python.png";
  const char* argv[] = {"bench", "--sweep=affinity", "--kinds=none", "--sweep-nodes=10", "--sweep-existing=0",
                        "--pods=1", "--no-reference", plot.c_str()};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cli::RunBench(8, const_cast<char**>(argv)), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("KPLACE_PYTHON");
  EXPECT_NE(err.find("--plot: /nonexistent/python3 cannot be run"), std::string::npos) << err;
  const char* bad[] = {"bench", "--sweep=affinity", "--plot=out.svg"};
  EXPECT_EQ(cli::RunBench(3, const_cast<char**>(bad)), 2);
}

}  // namespace
}  // namespace kplace::bench
