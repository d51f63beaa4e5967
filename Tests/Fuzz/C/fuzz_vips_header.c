// libFuzzer harness: shim.c's byte-reading wrappers, in the order VipsCompressor calls them on a source.
#include "fuzz_libvips.h"
#include <stdint.h>

/* VipsCompressor refuses more than --max-pixels (100 megapixels by default) from the header before
 * decoding; the harness decodes up to a smaller bound so that each run stays short. */
#define DECODE_LIMIT (1L << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void) argc;
    fuzz_start_libvips((*argv)[0]);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ipv_begin_call();
    // Both loader modes the compressor uses: failing on truncated data only, and on any warning too.
    int refuse_warnings = (int) ((size >> 1) & 1);
    VipsImage *header = ipv_header_buffer(data, size, refuse_warnings);
    if (header) {
        (void) ipv_get_string(header, "vips-loader");
        (void) ipv_get_string(header, "heif-compression");
        (void) ipv_get_int(header, "jpeg-multiscan", 0);
        (void) ipv_orientation_swaps(header);
        int to_srgb = ipv_profile_needs_conversion(header);
        long area = (long) vips_image_get_width(header) * vips_image_get_height(header);
        if (area > 0 && area <= DECODE_LIMIT) {
            VipsImage *thumbnail = NULL, *srgb = NULL, *stripped = NULL;
            int side = 16 + (int) (size % 48);
            if (ipv_thumbnail_buffer(data, size, side, side, (int) (size & 1), to_srgb, refuse_warnings, &thumbnail) == 0 &&
                ipv_to_srgb8(thumbnail, &srgb) == 0 && ipv_strip_metadata(srgb, &stripped) == 0) {
                VipsImage *memory = ipv_copy_memory(stripped);
                ipv_unref(memory);
            }
            ipv_unref(stripped);
            ipv_unref(srgb);
            ipv_unref(thumbnail);
        }
        ipv_unref(header);
    }
    fuzz_end_call();
    return 0;
}
