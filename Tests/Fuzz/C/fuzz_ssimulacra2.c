// libFuzzer harness: SSIMULACRA 2 (ssimulacra2.c) over images of fuzzed sizes, bands, depths and pixels.
#include "fuzz_libvips.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Input: 8 bytes of settings, then bytes that fill the pixels (repeated as needed):
 *   0-1  width, 1 to 96           2-3  height, 1 to 560 (tall enough for sampled rows at k = 2)
 *   4    bands 1-4 (low 2 bits), 16-bit samples (bit 2), distorted of another size (bit 3),
 *        score an encode of the remaining bytes (bit 4)
 *   5    sampling k, 1 to 8       6-7  seed mixed into the distorted image's pixels */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void) argc;
    fuzz_start_libvips((*argv)[0]);
    return 0;
}

static VipsImage *make_image(const uint8_t *bytes, size_t count, int width, int height, int bands, int wide, unsigned seed) {
    size_t sample = wide ? 2 : 1;
    size_t length = (size_t) width * height * bands * sample;
    unsigned char *pixels = malloc(length);
    if (!pixels)
        return NULL;
    for (size_t i = 0; i < length; i++)
        pixels[i] = (unsigned char) ((count ? bytes[i % count] : 0) ^ (seed ? (unsigned char) (seed * (i + 1) >> 3) : 0));
    VipsImage *image = vips_image_new_from_memory_copy(pixels, length, width, height, bands,
        wide ? VIPS_FORMAT_USHORT : VIPS_FORMAT_UCHAR);
    free(pixels);
    if (image)
        image->Type = bands < 3 ? (wide ? VIPS_INTERPRETATION_GREY16 : VIPS_INTERPRETATION_B_W)
                                : (wide ? VIPS_INTERPRETATION_RGB16 : VIPS_INTERPRETATION_sRGB);
    return image;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8)
        return 0;
    /* Narrow images: every step is per row and per column alike, and a narrow one is scored several
     * times faster, so the fuzzer tries more sizes and contents in the same time. */
    int width = 1 + (data[0] | data[1] << 8) % 96;
    int height = 1 + (data[2] | data[3] << 8) % 560;
    int bands = 1 + (data[4] & 3), wide = (data[4] >> 2) & 1, other_size = (data[4] >> 3) & 1;
    int encoded = (data[4] >> 4) & 1;
    int sampling = 1 + data[5] % 8;
    unsigned seed = (unsigned) (data[6] | data[7] << 8);
    const uint8_t *rest = data + 8;
    size_t count = size - 8;

    ipv_begin_call();
    VipsImage *reference = make_image(rest, count, width, height, bands, wide, 0);
    ipv_score_reference *ref = reference ? ipv_score_reference_new(reference, sampling) : NULL;
    if (ref) {
        if ((ipv_score_reference_is_sampled(ref) & ~1) != 0)
            abort();
        double score = NAN;
        if (encoded) {
            if (ipv_score_encoded(ref, rest, count, &score) == 0 && !(score <= 100.0))
                abort();
        } else {
            VipsImage *distorted = make_image(rest, count, other_size ? width + 1 : width, height, bands, wide, seed);
            if (distorted) {
                int status = ipv_score(ref, distorted, &score);
                /* Another size, or a reference under 8x8, must be refused; a score is at most 100. */
                if (status == 0 && (other_size || !(score <= 100.0)))
                    abort();
                /* The same pixels score 100. */
                if (status == 0 && seed == 0 && fabs(score - 100.0) > 1e-6)
                    abort();
                ipv_unref(distorted);
            }
        }
        ipv_score_reference_free(ref);
    }
    ipv_unref(reference);
    fuzz_end_call();
    return 0;
}
