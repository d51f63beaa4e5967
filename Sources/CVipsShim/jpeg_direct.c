// Plain JPEGs that need no resizing, decoded and encoded with libjpeg directly, as libvips would.
#include "CVipsShim.h"
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

/* libvips builds and runs four objects with properties per image (a header, a thumbnail, a copy to
 * memory, a save), several taking its global lock, and wakes its thread pool for each sink: for a
 * 150x100 avatar that is most of the work. When an image needs none of what libvips adds (no
 * resize, no colour management, no CMYK), the same libjpeg calls libvips makes give the same bytes
 * for a fraction of that. Anything unusual, a libjpeg warning included, returns NULL and the
 * caller goes through libvips, which then decides and words the reason. */

struct direct_errors {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void direct_error_exit(j_common_ptr cinfo) {
    longjmp(((struct direct_errors *) cinfo->err)->jump, 1);
}

static void direct_emit_message(j_common_ptr cinfo, int level) {
    /* A warning means damaged data (libvips ignores most, but fails a truncated file): not plain. */
    if (level < 0)
        longjmp(((struct direct_errors *) cinfo->err)->jump, 1);
}

static void direct_output_message(j_common_ptr cinfo) {
    (void) cinfo;
}

static void direct_errors_init(struct direct_errors *errors) {
    jpeg_std_error(&errors->pub);
    errors->pub.error_exit = direct_error_exit;
    errors->pub.emit_message = direct_emit_message;
    errors->pub.output_message = direct_output_message;
}

struct ipv_jpeg {
    struct jpeg_decompress_struct cinfo;
    struct direct_errors errors;
    int orientation;
    int progressive;
};

static unsigned read16(const unsigned char *p, int big) {
    return big ? (unsigned) (p[0] << 8 | p[1]) : (unsigned) (p[1] << 8 | p[0]);
}

static unsigned long read32(const unsigned char *p, int big) {
    return big ? (unsigned long) p[0] << 24 | (unsigned long) p[1] << 16 | (unsigned long) p[2] << 8 | p[3]
               : (unsigned long) p[3] << 24 | (unsigned long) p[2] << 16 | (unsigned long) p[1] << 8 | p[0];
}

/* The orientation in an EXIF block's first IFD, as libvips reads it (1 when absent or out of
 * range); -1 when the block is not laid out plainly enough to be sure libexif reads the same. */
static int exif_orientation(const unsigned char *data, size_t length) {
    if (length < 6 + 8 || memcmp(data, "Exif\0\0", 6) != 0)
        return -1;
    const unsigned char *tiff = data + 6;
    size_t size = length - 6;
    int big;
    if (tiff[0] == 'I' && tiff[1] == 'I')
        big = 0;
    else if (tiff[0] == 'M' && tiff[1] == 'M')
        big = 1;
    else
        return -1;
    if (read16(tiff + 2, big) != 42)
        return -1;
    unsigned long ifd = read32(tiff + 4, big);
    /* Compared without adding, so a hostile offset cannot wrap round. */
    if (ifd < 8 || ifd > size - 2)
        return -1;
    unsigned entries = read16(tiff + ifd, big);
    if (entries > (size - 2 - ifd) / 12)
        return -1;
    for (unsigned i = 0; i < entries; i++) {
        const unsigned char *entry = tiff + ifd + 2 + i * 12;
        if (read16(entry, big) != 0x0112)
            continue;
        if (read16(entry + 2, big) != 3 || read32(entry + 4, big) != 1)
            return -1;
        unsigned value = read16(entry + 8, big);
        return value >= 1 && value <= 8 ? (int) value : 1;
    }
    return 1;
}

ipv_jpeg *ipv_jpeg_open(const void *buf, size_t len) {
    if (len < 4 || len > 0x7fffffffUL)
        return NULL;
    ipv_jpeg *jpeg = calloc(1, sizeof *jpeg);
    if (!jpeg)
        return NULL;
    jpeg->cinfo.err = &jpeg->errors.pub;
    direct_errors_init(&jpeg->errors);
    if (setjmp(jpeg->errors.jump)) {
        ipv_jpeg_close(jpeg);
        return NULL;
    }
    jpeg_create_decompress(&jpeg->cinfo);
    jpeg_mem_src(&jpeg->cinfo, buf, (unsigned long) len);
    jpeg_save_markers(&jpeg->cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_save_markers(&jpeg->cinfo, JPEG_APP0 + 2, 0xffff);
    jpeg_read_header(&jpeg->cinfo, TRUE);

    struct jpeg_decompress_struct *cinfo = &jpeg->cinfo;
    int plain = cinfo->data_precision == 8 &&
        ((cinfo->jpeg_color_space == JCS_YCbCr && cinfo->num_components == 3) ||
         (cinfo->jpeg_color_space == JCS_RGB && cinfo->num_components == 3) ||
         (cinfo->jpeg_color_space == JCS_GRAYSCALE && cinfo->num_components == 1));
    int exif_blocks = 0, icc_segments = 0;
    jpeg->orientation = 1;
    for (jpeg_saved_marker_ptr marker = cinfo->marker_list; plain && marker; marker = marker->next) {
        if (marker->marker == JPEG_APP0 + 2 && marker->data_length > 14 && memcmp(marker->data, "ICC_PROFILE", 11) == 0)
            /* What libvips takes for a profile segment. It converts from any profile but sRGB's; one
             * split over several segments, or oddly labelled, is left to it. */
            plain = ++icc_segments == 1 && marker->data[11] == 0 && marker->data[12] == 1 && marker->data[13] == 1 &&
                ipv_icc_is_srgb(marker->data + 14, marker->data_length - 14);
        else if (marker->marker == JPEG_APP0 + 1 && marker->data_length >= 4 && memcmp(marker->data, "Exif", 4) == 0) {
            jpeg->orientation = exif_orientation(marker->data, marker->data_length);
            plain = jpeg->orientation > 0 && ++exif_blocks == 1;
        }
    }
    if (!plain) {
        ipv_jpeg_close(jpeg);
        return NULL;
    }
    /* Grey comes out as RGB, each sample repeated, as libvips' conversion to sRGB makes it. */
    cinfo->out_color_space = JCS_RGB;
    jpeg->progressive = jpeg_has_multiple_scans(cinfo) ? 1 : 0;
    return jpeg;
}

void ipv_jpeg_info(const ipv_jpeg *jpeg, int *width, int *height, int *orientation, int *progressive) {
    *width = (int) jpeg->cinfo.image_width;
    *height = (int) jpeg->cinfo.image_height;
    *orientation = jpeg->orientation;
    *progressive = jpeg->progressive;
}

/* Where stored pixel (x, y) of a w x h image lands when displayed upright under EXIF orientation
 * `o`, as an offset in pixels into the displayed image. */
static size_t oriented_offset(int o, size_t x, size_t y, size_t w, size_t h) {
    switch (o) {
    case 2: return y * w + (w - 1 - x);                 /* mirrored left to right */
    case 3: return (h - 1 - y) * w + (w - 1 - x);       /* half a turn */
    case 4: return (h - 1 - y) * w + x;                 /* mirrored top to bottom */
    case 5: return x * h + y;                           /* mirrored along the main diagonal */
    case 6: return x * h + (h - 1 - y);                 /* a quarter turn clockwise */
    case 7: return (w - 1 - x) * h + (h - 1 - y);       /* mirrored along the other diagonal */
    case 8: return (w - 1 - x) * h + y;                 /* a quarter turn anticlockwise */
    default: return y * w + x;
    }
}

unsigned char *ipv_jpeg_decode(ipv_jpeg *jpeg) {
    struct jpeg_decompress_struct *cinfo = &jpeg->cinfo;
    size_t w = cinfo->image_width, h = cinfo->image_height;
    if (w == 0 || h == 0 || w > SIZE_MAX / 3 / h)
        return NULL;
    unsigned char *volatile pixels = malloc(w * h * 3);
    unsigned char *volatile row = jpeg->orientation == 1 ? NULL : malloc(w * 3);
    if (!pixels || (jpeg->orientation != 1 && !row)) {
        free(pixels);
        free(row);
        return NULL;
    }
    if (setjmp(jpeg->errors.jump)) {
        free(pixels);
        free(row);
        return NULL;
    }
    jpeg_start_decompress(cinfo);
    if (cinfo->output_width != w || cinfo->output_height != h || cinfo->output_components != 3)
        longjmp(jpeg->errors.jump, 1);
    while (cinfo->output_scanline < h) {
        size_t y = cinfo->output_scanline;
        JSAMPROW target = row ? row : pixels + y * w * 3;
        jpeg_read_scanlines(cinfo, &target, 1);
        if (row)
            for (size_t x = 0; x < w; x++)
                memcpy(pixels + oriented_offset(jpeg->orientation, x, y, w, h) * 3, row + x * 3, 3);
    }
    jpeg_finish_decompress(cinfo);
    free(row);
    return pixels;
}

void ipv_jpeg_close(ipv_jpeg *jpeg) {
    if (!jpeg)
        return;
    jpeg_destroy_decompress(&jpeg->cinfo);
    free(jpeg);
}

void ipv_jpeg_free(void *p) {
    free(p);
}

int ipv_jpeg_encode(const unsigned char *rgb, int width, int height, int quality, int progressive, int full_chroma,
    void **buf, size_t *len) {
    struct jpeg_compress_struct cinfo;
    struct direct_errors errors;
    unsigned char *volatile out = NULL;
    unsigned long out_length = 0;
    cinfo.err = &errors.pub;
    direct_errors_init(&errors);
    if (setjmp(errors.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(out);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, (unsigned char **) &out, &out_length);
    cinfo.image_width = (JDIMENSION) width;
    cinfo.image_height = (JDIMENSION) height;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    /* The settings ipv_save_jpeg gives libvips' saver, applied in the order it applies them. */
    jpeg_set_defaults(&cinfo);
    cinfo.optimize_coding = TRUE;
    jpeg_set_quality(&cinfo, quality, TRUE);
    if (progressive)
        jpeg_simple_progression(&cinfo);
    if (full_chroma || quality >= 90)
        for (int i = 0; i < cinfo.num_components; i++) {
            cinfo.comp_info[i].h_samp_factor = 1;
            cinfo.comp_info[i].v_samp_factor = 1;
        }
    /* With metadata stripped libvips writes no JFIF segment either. */
    cinfo.write_JFIF_header = FALSE;
    jpeg_start_compress(&cinfo, TRUE);
    size_t stride = (size_t) width * 3;
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW line = (JSAMPROW) (rgb + cinfo.next_scanline * stride);
        jpeg_write_scanlines(&cinfo, &line, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *buf = out;
    *len = out_length;
    return 0;
}
