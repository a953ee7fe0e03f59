#include "textfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dblock/metrics.h"

namespace dblock::cli {
namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// ".<name>.<pid>.tmp" beside PATH: one writer per process, skipped by the collector.
std::string temporary_for(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  return dir + "." + name + "." + std::to_string(::getpid()) + ".tmp";
}

std::string failed(const std::string& what, const std::string& path, int error) {
  return what + " '" + path + "': " + std::strerror(error);
}

// Writes all of `text` to `fd`, then flushes it to disk; errno on failure, else 0.
int write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::size_t>(n);
  }
  return ::fsync(fd) == 0 ? 0 : errno;
}

}  // namespace

std::string textfile_problem(const std::string& path) {
  if (path.empty()) return "--metrics-textfile needs a file name";
  const std::string option = "--metrics-textfile '" + path + "': ";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return option + "is a directory";
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &st) != 0) return option + failed("cannot use the directory", dir, errno);
  if (!S_ISDIR(st.st_mode)) return option + "'" + dir + "' is not a directory";
  const std::string probe = temporary_for(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return option + failed("cannot create a file in", dir, errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

std::string job_text(const JobFigures& job) {
  std::string keys;
  for (std::size_t i = 0; i < job.keys.size(); ++i) keys += (i == 0 ? "" : ",") + job.keys[i];
  const PrometheusText::Labels lock = {{"lock", keys}};
  PrometheusText out;
  const auto gauge = [&](const char* name, const char* help, double value) {
    out.family(name, "gauge", help);
    out.sample(name, lock, value);
  };
  gauge("dblock_run_acquired", "1 if the last dblock run acquired its lock, else 0.", job.acquired ? 1 : 0);
  gauge("dblock_run_wait_seconds", "How long the last dblock run waited for its lock.", job.waited.count());
  gauge("dblock_run_hold_seconds", "How long the last dblock run held its lock.", job.held.count());
  gauge("dblock_run_exit_status", "The exit status of the last dblock run.", job.exit_status);
  gauge("dblock_run_lost", "1 if the last dblock run lost its lock while COMMAND ran, else 0.", job.lost ? 1 : 0);
  if (job.fence) gauge("dblock_run_fence", "The fencing token of the last dblock run's lease.", static_cast<double>(*job.fence));
  gauge("dblock_run_end_time_seconds", "When the last dblock run ended, in Unix time.",
        std::chrono::duration<double>(job.ended_at.time_since_epoch()).count());
  return out.text();
}

std::string write_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = temporary_for(path);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return failed("cannot create", temporary, errno);
  int error = write_all(fd, text);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    return failed("cannot write", path, error);
  }
  return "";
}

}  // namespace dblock::cli
