// dblock/service/kit.h — start here to write a lock service for dblock.
//
// A service is a folder of its own (in this tree, src/backends/<name>/; outside it, any project
// that links dblock::core) built on these headers alone. The engine owns everything that is the
// same for every service: names, reentrancy, safe-until, the renewal thread, lost-lease signals,
// waiting, the reaper's pacing. A service contributes what differs, read in this order:
//
//   lease_service.h     the seam: LeaseService (six calls), ServiceTraits, the request and result
//                       types, and call_deadline() — the deadline every blocking call obeys
//   capabilities.h      what a service may add: FairQueue, WakeEvents, NativeWait, HolderProbe,
//                       Maintenance, AuditLog, MultiAcquire, SessionLocks (each optional)
//   dblock/schemes.h    registering a URL scheme, so that dblock::open("<scheme>://...") finds it
//   dblock/errors.h     the error tree every call throws from: translate the driver's errors
//
// Tools for the parts every service has, so that the rules stay one:
//
//   url_params.h        the URL's query parameters: unknown, malformed or repeated ones refused
//   identifiers.h       table prefixes and SQL identifiers validated and quoted
//   backoff.h           jitter, and the pause between refusals
//   pool.h              idle connections for reuse
//   retry.h             the retry and in-doubt policy of a statement or call (with pool.h)
//   socket_deadlines.h  cutting a client library's blocked socket call at call_deadline()
//   opened_socket.h     finding the socket a client library opened, for socket_deadlines.h
//   event_fanout.h      a pushed event channel (LISTEN, SUBSCRIBE) fanned out to waiters
//   sql/                the SQL layer: statements by dialect (":name" parameters), arguments
//                       bound by name (args.h), rows read by column name (rows.h), migrations,
//                       builders for application tables, session-lock connections (dblock::sql)
//
// The conformance suite (tests/conformance/) is the definition of "works": a new service passes
// it for the capabilities it declares. docs/architecture.md draws the layers.
//
// Namespaces: the seam's types are dblock::…; the tools are dblock::service::…; the SQL layer is
// dblock::sql::…. Nothing here is thread-hostile: each header states its own thread-safety.
#ifndef DBLOCK_SERVICE_KIT_H_
#define DBLOCK_SERVICE_KIT_H_

#include "dblock/errors.h"
#include "dblock/schemes.h"
#include "dblock/service/backoff.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/event_fanout.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/lease_service.h"
#include "dblock/service/pool.h"
#include "dblock/service/retry.h"
#include "dblock/service/socket_deadlines.h"
#include "dblock/service/url_params.h"

#endif  // DBLOCK_SERVICE_KIT_H_
