#ifndef FLEETBENCH_CSENDRING_H
#define FLEETBENCH_CSENDRING_H
// A minimal io_uring used for one thing: handing a lane's end-of-turn writes (one per connection) to the kernel in
// one system call. No liburing (not a dependency we can take): the raw io_uring_setup/io_uring_enter interface.
#include <stdint.h>
#include <stddef.h>

typedef struct fb_send_ring {
    int fd;
    unsigned entries;
    // Submission queue: ring head/tail (shared with the kernel), index array, entries.
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    void *sqes;
    // Completion queue.
    unsigned *cq_head, *cq_tail, *cq_mask;
    void *cqes;
    // Our own tail: entries prepared since the last submit are published at submit.
    unsigned prepared_tail;
    unsigned submitted_tail;
    void *sq_map; size_t sq_map_size;
    void *cq_map; size_t cq_map_size;
    size_t sqes_size;
} fb_send_ring;

// Opens a ring of `entries` submission slots (a power of two). 0 or -errno (ENOSYS: no io_uring in this kernel;
// EPERM: forbidden, e.g. by a container's seccomp profile or kernel.io_uring_disabled).
int fb_send_ring_open(fb_send_ring *ring, unsigned entries);
void fb_send_ring_close(fb_send_ring *ring);

// Prepares a send(2) of `length` bytes on `fd` with MSG_DONTWAIT | MSG_NOSIGNAL: a full send buffer completes with
// -EAGAIN instead of being retried by the kernel later, so the buffer is never read after fb_send_ring_submit
// returns. 0, or -EBUSY when every slot is prepared (submit first).
int fb_send_ring_prepare(fb_send_ring *ring, int fd, const void *bytes, unsigned length, uint64_t token);

// Number of prepared, unsubmitted sends.
unsigned fb_send_ring_pending(const fb_send_ring *ring);

// Submits every prepared send and waits until each has completed (they complete inline: non-blocking sockets).
// Returns the number completed, or -errno if io_uring_enter failed; `unsubmitted` gets how many prepared sends
// the kernel did not take (their completions will never come; the caller writes them some other way). After a
// failure the ring must be closed: the kernel may still see the entries it did not take.
int fb_send_ring_submit(fb_send_ring *ring, unsigned *unsubmitted);

// Takes the next completion: 1 with `token` and `result` (bytes sent or -errno), 0 when there is none.
int fb_send_ring_next_completion(fb_send_ring *ring, uint64_t *token, int32_t *result);

// The tokens of prepared sends the kernel did not take, oldest first (after a failed submit): 1 while there is one.
int fb_send_ring_next_unsubmitted(fb_send_ring *ring, uint64_t *token);

#endif
