// The SQLite lock file on disk: created private, never through a symbolic link. Internal.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_LOCK_FILE_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_LOCK_FILE_H_

#include <sys/types.h>

#include <optional>
#include <string>

namespace dblock::sqlite {

// Before the first open: creates the missing parent directories (when `create_directories`) with
// mode 0700 and a missing file with mode 0600, whatever the umask (the file's WAL and shared-memory
// files take the file's mode). Refuses, with a ConnectionError that says so, a symbolic link at
// the file's name. An existing file keeps its mode.
void prepare_lock_file(const std::string& path, bool create_directories);

// `path` with its directory resolved (symbolic links in the directories are the user's choice and
// followed here, once), so that SQLITE_OPEN_NOFOLLOW, which refuses a link anywhere in the name it
// gets, refuses only a link at the file's own name. `path` itself when the directory cannot be
// resolved (the open then reports why).
std::string resolve_directory(const std::string& path);

// Which file a name leads to: its device and inode.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

// The identity of what `path` names now, never through a symbolic link at the name; nullopt when
// nothing is there (deleted, or moved away).
std::optional<FileIdentity> file_identity(const std::string& path);

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_LOCK_FILE_H_
