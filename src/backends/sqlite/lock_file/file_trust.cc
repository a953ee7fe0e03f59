#include "file_trust.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "dblock/errors.h"

namespace dblock::sqlite {

namespace {

// "uid 65534 (nobody)", or just the number when the user has no name.
std::string describe_owner(uid_t uid) {
  std::string out = "uid " + std::to_string(uid);
  struct passwd pw{};
  struct passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) out += " (" + std::string(found->pw_name) + ")";
  return out;
}

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

[[noreturn]] void refuse(const std::string& path, const char* what, const struct stat& st, const std::string& why) {
  throw ConnectionError("sqlite: " + std::string(what) + " " + path + " is owned by " + describe_owner(st.st_uid) +
                            " with mode " + octal_mode(st.st_mode) + ": " + why +
                            "; dblock trusts only a lock file and directory owned by its user (" +
                            describe_owner(::geteuid()) + ") or root and not writable by group or others",
                        "sqlite", "untrusted");
}

// Group or others may write it.
bool shared_write(mode_t mode) { return (mode & (S_IWGRP | S_IWOTH)) != 0; }

void check_directory_stat(const std::string& dir, const struct stat& st) {
  if (!trusted_owner(st.st_uid)) refuse(dir, "directory", st, "another user owns it");
  const bool root_sticky = st.st_uid == 0 && (st.st_mode & S_ISVTX) != 0;
  if (shared_write(st.st_mode) && !root_sticky) {
    refuse(dir, "directory", st, "others may write it (and so replace the lock file)");
  }
}

// Checks one file that exists at `path`; false when nothing is there.
bool check_file(const std::string& path, const char* what) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) refuse_symlink(path);
  check_trusted_stat(path, what, st);
  return true;
}

}  // namespace

bool trusted_owner(uid_t uid) { return uid == ::geteuid() || uid == 0; }

void refuse_symlink(const std::string& path) {
  throw ConnectionError("sqlite: " + path + " is a symbolic link; dblock does not follow links to its lock file or " +
                            "its -wal, -shm, -journal and -wake files (give the real path, or remove the link)",
                        "sqlite", "symlink");
}

void check_trusted_stat(const std::string& path, const char* what, const struct stat& st) {
  if (!trusted_owner(st.st_uid)) refuse(path, what, st, "another user owns it");
  if (shared_write(st.st_mode)) refuse(path, what, st, "group or others may write it (chmod go-w)");
}

void check_trusted_directory(const std::string& path) {
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved) == nullptr) return;  // missing: created private, or the open says why
  struct stat st{};
  if (::stat(resolved, &st) != 0) return;
  check_directory_stat(resolved, st);
}

void check_trusted_files(const std::string& path) {
  check_trusted_directory(path);
  check_file(path, "lock file");
  for (const char* suffix : {"-wal", "-shm", "-journal", "-wake"}) check_file(path + suffix, "lock file companion");
}

}  // namespace dblock::sqlite
