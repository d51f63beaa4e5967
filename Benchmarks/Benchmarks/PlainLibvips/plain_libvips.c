// The plain reference: libvips' own calls for a workload, with nothing of imagepipe's around them
// (no direct JPEG path, no HDR or gain-map checks, no placeholder, no output checks).
#include "plain_libvips.h"
#include <malloc.h>
#include <stdio.h>
#include <vips/vips.h>

int plain_libvips_start(int threads) {
    if (VIPS_INIT("imagepipe-benchmarks"))
        return -1;
    vips_concurrency_set(threads);
    /* As imagepipe runs libvips: no operation cache, so that no iteration reuses another's work. */
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_cache_set_max_files(0);
    return 0;
}

/* The size a variant gives a w x h image, never enlarged: inside its box, or filling it (cover). */
static void fitted(const PlainVariant *variant, int w, int h, int *out_w, int *out_h) {
    double sx = (double) variant->width / w, sy = (double) variant->height / h;
    double scale = variant->cover ? (sx > sy ? sx : sy) : (sx < sy ? sx : sy);
    if (scale > 1)
        scale = 1;
    *out_w = VIPS_MAX((int) (w * scale + 0.5), 1);
    *out_h = VIPS_MAX((int) (h * scale + 0.5), 1);
}

static int save(VipsImage *image, const PlainVariant *variant, void **buf, size_t *len) {
    switch (variant->format) {
    case PLAIN_JPEG: {
        VipsImage *flat = NULL;
        if (vips_image_hasalpha(image)) {
            VipsArrayDouble *white = vips_array_double_newv(3, 255.0, 255.0, 255.0);
            int failed = vips_flatten(image, &flat, "background", white, NULL);
            vips_area_unref(VIPS_AREA(white));
            if (failed)
                return -1;
            image = flat;
        }
        int side = VIPS_MAX(image->Xsize, image->Ysize);
        int result = vips_jpegsave_buffer(image, buf, len, "Q", variant->quality, "strip", TRUE, "optimize_coding", TRUE,
            "interlace", variant->progressive_from_side > 0 && side >= variant->progressive_from_side, NULL);
        if (flat)
            g_object_unref(flat);
        return result;
    }
    case PLAIN_WEBP:
        return vips_webpsave_buffer(image, buf, len, "Q", variant->quality, "effort", variant->effort, "strip", TRUE, NULL);
    case PLAIN_AVIF:
        return vips_heifsave_buffer(image, buf, len, "Q", variant->quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1,
            "effort", variant->effort, "bitdepth", 8, "strip", TRUE, NULL);
    case PLAIN_PNG:
        return vips_pngsave_buffer(image, buf, len, "compression", variant->png_compression, "strip", TRUE, NULL);
    }
    return -1;
}

/* Resizes `image` (already decoded, or the source itself when `data` is set) to the variant and saves it. */
static long variant_bytes(VipsImage *image, const void *data, size_t length, const PlainVariant *variant) {
    VipsImage *sized = NULL;
    VipsInteresting crop = variant->cover ? VIPS_INTERESTING_CENTRE : VIPS_INTERESTING_NONE;
    int failed = data
        ? vips_thumbnail_buffer((void *) data, length, &sized, variant->width, "height", variant->height, "size", VIPS_SIZE_DOWN,
              "crop", crop, NULL)
        : vips_thumbnail_image(image, &sized, variant->width, "height", variant->height, "size", VIPS_SIZE_DOWN, "crop", crop, NULL);
    if (failed)
        return -1;
    void *buf = NULL;
    size_t len = 0;
    failed = save(sized, variant, &buf, &len);
    g_object_unref(sized);
    g_free(buf);
    return failed ? -1 : (long) len;
}

long plain_libvips_job(const void *data, size_t length, const PlainVariant *variants, int count, int decode_per_variant) {
    long total = 0;
    if (decode_per_variant) {
        for (int i = 0; i < count; i++) {
            long bytes = variant_bytes(NULL, data, length, &variants[i]);
            if (bytes < 0)
                goto failed;
            total += bytes;
        }
        return total;
    }
    VipsImage *header = vips_image_new_from_buffer(data, length, "", NULL);
    if (!header)
        goto failed;
    int w = header->Xsize, h = header->Ysize;
    if (vips_image_get_orientation_swap(header)) {
        int t = w;
        w = h;
        h = t;
    }
    g_object_unref(header);
    int largest_w = 1, largest_h = 1;
    for (int i = 0; i < count; i++) {
        int vw, vh;
        fitted(&variants[i], w, h, &vw, &vh);
        largest_w = VIPS_MAX(vw, largest_w);
        largest_h = VIPS_MAX(vh, largest_h);
    }
    VipsImage *lazy = NULL;
    if (vips_thumbnail_buffer((void *) data, length, &lazy, largest_w, "height", largest_h, "size", VIPS_SIZE_DOWN, NULL))
        goto failed;
    VipsImage *decoded = vips_image_copy_memory(lazy);
    g_object_unref(lazy);
    if (!decoded)
        goto failed;
    /* Already sRGB: without its profile, thumbnail_image does not convert it again. */
    vips_image_remove(decoded, VIPS_META_ICC_NAME);
    for (int i = 0; i < count; i++) {
        long bytes = variant_bytes(decoded, NULL, 0, &variants[i]);
        if (bytes < 0) {
            g_object_unref(decoded);
            goto failed;
        }
        total += bytes;
    }
    g_object_unref(decoded);
    return total;
failed:
    fprintf(stderr, "plain libvips: %s\n", vips_error_buffer());
    vips_error_clear();
    return -1;
}

void plain_libvips_release(void) {
    /* What imagepipe's compressor does between images: the freed heap's holes handed back. */
    malloc_trim(0);
}
