#ifndef FLEETBENCH_CLINUX_SHIM_H
#define FLEETBENCH_CLINUX_SHIM_H
// Linux-only readiness and timer primitives that Glibc's Swift module does not export.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/resource.h>
#include <netinet/tcp.h>

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
