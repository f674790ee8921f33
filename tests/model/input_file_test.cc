#include "kplace/model/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace kplace {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public testing::TempDirTest {
 protected:
  InputFileTest() : TempDirTest("kplace-input-") {}
};

TEST_F(InputFileTest, RegularFilesReadWholeWithPadding) {
  const std::string path = (dir_ / "a.json").string();
  const std::string text(100000, 'x');
  std::ofstream(path) << text;
  auto read = ReadInputFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, text);
  EXPECT_GE(read->capacity(), text.size() + kInputPadding);
  std::ofstream(path, std::ios::trunc).flush();
  read = ReadInputFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "");
}

TEST_F(InputFileTest, RefusalsNameTheFile) {
  const std::string path = (dir_ / "big.json").string();
  std::ofstream(path) << std::string((1 << 20) + 1, ' ');
  InputLimits small;
  small.max_bytes = 1 << 20;
  auto read = ReadInputFile(path, small);
  EXPECT_EQ(read.status(), absl::ResourceExhaustedError(path + ": larger than 1 MiB, the most kplace reads from one input"));
  small.max_bytes += 1;
  EXPECT_TRUE(ReadInputFile(path, small).ok());
  EXPECT_EQ(ReadInputFile(dir_.string()).status(), absl::InvalidArgumentError(dir_.string() + ": is a directory, not a file"));
  read = ReadInputFile((dir_ / "none.json").string());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(read.status().message()).rfind((dir_ / "none.json").string() + ": cannot open file", 0), 0u) << read.status();
  EXPECT_EQ(kMaxInputBytes, int64_t{2} << 30);
}

// A device without end stops at the limit, at once and within it (the old reader grew the
// buffer until memory ran out).
TEST_F(InputFileTest, EndlessDevicesStopAtTheLimit) {
  InputLimits small;
  small.max_bytes = 4 << 20;
  const auto start = std::chrono::steady_clock::now();
  auto read = ReadInputFile("/dev/zero", small);
  EXPECT_EQ(read.status(), absl::ResourceExhaustedError("/dev/zero: larger than 4 MiB, the most kplace reads from one input"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// A named pipe without a writer is refused after the timeout (opening it used to wait
// forever); one whose writer is slow to write is read to its end.
TEST_F(InputFileTest, NamedPipesNeedAWriter) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  InputLimits quick;
  quick.pipe_writer_timeout_ms = 200;
  const auto start = std::chrono::steady_clock::now();
  auto read = ReadInputFile(fifo, quick);
  EXPECT_EQ(read.status(), absl::DeadlineExceededError(fifo + ": a named pipe that no process wrote to or held open for 200 ms"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);  // waits for the reader
    if (fd < 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // longer than the timeout
    const std::string text = R"({"kind": "List", "items": []})";
    EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  });
  quick.pipe_writer_timeout_ms = 5000;  // for the writer to open it; its data may come later
  read = ReadInputFile(fifo, quick);
  writer.join();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, R"({"kind": "List", "items": []})");
}

// ReadInputFile("-") with `text` on stdin (a pipe).
absl::StatusOr<std::string> ReadStdin(const std::string& text, const InputLimits& limits) {
  return testing::WithStdin(text, [&] { return ReadInputFile("-", limits); });
}

TEST_F(InputFileTest, DashIsStdinWithTheSameLimit) {
  InputLimits tiny;
  tiny.max_bytes = 4;
  EXPECT_EQ(ReadStdin("kind: Pod\n", tiny).status(),
            absl::ResourceExhaustedError("stdin: larger than 4 bytes, the most kplace reads from one input"));
  auto read = ReadStdin("kind: Pod\n", InputLimits{});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "kind: Pod\n");
}

}  // namespace
}  // namespace kplace
