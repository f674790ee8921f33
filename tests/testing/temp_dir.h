#pragma once
// A test fixture with a directory of its own, removed after the test.
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

}  // namespace kplace::testing
