// An iPhone HEIC's HDR gain map, read through libheif's auxiliary images: libvips 8.14 shows none of them.
#include "CVipsShim.h"
#include <libheif/heif.h>
#include <stdlib.h>
#include <string.h>

static const char apple_gain_map[] = "urn:com:apple:photo:2020:aux:hdrgainmap";

/* The first auxiliary image of the primary whose type is Apple's gain map, or NULL. */
static struct heif_image_handle *find_gain_map(const struct heif_image_handle *primary) {
    int count = heif_image_handle_get_number_of_auxiliary_images(primary, 0);
    if (count <= 0) return NULL;
    if (count > 64) count = 64;
    heif_item_id ids[64];
    count = heif_image_handle_get_list_of_auxiliary_image_IDs(primary, 0, ids, count);
    for (int i = 0; i < count; i++) {
        struct heif_image_handle *aux = NULL;
        if (heif_image_handle_get_auxiliary_image_handle(primary, ids[i], &aux).code != heif_error_Ok || !aux) continue;
        const char *type = NULL;
        int matches = heif_image_handle_get_auxiliary_type(aux, &type).code == heif_error_Ok && type && strcmp(type, apple_gain_map) == 0;
        if (type) heif_image_handle_free_auxiliary_types(aux, &type);
        if (matches) return aux;
        heif_image_handle_release(aux);
    }
    return NULL;
}

int ipv_heif_apple_gain_map(const void *buf, size_t len, int max_side, unsigned char **pixels, int *width, int *height) {
    *pixels = NULL;
    *width = *height = 0;
    struct heif_context *context = heif_context_alloc();
    if (!context) return IPV_GAIN_MAP_FAILED;
    // Sides past this are refused by libheif before it allocates for them.
    heif_context_set_maximum_image_size_limit(context, max_side);
    int status = IPV_GAIN_MAP_FAILED;
    struct heif_image_handle *primary = NULL, *aux = NULL;
    struct heif_image *image = NULL;
    if (heif_context_read_from_memory_without_copy(context, buf, len, NULL).code != heif_error_Ok) goto done;
    if (heif_context_get_primary_image_handle(context, &primary).code != heif_error_Ok) goto done;
    aux = find_gain_map(primary);
    if (!aux) {
        status = IPV_GAIN_MAP_NONE;
        goto done;
    }
    // A map larger than its picture is no map of it.
    long primary_area = (long)heif_image_handle_get_width(primary) * heif_image_handle_get_height(primary);
    long aux_area = (long)heif_image_handle_get_width(aux) * heif_image_handle_get_height(aux);
    if (aux_area <= 0 || aux_area > primary_area) goto done;
    // Decoded with the transformations its item carries, as libheif turns the primary for libvips.
    if (heif_decode_image(aux, &image, heif_colorspace_monochrome, heif_chroma_monochrome, NULL).code != heif_error_Ok) goto done;
    int w = heif_image_get_width(image, heif_channel_Y), h = heif_image_get_height(image, heif_channel_Y);
    if (w <= 0 || h <= 0 || heif_image_get_bits_per_pixel_range(image, heif_channel_Y) != 8) goto done;
    int stride = 0;
    const uint8_t *plane = heif_image_get_plane_readonly(image, heif_channel_Y, &stride);
    if (!plane || stride < w) goto done;
    unsigned char *out = malloc((size_t)w * h);
    if (!out) goto done;
    for (int y = 0; y < h; y++) memcpy(out + (size_t)y * w, plane + (size_t)y * stride, w);
    *pixels = out;
    *width = w;
    *height = h;
    status = IPV_GAIN_MAP_FOUND;
done:
    if (image) heif_image_release(image);
    if (aux) heif_image_handle_release(aux);
    if (primary) heif_image_handle_release(primary);
    heif_context_free(context);
    return status;
}

int ipv_image_from_grey(const unsigned char *pixels, int width, int height, VipsImage **out) {
    *out = vips_image_new_from_memory_copy(pixels, (size_t)width * height, width, height, 1, VIPS_FORMAT_UCHAR);
    if (!*out) return -1;
    (*out)->Type = VIPS_INTERPRETATION_B_W;
    return 0;
}
