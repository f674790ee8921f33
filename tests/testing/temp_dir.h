#pragma once
// A test fixture with a directory of its own, removed after the test; stdin from a string.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace kplace::testing {

/** Each test gets `dir_`, a fresh directory named for the process and the test. */
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

/** Runs fn() with `text` on stdin (a pipe, closed after it), then puts stdin back. The text
 *  must fit the pipe's buffer (64 KiB). */
template <typename Fn>
auto WithStdin(const std::string& text, Fn fn) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  EXPECT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  const int saved = ::dup(STDIN_FILENO);
  ::dup2(fds[0], STDIN_FILENO);
  ::close(fds[0]);
  auto result = fn();
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  return result;
}

}  // namespace kplace::testing
