// Animated GIF and WebP: every frame loaded as one tall image, frames turned upright, joined back with their timing, and GIF written through cgif.
#include "CVipsShim.h"
#include "private.h"

/* n=-1 loads every frame, one under the other, with page-height, delay and loop set. Random access:
 * the frames are copied to memory at once, and each variant then reads them in its own order. */
VipsImage *ipv_frames_buffer(const void *buf, size_t len) {
    ipv_mark_operation();
    return vips_image_new_from_buffer(buf, len, "", "n", -1, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
}

VipsImage *ipv_frames_descriptor(int fd) {
    ipv_mark_operation();
    VipsSource *source = ipv_source_descriptor(fd);
    if (!source) return NULL;
    VipsImage *image = vips_image_new_from_source(source, "", "n", -1, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
    g_object_unref(source);
    return image;
}

int ipv_autorot(VipsImage *in, VipsImage **out) {
    ipv_mark_operation();
    return vips_autorot(in, out, NULL);
}

/* The frames made for one output, stacked again in order. Every field but the timing comes from the
 * first frame; the timing from `timing`, the decode of every frame, since a resize need not carry
 * array fields through. */
int ipv_join_frames(VipsImage **frames, int count, VipsImage *timing, VipsImage **out) {
    ipv_mark_operation();
    if (count < 1) {
        vips_error("frames", "%s", "no frames to join");
        return -1;
    }
    if (vips_arrayjoin(frames, out, count, "across", 1, NULL))
        return -1;
    vips_image_set_int(*out, VIPS_META_PAGE_HEIGHT, frames[0]->Ysize);
    vips_image_set_int(*out, VIPS_META_N_PAGES, count);
    int *delay = NULL;
    int delays = 0;
    if (vips_image_get_typeof(timing, "delay") && vips_image_get_array_int(timing, "delay", &delay, &delays) == 0)
        vips_image_set_array_int(*out, "delay", delay, delays);
    int loop = 0;
    if (vips_image_get_typeof(timing, "loop") && vips_image_get_int(timing, "loop", &loop) == 0)
        vips_image_set_int(*out, "loop", loop);
    return 0;
}

int ipv_save_gif(VipsImage *in, void **buf, size_t *len) {
    ipv_mark_operation();
    return vips_gifsave_buffer(in, buf, len, "strip", TRUE, NULL);
}
