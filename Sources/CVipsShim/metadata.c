// The metadata an output is saved with when its variant keeps some: exactly the blocks imagepipe chose, nothing libvips parsed.
#include "CVipsShim.h"
#include "private.h"
#include <string.h>

/* libvips 8.14's savers rebuild the EXIF block from "exif-data" and then write every "exif-ifd*"
 * field the loader parsed back into it: a tag dropped from the block would come back from its
 * field. So every field a loader sets from the source's metadata goes, and only the blocks given
 * here are set. */
static int is_source_metadata(const char *name) {
    return g_str_has_prefix(name, "exif-") || g_str_has_prefix(name, "xmp-") || g_str_has_prefix(name, "iptc-") ||
        g_str_has_prefix(name, "icc-") || g_str_has_prefix(name, "gif-comment") || g_str_has_prefix(name, "png-comment-") ||
        strcmp(name, "jpeg-thumbnail-data") == 0 || strcmp(name, VIPS_META_ORIENTATION) == 0;
}

static void set_blob(VipsImage *image, const char *name, const void *data, size_t len) {
    if (data == NULL || len == 0)
        return;
    vips_image_set_blob_copy(image, name, data, len);
}

int ipv_set_metadata(VipsImage *in, const void *exif, size_t exif_len, const void *icc, size_t icc_len, const void *xmp,
    size_t xmp_len, const void *iptc, size_t iptc_len, VipsImage **out) {
    ipv_mark_operation();
    if (vips_copy(in, out, NULL))
        return -1;
    gchar **fields = vips_image_get_fields(*out);
    for (int i = 0; fields[i] != NULL; i++)
        if (is_source_metadata(fields[i]))
            vips_image_remove(*out, fields[i]);
    g_strfreev(fields);
    set_blob(*out, VIPS_META_EXIF_NAME, exif, exif_len);
    set_blob(*out, VIPS_META_ICC_NAME, icc, icc_len);
    set_blob(*out, VIPS_META_XMP_NAME, xmp, xmp_len);
    set_blob(*out, VIPS_META_IPTC_NAME, iptc, iptc_len);
    return 0;
}

const void *ipv_get_blob(VipsImage *image, const char *name, size_t *len) {
    const void *data = NULL;
    *len = 0;
    // Asking for an absent field would leave a message in libvips' shared error buffer.
    if (vips_image_get_typeof(image, name) != VIPS_TYPE_BLOB || vips_image_get_blob(image, name, &data, len))
        return NULL;
    return data;
}
