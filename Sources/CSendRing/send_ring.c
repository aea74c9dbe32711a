#define _GNU_SOURCE
#include "CSendRing.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

// Older kernel headers: the values are fixed by the kernel ABI.
#ifndef IORING_SETUP_SUBMIT_ALL
#define IORING_SETUP_SUBMIT_ALL (1U << 7)
#endif
#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif

static int sys_setup(unsigned entries, struct io_uring_params *params) {
    return (int)syscall(__NR_io_uring_setup, entries, params);
}

static int sys_enter(int fd, unsigned submit, unsigned min_complete, unsigned flags) {
    return (int)syscall(__NR_io_uring_enter, fd, submit, min_complete, flags, NULL, 0);
}

int fb_send_ring_open(fb_send_ring *ring, unsigned entries) {
    memset(ring, 0, sizeof *ring);
    ring->fd = -1;
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    // SUBMIT_ALL: one failed send does not stop the rest of the batch. COOP_TASKRUN: no interrupting the lane
    // to post completions (they are all posted before io_uring_enter returns anyway).
    params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN;
    int fd = sys_setup(entries, &params);
    if (fd < 0 && errno == EINVAL) {
        // A kernel older than 5.19 without those flags: still correct, SUBMIT_ALL is emulated by the caller's
        // handling of unsubmitted entries.
        memset(&params, 0, sizeof params);
        fd = sys_setup(entries, &params);
    }
    if (fd < 0) return -errno;
    if (!(params.features & IORING_FEAT_NODROP)) {
        // Before 5.5 completions could be dropped on overflow; we do not rely on such kernels.
        close(fd);
        return -ENOSYS;
    }
    ring->fd = fd;
    ring->entries = params.sq_entries;
    ring->sq_map_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    ring->cq_map_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
    int single = (params.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && ring->cq_map_size > ring->sq_map_size) ring->sq_map_size = ring->cq_map_size;
    ring->sq_map = mmap(NULL, ring->sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                        IORING_OFF_SQ_RING);
    if (ring->sq_map == MAP_FAILED) { int code = errno; ring->sq_map = NULL; fb_send_ring_close(ring); return -code; }
    if (single) {
        ring->cq_map = ring->sq_map;
    } else {
        ring->cq_map = mmap(NULL, ring->cq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                            IORING_OFF_CQ_RING);
        if (ring->cq_map == MAP_FAILED) { int code = errno; ring->cq_map = NULL; fb_send_ring_close(ring); return -code; }
    }
    ring->sqes_size = params.sq_entries * sizeof(struct io_uring_sqe);
    ring->sqes = mmap(NULL, ring->sqes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (ring->sqes == MAP_FAILED) { int code = errno; ring->sqes = NULL; fb_send_ring_close(ring); return -code; }

    char *sq = ring->sq_map;
    char *cq = ring->cq_map;
    ring->sq_head = (unsigned *)(sq + params.sq_off.head);
    ring->sq_tail = (unsigned *)(sq + params.sq_off.tail);
    ring->sq_mask = (unsigned *)(sq + params.sq_off.ring_mask);
    ring->sq_array = (unsigned *)(sq + params.sq_off.array);
    ring->cq_head = (unsigned *)(cq + params.cq_off.head);
    ring->cq_tail = (unsigned *)(cq + params.cq_off.tail);
    ring->cq_mask = (unsigned *)(cq + params.cq_off.ring_mask);
    ring->cqes = cq + params.cq_off.cqes;
    ring->prepared_tail = *ring->sq_tail;
    ring->submitted_tail = ring->prepared_tail;
    return 0;
}

void fb_send_ring_close(fb_send_ring *ring) {
    if (ring->sqes) munmap(ring->sqes, ring->sqes_size);
    if (ring->cq_map && ring->cq_map != ring->sq_map) munmap(ring->cq_map, ring->cq_map_size);
    if (ring->sq_map) munmap(ring->sq_map, ring->sq_map_size);
    if (ring->fd >= 0) close(ring->fd);
    memset(ring, 0, sizeof *ring);
    ring->fd = -1;
}

int fb_send_ring_prepare(fb_send_ring *ring, int fd, const void *bytes, unsigned length, uint64_t token) {
    unsigned head = __atomic_load_n(ring->sq_head, __ATOMIC_ACQUIRE);
    if (ring->prepared_tail - head >= ring->entries) return -EBUSY;
    unsigned index = ring->prepared_tail & *ring->sq_mask;
    struct io_uring_sqe *entry = (struct io_uring_sqe *)ring->sqes + index;
    memset(entry, 0, sizeof *entry);
    entry->opcode = IORING_OP_SEND;
    entry->fd = fd;
    entry->addr = (uint64_t)(uintptr_t)bytes;
    entry->len = length;
    // MSG_DONTWAIT makes the kernel complete a full socket with -EAGAIN (REQ_F_NOWAIT) instead of polling and
    // sending later from a buffer the lane may have reused by then. io_uring adds MSG_NOSIGNAL itself; it is
    // stated here because a SIGPIPE would end the whole run.
    entry->msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL;
    entry->user_data = token;
    ring->sq_array[index] = index;
    ring->prepared_tail++;
    return 0;
}

unsigned fb_send_ring_pending(const fb_send_ring *ring) {
    return ring->prepared_tail - ring->submitted_tail;
}

static unsigned ready_completions(const fb_send_ring *ring) {
    return __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE) - *ring->cq_head;
}

int fb_send_ring_submit(fb_send_ring *ring, unsigned *unsubmitted) {
    *unsubmitted = 0;
    unsigned pending = ring->prepared_tail - ring->submitted_tail;
    if (pending == 0) return 0;
    __atomic_store_n(ring->sq_tail, ring->prepared_tail, __ATOMIC_RELEASE);
    unsigned waiting = 0;  // submitted, completion not yet seen
    unsigned already = ready_completions(ring);
    int failure = 0;
    while (pending > 0) {
        int taken = sys_enter(ring->fd, pending, 0, 0);
        if (taken < 0 && errno == EINTR) continue;
        if (taken <= 0) {
            // Refused, or nothing taken and no error given: the rest is reported as not sent.
            failure = taken < 0 ? errno : EAGAIN;
            break;
        }
        pending -= (unsigned)taken;
        waiting += (unsigned)taken;
    }
    *unsubmitted = pending;
    ring->submitted_tail = ring->prepared_tail - pending;
    // Sends on non-blocking sockets complete during submission; wait for any that did not (a guard: the lane
    // reuses the buffers as soon as this returns).
    while (ready_completions(ring) - already < waiting) {
        // min_complete counts every completion not yet taken, including the `already` ones.
        if (sys_enter(ring->fd, 0, already + waiting, IORING_ENTER_GETEVENTS) < 0 && errno != EINTR) {
            if (!failure) failure = errno;
            break;
        }
    }
    return failure ? -failure : (int)waiting;
}

int fb_send_ring_next_completion(fb_send_ring *ring, uint64_t *token, int32_t *result) {
    unsigned head = *ring->cq_head;
    if (head == __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE)) return 0;
    const struct io_uring_cqe *completion = (const struct io_uring_cqe *)ring->cqes + (head & *ring->cq_mask);
    *token = completion->user_data;
    *result = completion->res;
    __atomic_store_n(ring->cq_head, head + 1, __ATOMIC_RELEASE);
    return 1;
}

int fb_send_ring_next_unsubmitted(fb_send_ring *ring, uint64_t *token) {
    if (ring->submitted_tail == ring->prepared_tail) return 0;
    unsigned index = ring->submitted_tail & *ring->sq_mask;
    *token = ((const struct io_uring_sqe *)ring->sqes + index)->user_data;
    ring->submitted_tail++;
    return 1;
}
