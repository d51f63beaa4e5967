// libFuzzer harness: an embedded ICC profile as a JPEG or PNG carries it, read by ipv_icc_is_srgb.
#include "CVipsShim.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The profile is copied into a buffer of exactly its size, so AddressSanitizer sees any read past
 * its end (libFuzzer's own buffer is exact too, but a copy keeps that true if the harness changes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *profile = malloc(size ? size : 1);
    if (!profile)
        return 0;
    memcpy(profile, data, size);
    int srgb = ipv_icc_is_srgb(profile, size);
    if (srgb != 0 && srgb != 1)
        abort();
    free(profile);
    return 0;
}
