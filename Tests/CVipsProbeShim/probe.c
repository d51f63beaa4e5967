// libvips calls that only tests and benchmarks make (see CVipsProbeShim.h).
#include "CVipsProbeShim.h"
#include "CVipsShim.h"

VipsImage *ipv_decode_buffer(const void *buf, size_t len) {
    VipsImage *image = vips_image_new_from_buffer(buf, len, "", "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
    if (image == NULL)
        return NULL;
    VipsImage *memory = vips_image_copy_memory(image);
    g_object_unref(image);
    return memory;
}

double ipv_mean_abs_difference(VipsImage *a, VipsImage *b) {
    VipsImage *diff = NULL, *magnitude = NULL;
    double mean = -1;
    if (vips_subtract(a, b, &diff, NULL) == 0 && vips_abs(diff, &magnitude, NULL) == 0)
        vips_avg(magnitude, &mean, NULL);
    if (diff) g_object_unref(diff);
    if (magnitude) g_object_unref(magnitude);
    return mean;
}

int ipv_pixel(VipsImage *image, int x, int y, double *values, int capacity) {
    double *vector = NULL;
    int n = 0;
    if (vips_getpoint(image, &vector, &n, x, y, NULL))
        return -1;
    for (int i = 0; i < n && i < capacity; i++)
        values[i] = vector[i];
    g_free(vector);
    return n;
}

int ipv_has_field(VipsImage *image, const char *name) {
    return vips_image_get_typeof(image, name) != 0;
}


void ipv_leave_errors(int count) {
    for (int i = 0; i < count; i++)
        vips_error("probe", "an error nobody took back, number %d of %d", i + 1, count);
}

/* libvips' own thumbnail of a black width x height image into a box, shrinking only, cropped at the
 * centre or not: the size it makes is the oracle for imagepipe's geometry. Nothing is computed; the
 * size is in the result's header. */
int ipv_thumbnail_size(int width, int height, int box_width, int box_height, int crop, int *out_width, int *out_height) {
    VipsImage *black = NULL, *out = NULL;
    if (vips_black(&black, width, height, "bands", 3, NULL))
        return -1;
    // Through the compressor's own entry points: they hold the lock that keeps resizes built here
    // from racing the compressor's in the same process (see shim.c).
    int status = ipv_thumbnail_image(black, box_width, box_height, crop, 0, &out);
    ipv_unref(black);
    if (status)
        return -1;
    *out_width = out->Xsize;
    *out_height = out->Ysize;
    ipv_unref(out);
    return 0;
}

/* A black width x height JPEG (quality 50), for tests that need an image of an awkward size. */
int ipv_black_jpeg(int width, int height, void **buf, size_t *len) {
    VipsImage *black = NULL;
    if (vips_black(&black, width, height, "bands", 3, NULL))
        return -1;
    int status = vips_jpegsave_buffer(black, buf, len, "Q", 50, NULL);
    g_object_unref(black);
    return status;
}
