#ifndef FLEETBENCH_CSECCOMP_H
#define FLEETBENCH_CSECCOMP_H
// Tests only: forbids io_uring the way a container runtime's seccomp profile does, for one thread.

// From now on io_uring_setup fails with `error` on the calling thread and on every thread it creates (a seccomp
// filter; other threads are not affected). 0, or -errno if the filter could not be installed.
int fb_forbid_io_uring_setup(int error);

// The calling thread's kernel id (gettid), which Swift's Glibc module does not export.
int fb_thread_id(void);

#endif
