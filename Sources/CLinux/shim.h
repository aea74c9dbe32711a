#ifndef FLEETBENCH_CLINUX_SHIM_H
#define FLEETBENCH_CLINUX_SHIM_H
// Linux-only readiness and timer primitives that Glibc's Swift module does not export.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/resource.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <spawn.h>

// accept4 is declared only under _GNU_SOURCE, which Swift's Glibc module is not built with; glibc exports it.
extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
// Accepts a connection already non-blocking and close-on-exec (one syscall instead of accept + fcntl).
static inline int fb_accept_nonblocking(int fd) { return accept4(fd, 0, 0, SOCK_NONBLOCK | SOCK_CLOEXEC); }

// Likewise _GNU_SOURCE only (glibc 2.34+): a spawn action closing every descriptor from `from` up in the child.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

// epoll_event is packed on x86_64; Swift cannot always form pointers into packed structs, so
// these helpers read and write its fields.
static inline uint32_t fb_epoll_event_events(const struct epoll_event *event) { return event->events; }
static inline uint64_t fb_epoll_event_u64(const struct epoll_event *event) { return event->data.u64; }
static inline struct epoll_event fb_epoll_event_make(uint32_t events, uint64_t data) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = data;
    return event;
}
#endif
