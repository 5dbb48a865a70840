/* spm_atomic: the few atomic operations the shared chunk cache needs, on
 * GCC/Clang (__atomic builtins) and MSVC (Interlocked functions, whose full
 * barriers are at least as strong as the orderings asked for).
 */
#ifndef SPM_ATOMIC_H
#define SPM_ATOMIC_H

#include <stddef.h>
#include <stdint.h>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#include <windows.h>

static inline void spm_yield(void) {
    SwitchToThread();
}
static inline uint32_t spm_load_acquire_u32(const uint32_t *p) {
    return (uint32_t)InterlockedCompareExchange((volatile LONG *)p, 0, 0);
}
static inline void spm_sub_release_u32(uint32_t *p, uint32_t v) {
    InterlockedExchangeAdd((volatile LONG *)p, -(LONG)v);
}
static inline void spm_store_release_u32(uint32_t *p, uint32_t v) {
    InterlockedExchange((volatile LONG *)p, (LONG)v);
}

static inline void *spm_load_acquire_ptr(void *const *p) {
    return InterlockedCompareExchangePointer((PVOID volatile *)p, NULL, NULL);
}
static inline void spm_store_release_ptr(void **p, void *v) {
    InterlockedExchangePointer((PVOID volatile *)p, v);
}
/* Stores `desired` when *p == *expected; else *expected = *p.  1 on success. */
static inline int spm_cas_u32(uint32_t *p, uint32_t *expected, uint32_t desired) {
    uint32_t seen = (uint32_t)InterlockedCompareExchange((volatile LONG *)p, (LONG)desired, (LONG)*expected);
    if (seen == *expected) return 1;
    *expected = seen;
    return 0;
}
static inline size_t spm_fetch_add_size(size_t *p, size_t v) {
#ifdef _WIN64
    return (size_t)InterlockedExchangeAdd64((volatile LONG64 *)p, (LONG64)v);
#else
    return (size_t)InterlockedExchangeAdd((volatile LONG *)p, (LONG)v);
#endif
}
static inline uint32_t spm_fetch_add_u32(uint32_t *p, uint32_t v) {
    return (uint32_t)InterlockedExchangeAdd((volatile LONG *)p, (LONG)v);
}
static inline uint32_t spm_load_u32(const uint32_t *p) {
    return (uint32_t)InterlockedCompareExchange((volatile LONG *)p, 0, 0);
}
static inline void spm_store_u32(uint32_t *p, uint32_t v) {
    InterlockedExchange((volatile LONG *)p, (LONG)v);
}
static inline void spm_or_u32(uint32_t *p, uint32_t v) {
    InterlockedOr((volatile LONG *)p, (LONG)v);
}
/* 1 when *p went from 0 to 1 (a try-lock). */
static inline int spm_try_lock(uint32_t *p) {
    return InterlockedCompareExchange((volatile LONG *)p, 1, 0) == 0;
}
static inline void spm_unlock(uint32_t *p) {
    InterlockedExchange((volatile LONG *)p, 0);
}

#else
#include <sched.h>

static inline void spm_yield(void) {
    sched_yield();
}
static inline uint32_t spm_load_acquire_u32(const uint32_t *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void spm_sub_release_u32(uint32_t *p, uint32_t v) {
    __atomic_fetch_sub(p, v, __ATOMIC_RELEASE);
}
static inline void spm_store_release_u32(uint32_t *p, uint32_t v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline void *spm_load_acquire_ptr(void *const *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void spm_store_release_ptr(void **p, void *v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline int spm_cas_u32(uint32_t *p, uint32_t *expected, uint32_t desired) {
    return __atomic_compare_exchange_n(p, expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static inline size_t spm_fetch_add_size(size_t *p, size_t v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline uint32_t spm_fetch_add_u32(uint32_t *p, uint32_t v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline uint32_t spm_load_u32(const uint32_t *p) {
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}
static inline void spm_store_u32(uint32_t *p, uint32_t v) {
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
static inline void spm_or_u32(uint32_t *p, uint32_t v) {
    __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
}
static inline int spm_try_lock(uint32_t *p) {
    uint32_t expected = 0;
    return __atomic_compare_exchange_n(p, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
static inline void spm_unlock(uint32_t *p) {
    __atomic_store_n(p, 0, __ATOMIC_RELEASE);
}

#endif

#endif /* SPM_ATOMIC_H */
