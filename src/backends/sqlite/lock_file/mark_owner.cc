#include "mark_owner.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "file_trust.h"
#include "scoped_fd.h"

namespace dblock::sqlite {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kMaxReads = 100000;  // a dump of more than this many datagrams is given up (kUnknown)

bool send_dump_request(int fd) {
  struct {
    nlmsghdr header;
    unix_diag_req body;
  } request{};
  request.header.nlmsg_len = sizeof(request);
  request.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = 1;
  request.body.sdiag_family = AF_UNIX;
  request.body.udiag_states = (1U << TCP_LISTEN) | (1U << TCP_CLOSE);  // bound, not connected
  request.body.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_UID;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  return ::sendto(fd, &request, sizeof(request), 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof(kernel)) ==
         static_cast<ssize_t>(sizeof(request));
}

// One socket's record: whether it is bound to `address` ("\0" + name), and its uid if given.
struct Record {
  bool matched = false;
  bool has_uid = false;
  std::uint32_t uid = 0;
};

Record read_record(const nlmsghdr* message, std::string_view address) {
  Record record;
  const auto* body = static_cast<const unix_diag_msg*>(NLMSG_DATA(message));
  int length = static_cast<int>(message->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof(*body)));
  for (auto* a = reinterpret_cast<const rtattr*>(reinterpret_cast<const char*>(body) + NLMSG_ALIGN(sizeof(*body)));
       RTA_OK(a, length); a = RTA_NEXT(a, length)) {
    const std::string_view payload(static_cast<const char*>(RTA_DATA(a)), RTA_PAYLOAD(a));
    if (a->rta_type == UNIX_DIAG_NAME) record.matched = payload == address;
    if (a->rta_type == UNIX_DIAG_UID && payload.size() >= sizeof(std::uint32_t)) {
      record.has_uid = true;
      std::memcpy(&record.uid, payload.data(), sizeof(record.uid));
    }
  }
  return record;
}

// Sets the socket's receive timeout to what is left until `deadline`; false when nothing is.
bool time_out_at(int fd, SteadyClock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - SteadyClock::now());
  if (left.count() <= 0) return false;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(left.count() / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(left.count() % 1000000);
  return ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0;
}

}  // namespace

MarkOwner mark_owner(const std::string& name, std::chrono::milliseconds budget) {
  const SteadyClock::time_point deadline = SteadyClock::now() + budget;
  const ScopedFd netlink{::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)};
  if (netlink.fd < 0 || !send_dump_request(netlink.fd)) return MarkOwner::kUnknown;
  std::string address(1, '\0');
  address += name;
  alignas(nlmsghdr) char buffer[32768];
  for (int reads = 0; reads < kMaxReads; ++reads) {
    if (!time_out_at(netlink.fd, deadline)) return MarkOwner::kUnknown;
    const ssize_t n = ::recv(netlink.fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return MarkOwner::kUnknown;  // timed out, or the dump failed
    int left = static_cast<int>(n);
    // NLMSG_OK compares the header's unsigned length with the signed `left` (as the kernel's own
    // users do); clang warns of it where GCC does not.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
    for (auto* m = reinterpret_cast<const nlmsghdr*>(buffer); NLMSG_OK(m, left); m = NLMSG_NEXT(m, left)) {
      if (m->nlmsg_type == NLMSG_DONE) return MarkOwner::kUntrusted;  // no trusted binder (other uids', or none)
      if (m->nlmsg_type == NLMSG_ERROR || m->nlmsg_type != SOCK_DIAG_BY_FAMILY) return MarkOwner::kUnknown;
      const Record record = read_record(m, address);
      if (!record.matched) continue;
      if (!record.has_uid) return MarkOwner::kUnknown;  // a kernel without UNIX_DIAG_UID (before 5.3)
      if (trusted_owner(static_cast<uid_t>(record.uid))) return MarkOwner::kTrusted;
    }
#pragma GCC diagnostic pop
  }
  return MarkOwner::kUnknown;
}

}  // namespace dblock::sqlite
