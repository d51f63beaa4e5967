// The libvips operations a gain map goes through beside its picture: turned, remapped, neutralised under a logo.
#include "CVipsShim.h"
#include "private.h"

int ipv_orient(VipsImage *in, int orientation, VipsImage **out) {
    VipsImage *copy = NULL;
    if (vips_copy(in, &copy, NULL)) return -1;
    vips_image_set_int(copy, VIPS_META_ORIENTATION, orientation >= 1 && orientation <= 8 ? orientation : 1);
    int status = ipv_autorot(copy, out);
    g_object_unref(copy);
    return status;
}

int ipv_maplut(VipsImage *in, const unsigned char *table, VipsImage **out) {
    VipsImage *lut = vips_image_new_from_memory_copy(table, 256, 256, 1, 1, VIPS_FORMAT_UCHAR);
    if (!lut) return -1;
    int status = vips_maplut(in, out, lut, NULL);
    g_object_unref(lut);
    return status;
}

int ipv_fill_rect(VipsImage *in, int left, int top, int width, int height, double value, VipsImage **out) {
    VipsImage *copy = vips_image_copy_memory(in);
    if (!copy) return -1;
    double ink[4] = {value, value, value, value};
    int bands = copy->Bands < 4 ? copy->Bands : 4;
    if (vips_draw_rect(copy, ink, bands, left, top, width, height, "fill", TRUE, NULL)) {
        g_object_unref(copy);
        return -1;
    }
    *out = copy;
    return 0;
}
