#ifndef FLEETBENCH_CALLOCCOUNTER_H
#define FLEETBENCH_CALLOCCOUNTER_H
#include <stdint.h>
// Number of malloc/calloc/realloc/posix_memalign calls made by this process so far.
uint64_t fb_alloc_count(void);
#endif
