// Non-variadic entry points into libvips for Swift, which cannot call C variadic functions.
#ifndef CVIPSSHIM_H
#define CVIPSSHIM_H

#include <stddef.h>
#include <vips/vips.h>

/// Starts libvips once per process, with the one loader module imagepipe reads with (HEIC/AVIF);
/// returns 0 on success.
int ipv_init(const char *argv0);

/// Why a loader module imagepipe uses is there but did not load (empty when none failed).
const char *ipv_module_failure(void);

/// Initialises the class of every libvips operation (GLib does it on first use): in the zygote, so
/// that no helper forked from it does it again. Starts no thread.
void ipv_warm_classes(void);

/// The file of the `index`th shared object mapped in this process (from 0, in load order), or NULL
/// past the last: what `imagepipe version --verbose` reports of the image libraries actually linked.
const char *ipv_loaded_library(size_t index);

/// Sets the libvips worker threads per image, turns the operation cache off and blocks untrusted loaders.
void ipv_configure(int concurrency);

/// Opens an image lazily (header only, no pixels decoded) from memory or from an open file, read
/// through its descriptor: an image helper in its sandbox can open no path, not even /proc/self/fd.
/// Its loader fails on truncated data, and with `refuse_warnings` non-zero on any warning too, when
/// the pixels are decoded: a decode that succeeds so has proved the file undamaged.
VipsImage *ipv_header_buffer(const void *buf, size_t len, int refuse_warnings);
VipsImage *ipv_header_descriptor(int fd, int refuse_warnings);

/// Whether the header carries an orientation that swaps width and height.
int ipv_orientation_swaps(VipsImage *image);

/// A string field of the header (e.g. "heif-compression"), or NULL when absent or not a string.
const char *ipv_get_string(VipsImage *image, const char *name);

/// An integer field of the header (e.g. "jpeg-multiscan"), or `fallback` when absent or not an integer.
int ipv_get_int(VipsImage *image, const char *name, int fallback);

/// Drops the attached ICC profile once pixels are already sRGB, so later resizes skip colour management.
void ipv_forget_profile(VipsImage *image);

/// Whether an ICC profile describes sRGB (its primaries and tone curve, no lookup tables), so that
/// converting from it would change nothing but rounding.
int ipv_icc_is_srgb(const void *icc, size_t len);

/// Whether an image's embedded ICC profile must be converted from by the thumbnail (`to_srgb`):
/// RGB images that carry an RGB profile other than sRGB. CMYK is converted through its profile in any case.
int ipv_profile_needs_conversion(VipsImage *header);

/// Shrink-on-load thumbnail: auto-orients, never enlarges, fails on truncated data, converts from
/// the embedded profile to sRGB when `to_srgb` is non-zero (see ipv_profile_needs_conversion).
/// `crop` non-zero crops around the centre to width x height; `refuse_warnings` as for ipv_header_buffer.
int ipv_thumbnail_buffer(const void *buf, size_t len, int width, int height, int crop, int to_srgb, int refuse_warnings, VipsImage **out);
int ipv_thumbnail_descriptor(int fd, int width, int height, int crop, int to_srgb, int refuse_warnings, VipsImage **out);
/// The same from an image already decoded into memory.
int ipv_thumbnail_image(VipsImage *in, int width, int height, int crop, int to_srgb, VipsImage **out);
/// Resizes `in` to exactly width x height (libvips' thumbnail with size=force): a variant made from a
/// shared decode comes out at the size it would have alone, the aspect off by under a pixel at most.
int ipv_resize_exact(VipsImage *in, int width, int height, VipsImage **out);
/// Crops `in` (already covering the box) to width x height where libvips' smartcrop finds the most
/// interesting part: `attention` non-zero for VIPS_INTERESTING_ATTENTION, else ENTROPY. Evaluates `in`.
int ipv_smartcrop(VipsImage *in, int width, int height, int attention, VipsImage **out);
/// The area of `in` at left, top of width x height.
int ipv_extract_area(VipsImage *in, int left, int top, int width, int height, VipsImage **out);

/// A watermark's logo made ready once: 8-bit sRGB with alpha (opaque when it had none), decoded
/// into memory, so any compression thread can read it.
int ipv_watermark_prepare(VipsImage *in, VipsImage **out);
/// `in` with `logo` (as made by ipv_watermark_prepare, already at its size) blended over it at
/// left, top, its alpha multiplied by `opacity`; the logo must lie within `in`. Only the logo's area
/// is blended; every other pixel is `in`'s own, and `in`'s bands are kept.
int ipv_watermark(VipsImage *in, VipsImage *logo, int left, int top, double opacity, VipsImage **out);
/// Converts any interpretation and depth (grey, 16-bit, CMYK, LAB) to 8-bit sRGB, keeping alpha.
int ipv_to_srgb8(VipsImage *in, VipsImage **out);

/// A copy without EXIF, XMP, IPTC, ICC and orientation metadata (pixels shared, not copied).
int ipv_strip_metadata(VipsImage *in, VipsImage **out);

/// Flattens alpha onto white.
int ipv_flatten_white(VipsImage *in, VipsImage **out);

/// A copy of `in` (pixels shared) whose only metadata is what is given, each a copy: an EXIF block
/// (as ExifBlock writes it: `Exif\0\0` and a TIFF structure), an ICC profile, an XMP packet and an
/// IPTC block, each NULL (or of length 0) for none. Every field libvips parsed from the source
/// (`exif-ifd*`, which its savers write back into the EXIF block, `orientation`, the EXIF
/// thumbnail, PNG text chunks, …) is removed first, so a saver called with `keep_metadata` writes
/// these and nothing else.
int ipv_set_metadata(VipsImage *in, const void *exif, size_t exif_len, const void *icc, size_t icc_len, const void *xmp,
    size_t xmp_len, const void *iptc, size_t iptc_len, VipsImage **out);

/// The metadata blob `name` of `image` (e.g. "exif-data", "icc-profile-data"), or NULL when absent;
/// the bytes belong to the image.
const void *ipv_get_blob(VipsImage *image, const char *name, size_t *len);

/// Encoders, output in a g_malloc'd buffer the caller frees with g_free. With `keep_metadata` 0
/// the metadata is stripped; otherwise the image's EXIF, XMP, IPTC (JPEG) and ICC fields are
/// written, as ipv_set_metadata left them. `full_chroma` turns chroma subsampling off (4:4:4);
/// JPEG is always written with optimised Huffman tables.
int ipv_save_jpeg(VipsImage *in, int quality, int progressive, int full_chroma, int keep_metadata, void **buf, size_t *len);
int ipv_save_webp(VipsImage *in, int quality, int effort, int smart_subsample, int lossless, int keep_metadata, void **buf,
    size_t *len);
int ipv_save_avif(VipsImage *in, int quality, int effort, int full_chroma, int keep_metadata, void **buf, size_t *len);
int ipv_save_png(VipsImage *in, int compression, int keep_metadata, void **buf, size_t *len);
/// JPEG XL through libjxl: a bare codestream (libvips 8.14 writes no container, so no EXIF or XMP).
int ipv_save_jxl(VipsImage *in, int quality, int effort, int lossless, int keep_metadata, void **buf, size_t *len);

/// The output formats, numbered as `OutputFormat`'s table gives them (`FormatTraits.encoder`).
typedef enum {
    IPV_FORMAT_JPEG = 0,
    IPV_FORMAT_WEBP = 1,
    IPV_FORMAT_AVIF = 2,
    IPV_FORMAT_PNG = 3,
    IPV_FORMAT_GIF = 4,
    IPV_FORMAT_JXL = 5,
} IpvFormat;

/// A variant's encoder settings; each saver takes the ones its format has.
typedef struct {
    int quality;
    int effort;
    int progressive;
    int full_chroma;
    int smart_subsample;
    int lossless;
    int png_compression;
    int keep_metadata;
} IpvEncoding;

/// Encodes `in` as `format` with `encoding`: the one call per format the compressor makes.
int ipv_save(VipsImage *in, IpvFormat format, const IpvEncoding *encoding, void **buf, size_t *len);

/// Every frame of an animated GIF or WebP (n=-1), one under the other, with page-height, delay (ms per
/// frame) and loop set; opened lazily, failing on truncated data.
VipsImage *ipv_frames_buffer(const void *buf, size_t len);
VipsImage *ipv_frames_descriptor(int fd);
/// `in` turned upright by its EXIF orientation, which is then removed (a copy when it is upright).
int ipv_autorot(VipsImage *in, VipsImage **out);
/// `count` frames of one size stacked in order as an animation: page-height set to their height,
/// delay and loop taken from `timing` (the decode they were made from).
int ipv_join_frames(VipsImage **frames, int count, VipsImage *timing, VipsImage **out);
/// GIF through libvips' cgif saver: every frame when `in` has a page-height, metadata stripped.
int ipv_save_gif(VipsImage *in, void **buf, size_t *len);

/// Forgets the warnings libvips raised on this thread so far and marks where the error text of its
/// next operation starts; called as each image starts. Every wrapper here that runs a libvips
/// operation marks that start again.
void ipv_begin_call(void);

/// Takes and clears the warnings libvips raised on this thread since ipv_begin_call (where loaders
/// such as libpng put their reason), followed by the error text libvips wrote since this thread's
/// last operation started; the caller frees it with g_free. NULL when both are empty.
char *ipv_take_error(void);

/// vips_image_copy_memory, marking where this operation's error text starts (see ipv_take_error).
VipsImage *ipv_copy_memory(VipsImage *in);

/// Frees what libvips allocated.
void ipv_free(void *p);
void ipv_unref(VipsImage *image);

/// Tunes glibc's malloc for libvips' large, short-lived pixel buffers (no-op elsewhere): at most
/// `arenas` arenas, a fixed mmap threshold and a fixed trim threshold (each 0: unchanged), so that
/// the largest freed buffers go back to the system and the heap keeps only a bounded reserve.
/// Returns 1 when every setting was applied.
int ipv_tune_malloc(int arenas, int mmap_threshold, int trim_threshold);

/// Releases libvips' per-thread buffers on a thread libvips did not create.
void ipv_thread_done(void);

/// Hands the heap's free pages back to the system (glibc's malloc_trim; no-op elsewhere).
void ipv_release_memory(void);

/// Whether the encoded image in `buf` decodes whole without a single warning from its loader (a
/// damaged JPEG's "premature end of data segment" is one): 1 or 0. A full decode.
int ipv_decodes_cleanly(const void *buf, size_t len);

/// Sends libvips' warnings (which would go to stderr) to `handler` instead; NULL drops them.
void ipv_set_warning_handler(void (*handler)(const char *message));

/// SSIMULACRA 2 (see ssimulacra2.c): a reference image's scales and moments, computed once.
typedef struct ipv_score_reference ipv_score_reference;

/// Prepares `reference` (8-bit sRGB, 1–4 bands; alpha is flattened onto white); NULL on failure.
/// `sampling` 1 scores every pixel; k > 1 scores bands of 1/k of the rows at full size and 2/k at half
/// size (the scales that hold 15/16 of the pixels), every pixel of the smaller scales, when the image
/// has at least 8·32·k rows.
ipv_score_reference *ipv_score_reference_new(VipsImage *reference, int sampling);

/// Scores `distorted` (same size and kind as the reference) into `score`: 100 for identical images,
/// about 90 visually lossless, 70 high quality, 50 medium. Returns 0 on success.
/// Uses scratch buffers held in `ref`: one score at a time per reference.
int ipv_score(ipv_score_reference *ref, VipsImage *distorted, double *score);

/// Scores an encode given as its bytes (JPEG, WebP, AVIF, PNG) like ipv_score(); an 8-bit RGB encode
/// of the reference's size is decoded straight into a buffer the reference keeps for the next one.
int ipv_score_encoded(ipv_score_reference *ref, const void *buf, size_t len, double *score);

/// Whether scores against `ref` are estimated from sampled rows (1) or use every pixel (0).
int ipv_score_reference_is_sampled(const ipv_score_reference *ref);

void ipv_score_reference_free(ipv_score_reference *ref);

/// Plain JPEGs decoded and encoded with libjpeg directly, without libvips' per-image machinery.
/// `ipv_jpeg_open` reads the header of a JPEG held in memory (which must outlive the handle) and
/// returns NULL unless it is 8-bit YCbCr, RGB or grey with no ICC profile but sRGB's, a plainly laid out
/// EXIF orientation, and libjpeg raised nothing; the caller then goes through libvips.
typedef struct ipv_jpeg ipv_jpeg;
ipv_jpeg *ipv_jpeg_open(const void *buf, size_t len);
/// The stored size, the EXIF orientation (1–8) and whether the file is progressive.
void ipv_jpeg_info(const ipv_jpeg *jpeg, int *width, int *height, int *orientation, int *progressive);
/// The pixels as displayed (oriented), 3 bytes of RGB each, freed with `ipv_jpeg_free`; NULL if
/// libjpeg raised an error or a warning. Call once per handle.
unsigned char *ipv_jpeg_decode(ipv_jpeg *jpeg);
void ipv_jpeg_close(ipv_jpeg *jpeg);
/// Encodes RGB as `ipv_save_jpeg` has libvips do it, byte for byte; the buffer is freed with `ipv_jpeg_free`.
int ipv_jpeg_encode(const unsigned char *rgb, int width, int height, int quality, int progressive, int full_chroma,
    void **buf, size_t *len);
void ipv_jpeg_free(void *p);

/// An iPhone HEIC's HDR gain map (the primary's auxiliary image of type
/// urn:com:apple:photo:2020:aux:hdrgainmap), decoded by libheif with its own transformations into
/// `pixels` (8-bit grey, `width` bytes a row, freed with free()). The file is read from memory;
/// a side over `max_side` is refused, and a map of more pixels than its primary.
typedef enum {
    IPV_GAIN_MAP_FOUND = 0,
    IPV_GAIN_MAP_NONE = 1,
    IPV_GAIN_MAP_FAILED = 2,
} IpvGainMapStatus;
int ipv_heif_apple_gain_map(const void *buf, size_t len, int max_side, unsigned char **pixels, int *width, int *height);
/// The transfer characteristics (nclx, ITU-T H.273) of the HDR pictures ipv_tone_map_hdr reads.
typedef enum {
    IPV_TRANSFER_PQ = 16,
    IPV_TRANSFER_HLG = 18,
} IpvTransfer;
/// `in` (8- or 16-bit, 1 to 4 bands, its codes `bits` deep in the top bits as libvips keeps them)
/// decoded from PQ or HLG (`transfer`) and `primaries` (nclx: 1 BT.709, 12 Display P3, else
/// BT.2020) to display light (HLG shown on a 1,000 cd/m2 display), as 8-bit sRGB in memory whose
/// white is `white` cd/m2: light up to half of it unchanged, the rest rolled off (on each pixel's
/// brightest channel, so hues stay) until the picture's brightest channel (`peak`, cd/m2) is white.
int ipv_tone_map_hdr(VipsImage *in, int transfer, int primaries, int bits, double white, double *peak, VipsImage **out);
/// A one-band 8-bit image copied from `pixels` (width bytes a row).
int ipv_image_from_grey(const unsigned char *pixels, int width, int height, VipsImage **out);
/// `in` turned upright as EXIF `orientation` (1-8) says, whatever its own metadata says.
int ipv_orient(VipsImage *in, int orientation, VipsImage **out);
/// Each 8-bit value of `in` through `table` (256 entries).
int ipv_maplut(VipsImage *in, const unsigned char *table, VipsImage **out);
/// A copy of `in` in memory with the rectangle at left, top of width x height set to `value` in every band.
int ipv_fill_rect(VipsImage *in, int left, int top, int width, int height, double value, VipsImage **out);

#endif
