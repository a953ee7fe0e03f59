// Whom dblock trusts with its lock file: the checks made before SQLite opens it. Internal.
//
// ssh's rule for its own files: the lock file's directory, the lock file and its companions
// (-wal, -shm, -journal, -wake, where they exist) must be owned by this process's effective user or by
// root and must not be writable by group or others, since whoever may write them may rewrite or
// force-release the leases in them. One exception, for the directory only: a sticky directory
// owned by root (/tmp), where other users can neither rename nor delete this user's files; the
// file and its companions are checked there as anywhere. A companion that is a symbolic link is
// refused, as the lock file itself is. Not a guard against a race with the directory's owner.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_FILE_TRUST_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_FILE_TRUST_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace dblock::sqlite {

// The owners trusted with the lock file and with holder marks: this process's effective user
// and root.
bool trusted_owner(uid_t uid);

// Throws the ConnectionError for a lock file or companion at `path` that is a symbolic link.
[[noreturn]] void refuse_symlink(const std::string& path);

// Checks the owner and mode of the file at `path` whose status is `st` (`what`: "lock file",
// "lock file companion"), as check_trusted_files does; for a file already open, pass its fstat.
// Throws ConnectionError naming the path, its owner and mode when it is not trusted.
void check_trusted_stat(const std::string& path, const char* what, const struct stat& st);

// Checks the directory that holds `path` (symbolic links in its name followed), if it exists.
// Throws ConnectionError naming the directory, its owner and mode when it is not trusted.
void check_trusted_directory(const std::string& path);

// Checks the directory, the lock file at `path` and each companion that exists. Throws
// ConnectionError naming the path (and its owner and mode, or that it is a symbolic link).
void check_trusted_files(const std::string& path);

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_FILE_TRUST_H_
