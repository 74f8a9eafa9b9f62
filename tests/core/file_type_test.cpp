// file_type_at: what a path names, or the system's reason it cannot say, never an exception.
#include "core/file_type.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace commbound {
namespace {

namespace fs = std::filesystem;

TEST(FileTypeAt, AnswersForFilesFoldersAndNothing) {
  const fs::path dir = fs::path(::testing::TempDir()) / "file_type_at";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  EXPECT_EQ(*file_type_at(dir / "file"), fs::file_type::regular);
  EXPECT_EQ(*file_type_at(dir), fs::file_type::directory);
  EXPECT_EQ(*file_type_at(dir / "missing"), fs::file_type::not_found);
  EXPECT_EQ(*file_type_at(dir / "file" / "below"), fs::file_type::not_found);  // ENOTDIR: nothing there
}

// The cases std::filesystem::exists throws on: a symlink loop and a name past NAME_MAX (255).
TEST(FileTypeAt, SystemErrorsAreErrorsNamingThePath) {
  const fs::path loop = fs::path(::testing::TempDir()) / "file_type_loop";
  fs::remove(loop);
  fs::create_symlink(loop.filename(), loop);
  auto looped = file_type_at(loop);
  ASSERT_FALSE(looped);
  EXPECT_EQ(looped.error().message, loop.string() + ": Too many levels of symbolic links");
  const fs::path longer = fs::path(::testing::TempDir()) / std::string(300, 'x');
  auto named = file_type_at(longer);
  ASSERT_FALSE(named);
  EXPECT_EQ(named.error().message, longer.string() + ": File name too long");
}

}  // namespace
}  // namespace commbound
