#ifndef FLEETBENCH_CLANERING_H
#define FLEETBENCH_CLANERING_H
// A lane's io_uring, over liburing: today it hands a lane's end-of-turn writes (one per connection) to the kernel in
// one system call. Every request carries a kind next to the caller's token, and completions come back with the
// kernel's flags, so other kinds of request (multishot receives into a provided-buffer ring) can share the ring and
// its single io_uring_enter per turn without changing what is here. liburing itself stays behind this header:
// Swift sees an opaque ring and plain structs.
#include <stdint.h>

typedef struct fb_ring fb_ring;

// What a request was. Stored in the top 8 bits of the kernel's user_data; the caller's token is the low 56 bits.
enum fb_ring_kind {
    FB_RING_SEND = 1,
};
#define FB_RING_TOKEN_BITS 56

// One completion, copied out of the kernel's completion queue.
typedef struct fb_ring_completion {
    uint64_t token;   // the caller's token
    int32_t result;   // bytes transferred, or -errno
    uint32_t flags;   // the kernel's IORING_CQE_F_* bits
    uint32_t kind;    // enum fb_ring_kind
} fb_ring_completion;

// Opens a ring of at least `entries` submission slots (the kernel rounds up to a power of two; more than 32,768 is
// EINVAL) and a completion queue of `completion_entries` (0: the kernel's default, twice the slots). 0 with `*ring`
// set, or -errno: ENOSYS (no io_uring in this kernel, or one older than 5.5 that may drop completions), EPERM
// (forbidden, e.g. by a container's seccomp profile or kernel.io_uring_disabled).
int fb_ring_open(fb_ring **ring, unsigned entries, unsigned completion_entries);
void fb_ring_close(fb_ring *ring);

// Submission slots (after rounding).
unsigned fb_ring_entries(const fb_ring *ring);

// Prepares a send(2) of `length` bytes on `fd` with MSG_DONTWAIT | MSG_NOSIGNAL: a full send buffer completes with
// -EAGAIN instead of being retried by the kernel later, so the bytes are never read after fb_ring_submit returns.
// `token` must fit in FB_RING_TOKEN_BITS. 0, or -EBUSY when every slot is prepared (submit first).
int fb_ring_prepare_send(fb_ring *ring, int fd, const void *bytes, unsigned length, uint64_t token);

// Requests prepared and not yet taken by the kernel.
unsigned fb_ring_prepared(const fb_ring *ring);

// Submits every prepared request and returns once every send the kernel took has completed (sends on
// non-blocking sockets complete during the submission itself; the wait is a guard, because the caller reuses the
// bytes as soon as this returns). Returns the number of requests taken, or -errno if io_uring_enter failed
// (or took nothing: -EAGAIN). After a failure the requests the kernel did not take are listed by
// fb_ring_next_unsubmitted and the ring must be closed: the kernel may still see them.
int fb_ring_submit(fb_ring *ring);

// Moves up to `capacity` completions into `completions`, oldest first, and frees their slots in the completion
// queue. Returns how many.
unsigned fb_ring_drain(fb_ring *ring, fb_ring_completion *completions, unsigned capacity);

// After a failed fb_ring_submit: the next request the kernel did not take, oldest first. 1 while there is one.
int fb_ring_next_unsubmitted(fb_ring *ring, uint32_t *kind, uint64_t *token);

// Tests only: closes the ring's descriptor, so the next submission fails as a refusal by the kernel would (EBADF).
void fb_ring_close_descriptor(fb_ring *ring);

// The receive side (multishot receives into provided buffers): its own ring, see CReceiveRing.h.
#include "CReceiveRing.h"

#endif
