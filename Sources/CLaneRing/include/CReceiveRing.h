#ifndef FLEETBENCH_CRECEIVERING_H
#define FLEETBENCH_CRECEIVERING_H
// A lane's receive ring, over liburing: one multishot receive per socket (IORING_OP_RECV with IORING_RECV_MULTISHOT)
// taking its buffers from a ring of provided buffers, plus a multishot poll of the lane's epoll descriptor, so the
// lane's thread waits in io_uring_enter alone and one wait collects every socket's bytes (no recv(2) per ready
// socket). Kept apart from the send ring (CLaneRing.h): the send ring's submission waits for its own sends only, and
// the two never share a completion queue. Swift sees an opaque ring and plain structs.
#include <stdint.h>

typedef struct fb_rx fb_rx;

// What a completion was. Stored in the top 8 bits of the kernel's user_data; the caller's token is the low 56 bits.
enum fb_rx_kind {
    FB_RX_RECEIVE = 1,
    FB_RX_POLL = 2,
    FB_RX_CANCEL = 3,
};

// IORING_CQE_F_MORE: the request posts more completions (a multishot receive or poll still armed).
#define FB_RX_MORE 2u

typedef struct fb_rx_completion {
    uint64_t token;   // the caller's token
    int32_t result;   // bytes received (0: end of stream), poll mask, or -errno
    uint32_t flags;   // the kernel's IORING_CQE_F_* bits
    uint32_t kind;    // enum fb_rx_kind
    int32_t buffer;   // the provided buffer holding the bytes (IORING_CQE_F_BUFFER), else -1
} fb_rx_completion;

// Opens a ring of `entries` submission slots with `buffers` provided buffers of `buffer_size` bytes (`buffers` a
// power of two, at most 32,768), and checks that this kernel runs a multishot receive into them (6.0 or later) by
// receiving one byte on a socket pair. 0 with `*ring` set, or -errno: ENOSYS (no io_uring), EPERM (forbidden: seccomp,
// kernel.io_uring_disabled), EINVAL or EOPNOTSUPP (a kernel without provided-buffer rings or multishot receive).
//
// `deferred`: the ring is set up with DEFER_TASKRUN and SINGLE_ISSUER (6.1 and later; the kernel's support is probed on
// a throwaway ring) and starts disabled: one thread, the one that calls fb_rx_enable, enters the kernel for it from
// then on. Receives are then copied only while that thread waits on the ring, and a wait for a batch of completions
// is woken once, when the batch is ready (or at its timeout), instead of once per receive. Other threads may still
// prepare requests (under the caller's own exclusion): they go in with the owner's next submission.
int fb_rx_open(fb_rx **ring, unsigned entries, unsigned buffers, unsigned buffer_size, int deferred);
void fb_rx_close(fb_rx *ring);

// Prepares a multishot receive on `fd` (submitted by the next fb_rx_submit or fb_rx_wait). 0 or -errno.
int fb_rx_arm_receive(fb_rx *ring, int fd, uint64_t token);
// Prepares a multishot poll for input on `fd` (the lane's epoll descriptor). 0 or -errno.
int fb_rx_arm_poll(fb_rx *ring, int fd, uint64_t token);
// Cancels every request on `fd` and submits at once: until then the kernel holds the socket open, so a close(2)
// right after this one really closes the connection. The receive's last completion (-ECANCELED) comes later.
// On a deferred ring from a thread other than its owner: prepares a cancel of the receive armed with `token`
// (`fd` may be closed and reused by then) for the owner's next submission and returns 1; the socket closes then.
int fb_rx_cancel(fb_rx *ring, int fd, uint64_t token);

// A deferred ring: makes the calling thread its owner and enables it. 0, -EEXIST (another thread owns it), or
// -errno. Nothing for a ring that is not deferred.
int fb_rx_enable(fb_rx *ring);
int fb_rx_is_deferred(const fb_rx *ring);

// Waits until `batch` completions are ready or the monotonic clock reaches `deadline_ns`, whichever is first
// (returns at once past it); submits nothing. On a deferred ring the wait sleeps through the receives until the
// batch is complete. 0 (also at the deadline or on EINTR), or -errno (-EEXIST: not the owner thread).
int fb_rx_wait_until(fb_rx *ring, unsigned batch, uint64_t deadline_ns);

// Waits until a completion is ready without submitting anything (the lane's driver thread, while a turn on
// another thread may be preparing requests). 0, or -errno (EINTR).
int fb_rx_block(fb_rx *ring);

// As fb_rx_block, but once a completion is ready it keeps waiting, up to `min_wait_usec` in all, for `batch`
// completions (the kernel's min_wait_usec, 6.12 and later: IORING_FEAT_MIN_TIMEOUT), so a turn takes several
// receives arriving close together. A kernel without it waits as fb_rx_block. 0, or -errno (EINTR).
int fb_rx_block_batched(fb_rx *ring, unsigned batch, unsigned min_wait_usec);

// Submits what is prepared; with `wait`, also waits until at least one completion is ready (returns at once if one
// already is). 0, or -errno (EINTR: woken without a completion). On a deferred ring from another thread than its
// owner: submits nothing and returns 1 when requests wait for the owner.
int fb_rx_wait(fb_rx *ring, int wait);

// Submits what is prepared and runs, without waiting, the task work waiting for this thread: on a deferred ring the
// receives' bytes are copied and every completion posted only there (or in a wait), so an owner that runs turn after
// turn without waiting must call this between them, or its completions never come (the kernel runs a bounded batch
// per call). 0, or -errno. On a deferred ring from another thread than its owner: nothing, 1 when requests wait.
int fb_rx_flush(fb_rx *ring);

// Moves up to `capacity` completions into `completions`, oldest first. Returns how many.
unsigned fb_rx_drain(fb_rx *ring, fb_rx_completion *completions, unsigned capacity);

// Completions waiting in the queue.
unsigned fb_rx_ready(const fb_rx *ring);

// The bytes of provided buffer `id`, and handing it back to the kernel once they were used.
const uint8_t *fb_rx_buffer(const fb_rx *ring, unsigned id);
void fb_rx_recycle(fb_rx *ring, unsigned id);

// Provided buffers and their size.
unsigned fb_rx_buffer_count(const fb_rx *ring);
unsigned fb_rx_buffer_size(const fb_rx *ring);

#endif
