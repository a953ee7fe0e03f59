// SQLite: whom the lock file is trusted with (src/backends/sqlite/file_trust.h). Foreign owners are
// made by chown to nobody (uid 65534), so those cases need root; as another user they only warn.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dblock/dblock.h"
#include "process.h"

namespace dblock::testing {

namespace {

constexpr uid_t kNobody = 65534;

// The message of the ConnectionError that opening `path` throws ("" when it opens).
std::string open_error(const std::string& path) {
  try {
    dblock::open("sqlite://" + path)->try_acquire("k");
  } catch (const ConnectionError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void touch(const std::string& path, mode_t mode) {
  { std::ofstream out(path); }
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

}  // namespace

TEST_CASE("sqlite: a state directory another user owns, or others may write, is refused", "[sqlite][files][trust]") {
  // The README's test command runs as root; elsewhere this fails, saying why (never an empty pass).
  INFO("needs root (chown to nobody)");
  REQUIRE(::geteuid() == 0);
  TempDir dir;
  const std::string state = dir.file("state");
  std::filesystem::create_directory(state);
  REQUIRE(::chmod(state.c_str(), 0777) == 0);

  SECTION("owned by nobody, 0777, with a 0666 lock file in it (the issue's case)") {
    touch(state + "/locks.db", 0666);
    REQUIRE(::chown(state.c_str(), kNobody, kNobody) == 0);
    REQUIRE(::chown((state + "/locks.db").c_str(), kNobody, kNobody) == 0);
    const std::string message = open_error(state + "/locks.db");
    INFO(message);
    CHECK(contains(message, "directory " + state + " "));
    CHECK(contains(message, "uid 65534"));
    CHECK(contains(message, "mode 0777"));
    CHECK(std::filesystem::file_size(state + "/locks.db") == 0);  // nothing written to it
  }
  SECTION("owned by nobody, 0700: nothing is created in it") {
    REQUIRE(::chmod(state.c_str(), 0700) == 0);
    REQUIRE(::chown(state.c_str(), kNobody, kNobody) == 0);
    const std::string message = open_error(state + "/locks.db");
    INFO(message);
    CHECK(contains(message, state));
    CHECK(contains(message, "uid 65534"));
    CHECK_FALSE(std::filesystem::exists(state + "/locks.db"));
  }
  SECTION("owned by this user but writable by others, without the sticky bit") {
    const std::string message = open_error(state + "/locks.db");
    INFO(message);
    CHECK(contains(message, state));
    CHECK(contains(message, "mode 0777"));
    CHECK_FALSE(std::filesystem::exists(state + "/locks.db"));
  }
  SECTION("a sticky directory owned by root (like /tmp) is accepted; the file in it is still checked") {
    REQUIRE(::chmod(state.c_str(), 01777) == 0);
    CHECK(open_error(state + "/locks.db") == "");
    REQUIRE(::chmod((state + "/locks.db").c_str(), 0666) == 0);
    const std::string message = open_error(state + "/locks.db");
    INFO(message);
    CHECK(contains(message, state + "/locks.db"));
    CHECK(contains(message, "mode 0666"));
  }
}

TEST_CASE("sqlite: a lock file (or companion) another user owns or others may write is refused", "[sqlite][files][trust]") {
  // The README's test command runs as root; elsewhere this fails, saying why (never an empty pass).
  INFO("needs root (chown to nobody)");
  REQUIRE(::geteuid() == 0);
  TempDir dir;
  const std::string path = dir.file("locks.db");
  REQUIRE(open_error(path) == "");  // made by dblock: 0600, ours

  SECTION("group-writable") {
    REQUIRE(::chmod(path.c_str(), 0620) == 0);
    const std::string message = open_error(path);
    INFO(message);
    CHECK(contains(message, "lock file " + path + " "));
    CHECK(contains(message, "mode 0620"));
  }
  SECTION("writable by others") {
    REQUIRE(::chmod(path.c_str(), 0606) == 0);
    const std::string message = open_error(path);
    INFO(message);
    CHECK(contains(message, path));
    CHECK(contains(message, "mode 0606"));
  }
  SECTION("owned by nobody") {
    REQUIRE(::chown(path.c_str(), kNobody, kNobody) == 0);
    const std::string message = open_error(path);
    INFO(message);
    CHECK(contains(message, path));
    CHECK(contains(message, "uid 65534"));
    CHECK(contains(message, "mode 0600"));
  }
  SECTION("a -journal companion owned by nobody") {
    touch(path + "-journal", 0600);
    REQUIRE(::chown((path + "-journal").c_str(), kNobody, kNobody) == 0);
    const std::string message = open_error(path);
    INFO(message);
    CHECK(contains(message, path + "-journal"));
    CHECK(contains(message, "uid 65534"));
  }
  SECTION("a world-writable -wal companion") {
    touch(path + "-wal", 0666);
    const std::string message = open_error(path);
    INFO(message);
    CHECK(contains(message, path + "-wal"));
    CHECK(contains(message, "mode 0666"));
  }
}

TEST_CASE("sqlite: a symbolic link at -wal, -shm or -journal is refused with the symlink message", "[sqlite][files][trust]") {
  TempDir dir;
  const std::string path = dir.file("locks.db");
  REQUIRE(open_error(path) == "");
  const std::string target = dir.file("elsewhere");
  touch(target, 0600);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const std::string link = path + suffix;
    std::filesystem::remove(link);
    REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
    const std::string message = open_error(path);
    INFO(message);
    CHECK(contains(message, link + " is a symbolic link"));
    CHECK_FALSE(contains(message, "unable to open"));
    std::filesystem::remove(link);
  }
  CHECK(std::filesystem::file_size(target) == 0);
}

}  // namespace dblock::testing
