#define _GNU_SOURCE
#include "CReceiveRing.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TOKEN_BITS 56
static const uint64_t token_mask = (UINT64_C(1) << TOKEN_BITS) - 1;
static const uint16_t buffer_group = 0;
_Static_assert(FB_RX_MORE == IORING_CQE_F_MORE, "FB_RX_MORE is IORING_CQE_F_MORE");

struct fb_rx {
    struct io_uring uring;
    struct io_uring_buf_ring *buffer_ring;
    size_t buffer_ring_bytes;
    uint8_t *buffers;
    unsigned buffer_count, buffer_size;
    int buffers_registered;
    // The kernel's IORING_FEAT_* bits, and whether min_wait_usec was refused once (then never asked again).
    unsigned features;
    int min_wait_refused;
    // DEFER_TASKRUN | SINGLE_ISSUER (fb_rx_open with `deferred`): the ring starts disabled and only the thread that
    // enabled it (fb_rx_enable) enters the kernel; other threads prepare requests for it.
    int deferred;
    int enabled;
    pthread_t owner;
};

// Whether this thread may enter the kernel for `ring` (always, unless the ring is deferred and this thread is not
// the one that enabled it).
static inline int may_enter(const fb_rx *ring) {
    return !ring->deferred || (ring->enabled && pthread_equal(pthread_self(), ring->owner));
}

// IORING_FEAT_MIN_TIMEOUT (6.12), newer than liburing 2.3's header.
#define FB_FEAT_MIN_TIMEOUT (1U << 15)

static inline uint64_t user_data(enum fb_rx_kind kind, uint64_t token) {
    return ((uint64_t)kind << TOKEN_BITS) | (token & token_mask);
}

void fb_rx_close(fb_rx *ring) {
    if (!ring) return;
    if (ring->buffers_registered) io_uring_unregister_buf_ring(&ring->uring, buffer_group);
    io_uring_queue_exit(&ring->uring);
    if (ring->buffer_ring) munmap(ring->buffer_ring, ring->buffer_ring_bytes);
    if (ring->buffers) munmap(ring->buffers, (size_t)ring->buffer_count * ring->buffer_size);
    free(ring);
}

unsigned fb_rx_buffer_count(const fb_rx *ring) { return ring->buffer_count; }
unsigned fb_rx_buffer_size(const fb_rx *ring) { return ring->buffer_size; }

const uint8_t *fb_rx_buffer(const fb_rx *ring, unsigned id) {
    return ring->buffers + (size_t)id * ring->buffer_size;
}

void fb_rx_recycle(fb_rx *ring, unsigned id) {
    io_uring_buf_ring_add(ring->buffer_ring, ring->buffers + (size_t)id * ring->buffer_size, ring->buffer_size,
                          (unsigned short)id, io_uring_buf_ring_mask(ring->buffer_count), 0);
    io_uring_buf_ring_advance(ring->buffer_ring, 1);
}

// A free submission slot, submitting what is prepared when every slot is taken.
static struct io_uring_sqe *next_entry(fb_rx *ring) {
    struct io_uring_sqe *entry = io_uring_get_sqe(&ring->uring);
    if (entry) return entry;
    if (!may_enter(ring)) return NULL;
    int result;
    do { result = io_uring_submit(&ring->uring); } while (result == -EINTR);
    return io_uring_get_sqe(&ring->uring);
}

int fb_rx_arm_receive(fb_rx *ring, int fd, uint64_t token) {
    struct io_uring_sqe *entry = next_entry(ring);
    if (!entry) return -EBUSY;
    io_uring_prep_recv_multishot(entry, fd, NULL, 0, 0);
    entry->flags |= IOSQE_BUFFER_SELECT;
    entry->buf_group = buffer_group;
    io_uring_sqe_set_data64(entry, user_data(FB_RX_RECEIVE, token));
    return 0;
}

int fb_rx_arm_poll(fb_rx *ring, int fd, uint64_t token) {
    struct io_uring_sqe *entry = next_entry(ring);
    if (!entry) return -EBUSY;
    io_uring_prep_poll_multishot(entry, fd, POLLIN);
    io_uring_sqe_set_data64(entry, user_data(FB_RX_POLL, token));
    return 0;
}

int fb_rx_cancel(fb_rx *ring, int fd, uint64_t token) {
    struct io_uring_sqe *entry = next_entry(ring);
    if (!entry) return -EBUSY;
    if (!may_enter(ring)) {
        // Submitted by the owner thread later, when `fd` may be closed and its number reused: matched by the
        // receive's own user_data instead (unique per arming, see the lane's generations).
        io_uring_prep_cancel64(entry, user_data(FB_RX_RECEIVE, token), 0);
        io_uring_sqe_set_data64(entry, user_data(FB_RX_CANCEL, 0));
        return 1;
    }
    io_uring_prep_cancel_fd(entry, fd, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data64(entry, user_data(FB_RX_CANCEL, 0));
    int result;
    do { result = io_uring_submit(&ring->uring); } while (result == -EINTR);
    return result < 0 ? result : 0;
}

int fb_rx_wait(fb_rx *ring, int wait) {
    int result;
    if (!may_enter(ring)) return io_uring_sq_ready(&ring->uring) > 0 ? 1 : 0;
    if (wait && io_uring_cq_ready(&ring->uring) == 0) {
        // Submits and waits in one io_uring_enter; task work (the receives themselves) runs inside it.
        result = io_uring_submit_and_wait(&ring->uring, 1);
    } else if (io_uring_sq_ready(&ring->uring) > 0) {
        result = io_uring_submit(&ring->uring);
    } else {
        return 0;
    }
    return result < 0 ? result : 0;
}

int fb_rx_flush(fb_rx *ring) {
    if (!may_enter(ring)) return io_uring_sq_ready(&ring->uring) > 0 ? 1 : 0;
    int result;
    do { result = io_uring_submit_and_get_events(&ring->uring); } while (result == -EINTR);
    return result < 0 ? result : 0;
}

int fb_rx_block(fb_rx *ring) {
    if (io_uring_cq_ready(&ring->uring) > 0) return 0;
    struct io_uring_cqe *entry;
    // Peeks only: the completion is taken by the turn's fb_rx_drain.
    return io_uring_wait_cqe(&ring->uring, &entry);
}

int fb_rx_block_batched(fb_rx *ring, unsigned batch, unsigned min_wait_usec) {
    if (io_uring_cq_ready(&ring->uring) > 0) return 0;
    if (!(ring->features & FB_FEAT_MIN_TIMEOUT) || ring->min_wait_refused || min_wait_usec == 0 || batch < 2) {
        return fb_rx_block(ring);
    }
    // liburing 2.3 has no call for min_wait_usec: the kernel reads it from the field 2.3's header names `pad`.
    struct io_uring_getevents_arg argument = {0};
    argument.pad = min_wait_usec;
    long result = syscall(__NR_io_uring_enter, ring->uring.ring_fd, 0, batch,
                          IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &argument, sizeof argument);
    if (result < 0) {
        int code = errno;
        if (code == EINVAL) {
            ring->min_wait_refused = 1;
            return fb_rx_block(ring);
        }
        if (code == ETIME) return 0;
        return -code;
    }
    return 0;
}

int fb_rx_enable(fb_rx *ring) {
    if (!ring->deferred) return 0;
    if (ring->enabled) return pthread_equal(pthread_self(), ring->owner) ? 0 : -EEXIST;
    // liburing 2.3 has no io_uring_enable_rings.
    if (syscall(__NR_io_uring_register, ring->uring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0) return -errno;
    ring->owner = pthread_self();
    ring->enabled = 1;
    return 0;
}

int fb_rx_is_deferred(const fb_rx *ring) { return ring->deferred; }

int fb_rx_wait_until(fb_rx *ring, unsigned batch, uint64_t deadline_ns) {
    if (!may_enter(ring)) return -EEXIST;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t current = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    if (deadline_ns <= current) return 0;
    uint64_t left = deadline_ns - current;
    struct __kernel_timespec timeout = { .tv_sec = (long long)(left / 1000000000u), .tv_nsec = (long long)(left % 1000000000u) };
    struct io_uring_getevents_arg argument = {0};
    argument.ts = (uint64_t)(uintptr_t)&timeout;
    unsigned wanted = batch == 0 ? 1 : batch;
    // Submits nothing: the turn's requests went in at its end (fb_rx_wait).
    long result = syscall(__NR_io_uring_enter, ring->uring.ring_fd, 0, wanted,
                          IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &argument, sizeof argument);
    if (result < 0) {
        int code = errno;
        if (code == ETIME || code == EINTR) return 0;
        return -code;
    }
    return 0;
}

unsigned fb_rx_ready(const fb_rx *ring) { return io_uring_cq_ready(&ring->uring); }

unsigned fb_rx_drain(fb_rx *ring, fb_rx_completion *completions, unsigned capacity) {
    struct io_uring_cqe *batch[64];
    unsigned count = 0;
    while (count < capacity) {
        unsigned wanted = capacity - count < 64 ? capacity - count : 64;
        unsigned got = io_uring_peek_batch_cqe(&ring->uring, batch, wanted);
        if (got == 0) break;
        for (unsigned index = 0; index < got; index++) {
            const struct io_uring_cqe *entry = batch[index];
            fb_rx_completion *completion = &completions[count + index];
            completion->token = entry->user_data & token_mask;
            completion->result = entry->res;
            completion->flags = entry->flags;
            completion->kind = (uint32_t)(entry->user_data >> TOKEN_BITS);
            completion->buffer = (entry->flags & IORING_CQE_F_BUFFER)
                ? (int32_t)(entry->flags >> IORING_CQE_BUFFER_SHIFT) : -1;
        }
        io_uring_cq_advance(&ring->uring, got);
        count += got;
    }
    return count;
}

// One byte through a multishot receive on a socket pair: proves the kernel has provided-buffer rings and
// multishot receive (a 5.19 kernel rejects the receive with EINVAL).
static int probe(fb_rx *ring) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) return -errno;
    int result = fb_rx_arm_receive(ring, pair[0], 1);
    if (result == 0) result = fb_rx_wait(ring, 0);
    if (result == 0 && write(pair[1], "x", 1) != 1) result = -EIO;
    int received = 0;
    // The byte's completion, then the cancel's and the receive's last: four completions at most.
    for (int step = 0; result == 0 && step < 8; step++) {
        struct io_uring_cqe *entry;
        result = io_uring_wait_cqe(&ring->uring, &entry);
        if (result == -EINTR) { result = 0; continue; }
        if (result < 0) break;
        uint32_t kind = (uint32_t)(entry->user_data >> TOKEN_BITS);
        int res = entry->res;
        unsigned flags = entry->flags;
        io_uring_cqe_seen(&ring->uring, entry);
        if (kind == FB_RX_CANCEL) continue;
        if (flags & IORING_CQE_F_BUFFER) fb_rx_recycle(ring, flags >> IORING_CQE_BUFFER_SHIFT);
        if (!received) {
            if (res == 1 && (flags & IORING_CQE_F_MORE)) {
                received = 1;
                result = fb_rx_cancel(ring, pair[0], 1);
            } else {
                result = res < 0 ? res : -EOPNOTSUPP;
            }
        } else if (!(flags & IORING_CQE_F_MORE)) {
            break;  // the receive ended (cancelled)
        }
    }
    close(pair[0]);
    close(pair[1]);
    // What is left in the queue (the cancel's completion) is not the caller's.
    struct io_uring_cqe *entry;
    while (io_uring_peek_cqe(&ring->uring, &entry) == 0) io_uring_cqe_seen(&ring->uring, entry);
    if (result == 0 && !received) result = -EOPNOTSUPP;
    return result;
}

static int open_ring(fb_rx **out, unsigned entries, unsigned buffers, unsigned buffer_size, int deferred);

int fb_rx_open(fb_rx **out, unsigned entries, unsigned buffers, unsigned buffer_size, int deferred) {
    if (!deferred) return open_ring(out, entries, buffers, buffer_size, 0);
    // A deferred ring cannot be probed before its owner thread enables it: a throwaway one with the same flags,
    // enabled here, shows the kernel runs both (DEFER_TASKRUN: 6.1; multishot receive: 6.0).
    fb_rx *probe_ring = NULL;
    int result = open_ring(&probe_ring, 8, 8, 256, 2);
    if (result < 0) return result;
    fb_rx_close(probe_ring);
    return open_ring(out, entries, buffers, buffer_size, 1);
}

// `deferred`: 0 COOP_TASKRUN; 1 DEFER_TASKRUN | SINGLE_ISSUER, disabled until fb_rx_enable, not probed; 2 the same,
// enabled and probed on this thread.
static int open_ring(fb_rx **out, unsigned entries, unsigned buffers, unsigned buffer_size, int deferred) {
    *out = NULL;
    if (buffers == 0 || buffers > 32768 || (buffers & (buffers - 1)) || buffer_size == 0) return -EINVAL;
    fb_rx *ring = calloc(1, sizeof *ring);
    if (!ring) return -ENOMEM;
    struct io_uring_params params = {0};
    // COOP_TASKRUN: a receive's bytes are copied when the lane's thread next enters the kernel (the wait, at the
    // latest), not by interrupting a turn; a thread asleep in the wait is still woken. CQSIZE: multishot receives
    // post without a submission each, so the completion queue is made larger than the submission queue.
    params.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE;
    // DEFER_TASKRUN: a receive's bytes are copied only when the owner thread waits on the ring, and a wait for
    // `batch` completions is woken once that many are ready (or at its timeout), not once per receive.
    if (deferred) params.flags = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_CQSIZE;
    if (deferred == 1) params.flags |= IORING_SETUP_R_DISABLED;
    params.cq_entries = entries * 8 > 65536 ? 65536 : entries * 8;
    int result = io_uring_queue_init_params(entries, &ring->uring, &params);
    if (result < 0) {
        free(ring);
        return result;
    }
    ring->features = params.features;
    ring->deferred = deferred != 0;
    if (deferred == 2) {
        ring->enabled = 1;
        ring->owner = pthread_self();
    }
    ring->buffer_count = buffers;
    ring->buffer_size = buffer_size;
    ring->buffer_ring_bytes = (size_t)buffers * sizeof(struct io_uring_buf);
    void *memory = mmap(NULL, ring->buffer_ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (memory == MAP_FAILED) { fb_rx_close(ring); return -ENOMEM; }
    ring->buffer_ring = memory;
    memory = mmap(NULL, (size_t)buffers * buffer_size, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (memory == MAP_FAILED) { fb_rx_close(ring); return -ENOMEM; }
    ring->buffers = memory;
    io_uring_buf_ring_init(ring->buffer_ring);
    struct io_uring_buf_reg registration = {0};
    registration.ring_addr = (unsigned long)(uintptr_t)ring->buffer_ring;
    registration.ring_entries = buffers;
    registration.bgid = buffer_group;
    result = io_uring_register_buf_ring(&ring->uring, &registration, 0);
    if (result < 0) { fb_rx_close(ring); return result; }
    ring->buffers_registered = 1;
    for (unsigned id = 0; id < buffers; id++) {
        io_uring_buf_ring_add(ring->buffer_ring, ring->buffers + (size_t)id * buffer_size, buffer_size,
                              (unsigned short)id, io_uring_buf_ring_mask(buffers), (int)id);
    }
    io_uring_buf_ring_advance(ring->buffer_ring, (int)buffers);
    if (deferred != 1) {
        result = probe(ring);
        if (result < 0) { fb_rx_close(ring); return result; }
    }
    *out = ring;
    return 0;
}
