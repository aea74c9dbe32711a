#define _GNU_SOURCE
#include "CLaneRing.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct fb_ring {
    struct io_uring uring;
    // Sends prepared since the last submission.
    unsigned sends_prepared;
    // Sends the kernel took whose completions have not been drained yet.
    unsigned sends_unreaped;
    // After a failed submission: the requests the kernel did not take, [unsubmitted_next, unsubmitted_end).
    unsigned unsubmitted_next, unsubmitted_end;
};

static const uint64_t token_mask = (UINT64_C(1) << FB_RING_TOKEN_BITS) - 1;

static inline uint64_t user_data(enum fb_ring_kind kind, uint64_t token) {
    return ((uint64_t)kind << FB_RING_TOKEN_BITS) | (token & token_mask);
}

static inline uint32_t kind_of(uint64_t user_data) { return (uint32_t)(user_data >> FB_RING_TOKEN_BITS); }

int fb_ring_open(fb_ring **out, unsigned entries, unsigned completion_entries) {
    *out = NULL;
    fb_ring *ring = calloc(1, sizeof *ring);
    if (!ring) return -ENOMEM;
    struct io_uring_params params = {0};
    // SUBMIT_ALL: one request rejected at submission does not stop the rest of the batch. COOP_TASKRUN: no
    // interrupting the lane to post completions (a send's is posted before io_uring_enter returns anyway).
    // Not SINGLE_ISSUER/DEFER_TASKRUN: a lane is a Dispatch queue, whose turns may run on different threads.
    unsigned flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN;
    if (completion_entries) {
        flags |= IORING_SETUP_CQSIZE;
        params.cq_entries = completion_entries;
    }
    params.flags = flags;
    int result = io_uring_queue_init_params(entries, &ring->uring, &params);
    if (result == -EINVAL) {
        // A kernel older than 5.19 without those flags: still correct, SUBMIT_ALL is emulated by submitting the
        // rest again (fb_ring_submit). Too many entries stays EINVAL.
        struct io_uring_params plain = {0};
        plain.flags = flags & IORING_SETUP_CQSIZE;
        plain.cq_entries = params.cq_entries;
        params = plain;
        result = io_uring_queue_init_params(entries, &ring->uring, &params);
    }
    if (result < 0) {
        free(ring);
        return result;
    }
    if (!(params.features & IORING_FEAT_NODROP)) {
        // Before 5.5 completions could be dropped on overflow; we do not rely on such kernels.
        io_uring_queue_exit(&ring->uring);
        free(ring);
        return -ENOSYS;
    }
    *out = ring;
    return 0;
}

void fb_ring_close(fb_ring *ring) {
    if (!ring) return;
    io_uring_queue_exit(&ring->uring);
    free(ring);
}

unsigned fb_ring_entries(const fb_ring *ring) { return ring->uring.sq.ring_entries; }

int fb_ring_prepare_send(fb_ring *ring, int fd, const void *bytes, unsigned length, uint64_t token) {
    struct io_uring_sqe *entry = io_uring_get_sqe(&ring->uring);
    if (!entry) return -EBUSY;
    // MSG_DONTWAIT makes the kernel complete a full socket with -EAGAIN (REQ_F_NOWAIT) instead of polling and
    // sending later from a buffer the lane may have reused by then. io_uring adds MSG_NOSIGNAL itself; it is
    // stated here because a SIGPIPE would end the whole run.
    io_uring_prep_send(entry, fd, bytes, length, MSG_DONTWAIT | MSG_NOSIGNAL);
    io_uring_sqe_set_data64(entry, user_data(FB_RING_SEND, token));
    ring->sends_prepared++;
    return 0;
}

unsigned fb_ring_prepared(const fb_ring *ring) { return io_uring_sq_ready(&ring->uring); }

// Completions of sends waiting in the completion queue (other kinds of request may have posted some too).
static unsigned ready_sends(const struct io_uring *uring, unsigned enough) {
    unsigned head = *uring->cq.khead;
    unsigned tail = io_uring_smp_load_acquire(uring->cq.ktail);
    unsigned count = 0;
    for (unsigned index = head; index != tail && count < enough; index++) {
        if (kind_of(uring->cq.cqes[index & uring->cq.ring_mask].user_data) == FB_RING_SEND) count++;
    }
    return count;
}

int fb_ring_submit(fb_ring *ring) {
    struct io_uring *uring = &ring->uring;
    unsigned pending = io_uring_sq_ready(uring);
    if (pending == 0 && ring->sends_unreaped == 0) return 0;
    int failure = 0;
    unsigned taken = 0;
    while (io_uring_sq_ready(uring) > 0) {
        // Publishes the prepared entries and enters the kernel; a kernel without SUBMIT_ALL may stop at a
        // rejected entry, and the next turn of this loop submits the rest.
        int result = io_uring_submit(uring);
        if (result == -EINTR) continue;
        if (result <= 0) {
            failure = result < 0 ? -result : EAGAIN;
            break;
        }
        taken += (unsigned)result;
    }
    unsigned unsubmitted_sends = 0;
    if (failure) {
        ring->unsubmitted_next = *uring->sq.khead;
        ring->unsubmitted_end = uring->sq.sqe_tail;
        for (unsigned index = ring->unsubmitted_next; index != ring->unsubmitted_end; index++) {
            if (kind_of(uring->sq.sqes[index & uring->sq.ring_mask].user_data) == FB_RING_SEND) unsubmitted_sends++;
        }
    }
    ring->sends_unreaped += ring->sends_prepared - unsubmitted_sends;
    ring->sends_prepared = 0;
    // Every send the kernel took must have completed before the caller reuses its bytes.
    for (;;) {
        unsigned ready = ready_sends(uring, ring->sends_unreaped);
        if (ready >= ring->sends_unreaped) break;
        // min_complete counts every completion in the queue, so wait for what is there plus what is missing.
        struct io_uring_cqe *completion;
        int result = io_uring_wait_cqe_nr(uring, &completion, io_uring_cq_ready(uring) + ring->sends_unreaped - ready);
        if (result < 0 && result != -EINTR) {
            if (!failure) failure = -result;
            break;
        }
    }
    return failure ? -failure : (int)taken;
}

unsigned fb_ring_drain(fb_ring *ring, fb_ring_completion *completions, unsigned capacity) {
    struct io_uring_cqe *batch[64];
    unsigned count = 0;
    while (count < capacity) {
        unsigned wanted = capacity - count < 64 ? capacity - count : 64;
        // Also flushes completions the kernel kept aside when the queue overflowed (IORING_FEAT_NODROP).
        unsigned got = io_uring_peek_batch_cqe(&ring->uring, batch, wanted);
        if (got == 0) break;
        for (unsigned index = 0; index < got; index++) {
            const struct io_uring_cqe *entry = batch[index];
            fb_ring_completion *completion = &completions[count + index];
            completion->token = entry->user_data & token_mask;
            completion->result = entry->res;
            completion->flags = entry->flags;
            completion->kind = kind_of(entry->user_data);
            if (completion->kind == FB_RING_SEND) ring->sends_unreaped--;
        }
        io_uring_cq_advance(&ring->uring, got);
        count += got;
    }
    return count;
}

int fb_ring_next_unsubmitted(fb_ring *ring, uint32_t *kind, uint64_t *token) {
    if (ring->unsubmitted_next == ring->unsubmitted_end) return 0;
    uint64_t data = ring->uring.sq.sqes[ring->unsubmitted_next & ring->uring.sq.ring_mask].user_data;
    *kind = kind_of(data);
    *token = data & token_mask;
    ring->unsubmitted_next++;
    return 1;
}

void fb_ring_close_descriptor(fb_ring *ring) {
    close(ring->uring.ring_fd);
    // io_uring_queue_exit closes these again; -1 keeps it from closing a descriptor another thread opened since.
    ring->uring.ring_fd = -1;
    ring->uring.enter_ring_fd = -1;
}
