// libFuzzer harness: the direct JPEG path (jpeg_direct.c) as VipsCompressor+DirectJPEG calls it.
#include "CVipsShim.h"
#include <stdint.h>
#include <stdlib.h>

/* The compressor decodes only after checking the stored size against --max-pixels (100 megapixels
 * by default); the harness stands in for that check with a smaller bound, so a run is not spent
 * filling hundreds of megabytes that libjpeg then fails on for want of data. */
#define DECODE_LIMIT (4L << 20)
/* Re-encoding (the next step for a plain JPEG) only for small images: it reads our own pixels. */
#define ENCODE_LIMIT (64L << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ipv_jpeg *jpeg = ipv_jpeg_open(data, size);
    if (!jpeg)
        return 0;
    int width = 0, height = 0, orientation = 0, progressive = -1;
    ipv_jpeg_info(jpeg, &width, &height, &orientation, &progressive);
    /* What the caller relies on once a handle is given: a 1-8 orientation and a 0/1 flag. */
    if (orientation < 1 || orientation > 8 || (progressive != 0 && progressive != 1) || width < 0 || height < 0)
        abort();
    long area = (long) width * height;
    if (area > 0 && area <= DECODE_LIMIT) {
        unsigned char *pixels = ipv_jpeg_decode(jpeg);
        if (pixels && area <= ENCODE_LIMIT) {
            int displayed_width = orientation >= 5 ? height : width;
            int displayed_height = orientation >= 5 ? width : height;
            void *encoded = NULL;
            size_t length = 0;
            int quality = 1 + (int) (size % 100);
            if (ipv_jpeg_encode(pixels, displayed_width, displayed_height, quality, (int) (size & 1), (int) (size & 2),
                    &encoded, &length) == 0)
                ipv_jpeg_free(encoded);
        }
        ipv_jpeg_free(pixels);
    }
    ipv_jpeg_close(jpeg);
    return 0;
}
