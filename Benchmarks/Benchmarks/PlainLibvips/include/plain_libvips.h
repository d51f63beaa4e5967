// The same libvips work a benchmark's workload asks of imagepipe's compressor, done plainly: the
// reference each benchmark's CPU time is divided by (docs/performance.md, "The benchmark suite").
#pragma once
#include <stddef.h>

typedef enum { PLAIN_JPEG = 0, PLAIN_WEBP = 1, PLAIN_AVIF = 2, PLAIN_PNG = 3 } PlainFormat;

/// One variant as the workload's spec gives it, its encoder settings resolved as imagepipe resolves
/// them (effort, progressive from the output's size, PNG's compression level).
typedef struct {
    int width, height, cover;
    PlainFormat format;
    int quality, effort, png_compression;
    /// JPEG: interlaced when the output's longer side is at least this many pixels; 0 never.
    int progressive_from_side;
} PlainVariant;

/// Starts libvips once, with `threads` threads per image (as the suite configures imagepipe's).
int plain_libvips_start(int threads);

/// Makes every variant of the encoded image in `data`: one shrink-on-load decode at the largest
/// size any variant needs (or one per variant with `decode_per_variant`), each variant resized from
/// it and saved to memory, metadata stripped. Returns the outputs' total size, or -1 with libvips'
/// error printed to standard error.
long plain_libvips_job(const void *data, size_t length, const PlainVariant *variants, int count, int decode_per_variant);

/// Hands freed memory back, as imagepipe's compressor does between images (malloc_trim).
void plain_libvips_release(void);
