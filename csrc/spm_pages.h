/* Fresh memory, faulted in by one call instead of a fault per page: a
 * large output (a long document's ids) written into untouched memory
 * faults every 4 KiB, and Linux 5.14+ takes the whole range's faults in one
 * madvise(MADV_POPULATE_WRITE) (docs/performance.md).  Elsewhere, or when
 * the kernel refuses, the pages fault as they are written. */
#ifndef SPM_PAGES_H
#define SPM_PAGES_H

#include <stddef.h>
#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#endif

/* Below this, the call costs more than the faults it saves. */
#define SPM_PREFAULT_MIN ((size_t)1 << 18)
/* A block this large is mapped afresh by glibc's malloc at every
 * allocation (its largest mmap threshold), so its pages are surely new.  A
 * smaller one may be memory the process reuses, already faulted in, where
 * the call only walks the pages again (a cost, no gain). */
#define SPM_PREFAULT_FRESH ((size_t)32 << 20)

/* Faults in the whole pages of [p, p + n), about to be written, when the
 * block of `block` bytes holding them is large enough to be new memory. */
static inline void spm_prefault_write(void *p, size_t n, size_t block) {
#if defined(__linux__)
    /* 0: not tried yet, 1: works, -1: refused (an older kernel). */
    static int state = 0;
    uintptr_t page, start, end;
    if (n < SPM_PREFAULT_MIN || block < SPM_PREFAULT_FRESH || state < 0)
        return;
    page = (uintptr_t)sysconf(_SC_PAGESIZE);
    start = ((uintptr_t)p + page - 1) & ~(page - 1);
    end = ((uintptr_t)p + n) & ~(page - 1);
    if (end <= start)
        return;
    if (madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0)
        state = 1;
    else if (state == 0)
        state = -1;
#else
    (void)p;
    (void)n;
    (void)block;
#endif
}

#endif
