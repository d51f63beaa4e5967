// glibc allocator settings and trimming for the compressor's large, short-lived buffers.
#include "CVipsShim.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

void ipv_release_memory(void) {
#if defined(__GLIBC__)
    // Freed buffers below the mmap threshold leave holes in the heap that the trim threshold does
    // not reach (it only cuts the top); hand their pages back too.
    malloc_trim(0);
#endif
}

int ipv_tune_malloc(int arenas, int mmap_threshold, int trim_threshold) {
#if defined(__GLIBC__)
    int ok = 1;
    if (arenas > 0)
        ok &= mallopt(M_ARENA_MAX, arenas);
    // A fixed threshold also turns off glibc's dynamic one, which otherwise climbs to 32 MB after the
    // first large free and then keeps every buffer below that size in the heap.
    if (mmap_threshold > 0)
        ok &= mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    // Fixing the mmap threshold leaves the trim threshold at 128 KiB, which hands back the top of
    // the heap after nearly every image only for the next one to fault it in again.
    if (trim_threshold > 0)
        ok &= mallopt(M_TRIM_THRESHOLD, trim_threshold);
    return ok;
#else
    (void) arenas;
    (void) mmap_threshold;
    (void) trim_threshold;
    return 0;
#endif
}

