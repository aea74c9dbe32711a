#ifndef FLEETBENCH_CURING_SHIM_H
#define FLEETBENCH_CURING_SHIM_H
// liburing (Debian liburing-dev, 2.3 in bookworm). Used from C only (CLaneRing): most of its API is static inline
// functions over the kernel's shared rings, and the request entries are unions Swift imports poorly.
#include <liburing.h>
#endif
