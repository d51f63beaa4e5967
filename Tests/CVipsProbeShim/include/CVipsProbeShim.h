// libvips calls that only tests and benchmarks make: decoding outputs back and looking at their pixels.
#ifndef CVIPSPROBESHIM_H
#define CVIPSPROBESHIM_H

#include <vips/vips.h>

/// Fully decodes an encoded image (first page), or returns NULL.
VipsImage *ipv_decode_buffer(const void *buf, size_t len);
/// Mean absolute difference of two images of equal size and bands, over all bands; -1 on error.
double ipv_mean_abs_difference(VipsImage *a, VipsImage *b);
/// The band values of one pixel, up to `capacity`; returns the number of bands, -1 on error.
int ipv_pixel(VipsImage *image, int x, int y, double *values, int capacity);
/// Whether the image carries a metadata field.
int ipv_has_field(VipsImage *image, const char *name);
/// Writes `count` lines to libvips' error buffer and takes none of them back, as calls that fail
/// or warn without anyone asking why do.
void ipv_leave_errors(int count);
/// The size libvips' thumbnail makes of a black width x height image in a box (shrinking only;
/// `crop`: cover, centred); 0 on success, -1 on error.
int ipv_thumbnail_size(int width, int height, int box_width, int box_height, int crop, int *out_width, int *out_height);
/// A black width x height JPEG in a buffer the caller frees with g_free; 0 on success.
int ipv_black_jpeg(int width, int height, void **buf, size_t *len);

#endif
