#define _GNU_SOURCE
#include "CSeccomp.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define FB_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FB_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

int fb_forbid_io_uring_setup(int error) {
    struct sock_filter program[] = {
#ifdef FB_AUDIT_ARCH
        // A system call of another ABI (e.g. 32-bit) has other numbers: let it through untouched.
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FB_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
#endif
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)error & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog filter = {.len = sizeof program / sizeof program[0], .filter = program};
    // Needed to install a filter without CAP_SYS_ADMIN; like the filter, it holds for this thread only.
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) != 0) return -errno;
    return 0;
}

int fb_thread_id(void) { return (int)syscall(SYS_gettid); }
