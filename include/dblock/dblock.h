// dblock/dblock.h — umbrella header for applications. Start reading at lock_manager.h.
// A lock service's author reads dblock/service/kit.h instead.
#ifndef DBLOCK_DBLOCK_H_
#define DBLOCK_DBLOCK_H_

#include "dblock/election.h"
#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/lease_info.h"
#include "dblock/lock_manager.h"
#include "dblock/metrics.h"
#include "dblock/mutex.h"
#include "dblock/open.h"
#include "dblock/options.h"
#include "dblock/session_lock.h"
#include "dblock/sql/database.h"
#include "dblock/sql/features.h"
#include "dblock/url.h"

#endif  // DBLOCK_DBLOCK_H_
