// SSIMULACRA 2 in plain C loops: linear light, XYB, six box-downscaled scales, blurred moments.
//
// Follows libjxl's tools/ssimulacra2.cc and the `ssimulacra2` reference package (PyPI) step by step:
// sRGB to linear RGB, opsin XYB made positive, at each of up to six scales a Gaussian blur (sigma 1.5,
// radius 5, zero rows above and below, mirrored columns) of each image, its square and their product,
// then per channel the 1-SSIM map and the edge maps' L1 and L4 norms, weighted into one score.
// The reference's scales and moments are computed once, so scoring several encodes of one image
// only pays for the distorted side.
//
// libvips only decodes and flattens; the metric itself is loops over float planes. The same steps
// as libvips operations (convsep, recomb, pow, bandjoin) took 0.65-0.97 s per 2048 px encode and
// 0.45-0.53 s for the reference on one thread; these loops take 0.11-0.16 s and 0.14-0.23 s for the
// same scores (within 0.04 points), and 0.04-0.06 s per encode with sampled rows (see plan_rows).
#include "CVipsShim.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define SCALES 6
// The shortest side an image needs for six scales, under which it is never sampled.
#define SAMPLED_MIN_SIDE 256
#define RADIUS 5
// Sampled scales are scored on bands of this many rows, each read with RADIUS rows of context.
#define BAND 32

struct ipv_score_reference {
    int scales;
    int width[SCALES], height[SCALES];
    int rows[SCALES];           // rows held: the height, or the sampled bands with their context
    int *source[SCALES];        // per held row its row in the scale's image; NULL when every row is held
    unsigned char *counted[SCALES]; // per held row whether it is summed (1) or only context (0)
    float *xyb[SCALES];         // the reference in positive XYB: 3 planes of width*rows
    float *moments[SCALES];     // its blurred xyb and xyb²: 6 planes
    // Scratch for scoring, allocated once and reused by every encode scored: imagepipe has malloc map
    // every buffer of 1 MiB or more, so fresh ones would be mapped and faulted in anew each time.
    float *scratch_held;        // the largest scale's held rows in linear light (3 planes' worth)
    float *scratch_xyb;         // the encode's XYB at one scale
    float *scratch_blurred;     // its blurred xyb, xyb² and reference·encode for one channel
    float *scratch_half;        // the encode's half size in linear light
    unsigned char *scratch_rgb; // an encode decoded by ipv_score_encoded(), allocated on first use
};

static const double weights[108] = {
    0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0, 0.0, 0.0004371155730107379, 0.0,
    1.1041726426657346, 0.00066284834129271, 0.00015231632783718752, 0.0, 0.0016406437456599754, 0.0,
    1.8422455520539298, 11.441172603757666, 0.0, 0.0007989109436015163, 0.000176816438078653, 0.0,
    1.8787594979546387, 10.94906990605142, 0.0, 0.0007289346991508072, 0.9677937080626833, 0.0,
    0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053, 0.0004550992113792063, 0.0, 0.0,
    0.0013648766163243398, 0.0, 0.0, 0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
    0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
    225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
    176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408, 0.0, 0.0,
    0.0, 34.77906344483772, 44.835625328877896, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0008680556573291698,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0004179171803251336, 0.0017290828234722833, 0.0, 0.0020827005846636437, 0.0, 0.0, 8.826982764996862,
    23.19243343998926, 0.0, 95.1080498811086, 0.9863978034400682, 0.9834382792465353, 0.0012286405048278493,
    171.2667255897307, 0.9807858872435379, 0.0, 0.0, 0.0, 0.0005130064588990679, 0.0, 0.00010854057858411537,
};


/// Float planes of 2 MiB or more are allocated 2 MiB-aligned and marked for transparent huge pages.
/// imagepipe has malloc map every buffer of 1 MiB or more afresh, so each reference's planes, and
/// each score's smaller scales, were faulted in 4 KiB at a time: on the bench corpus page faults
/// and unmapping were half of a reference's preparation time. With huge pages they are a few
/// faults per plane. Freed with free().
static void *planes_alloc(size_t bytes) {
    enum { HUGE_PAGE = 2 << 20 };
    if (bytes < HUGE_PAGE)
        return malloc(bytes);
    size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, rounded) != 0)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE); // advice only: without huge pages the planes still work
#endif
    return p;
}

/// 8-bit sRGB (alpha flattened onto white, as a JPEG output would be, grey made RGB) as interleaved
/// 8-bit RGB: the image's own memory when it already is that, else a copy put in `owned` for the
/// caller to g_free. NULL on failure.
static const unsigned char *to_rgb8(VipsImage *in, int *width, int *height, unsigned char **owned) {
    *owned = NULL;
    if (in->Bands == 3 && in->BandFmt == VIPS_FORMAT_UCHAR && vips_image_wio_input(in) == 0) {
        *width = in->Xsize;
        *height = in->Ysize;
        return (const unsigned char *) VIPS_IMAGE_ADDR(in, 0, 0);
    }
    VipsImage *context = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(context), 4);
    unsigned char *pixels = NULL;
    VipsImage *rgb = in;
    if (in->Bands == 2 || in->Bands == 4) {
        if (ipv_flatten_white(in, &t[0]) || vips_cast(t[0], &t[1], VIPS_FORMAT_UCHAR, NULL))
            goto done;
        rgb = t[1];
    }
    if (rgb->Bands < 3) {
        VipsImage *grey[3] = { rgb, rgb, rgb };
        if (vips_bandjoin(grey, &t[2], 3, NULL))
            goto done;
        rgb = t[2];
    } else if (rgb->Bands > 3) {
        if (vips_extract_band(rgb, &t[2], 0, "n", 3, NULL))
            goto done;
        rgb = t[2];
    }
    if (rgb->BandFmt != VIPS_FORMAT_UCHAR) {
        if (vips_cast(rgb, &t[3], VIPS_FORMAT_UCHAR, NULL))
            goto done;
        rgb = t[3];
    }
    size_t size = 0;
    pixels = vips_image_write_to_memory(rgb, &size);
    if (pixels) {
        *width = rgb->Xsize;
        *height = rgb->Ysize;
    }
done:
    g_object_unref(context);
    *owned = pixels;
    return pixels;
}

/// Halves interleaved linear RGB by 2x2 box means, the last row and column repeated when a side is odd.
static float *downsample(const float *in, int width, int height, int *out_width, int *out_height) {
    int w = (width + 1) / 2, h = (height + 1) / 2;
    float *out = planes_alloc((size_t) w * h * 3 * sizeof(float));
    if (!out) {
        vips_error("ssimulacra2", "%s", "out of memory");
        return NULL;
    }
    for (int y = 0; y < h; y++) {
        const float *r0 = in + (size_t) (2 * y) * width * 3;
        const float *r1 = in + (size_t) (2 * y + 1 < height ? 2 * y + 1 : height - 1) * width * 3;
        float *o = out + (size_t) y * w * 3;
        for (int x = 0; x < w; x++) {
            int x0 = 2 * x * 3, x1 = (2 * x + 1 < width ? 2 * x + 1 : width - 1) * 3;
            for (int c = 0; c < 3; c++)
                o[x * 3 + c] = (r0[x0 + c] + r0[x1 + c] + r1[x0 + c] + r1[x1 + c]) * 0.25f;
        }
    }
    *out_width = w;
    *out_height = h;
    return out;
}

/// One image's linear light scale by scale. The full size stays 8-bit and is converted only in the
/// rows scored, its half size made straight from the bytes: with sampled rows no full-size float
/// plane is ever written.
typedef struct {
    const unsigned char *rgb; // the full size, 8-bit, until the half size is made
    unsigned char *rgb_owned; // rgb when it is a copy of ours
    float *linear;            // the current scale from half size on, interleaved linear RGB
    float *half;              // a buffer for the half size that is not ours to free, or NULL
    int width, height, scale;
    float table[256];         // 8-bit sRGB to linear
} Scales;

/// Starts from interleaved 8-bit RGB that stays the caller's.
static void scales_open_rgb(Scales *s, const unsigned char *rgb, int width, int height, float *half) {
    memset(s, 0, sizeof *s);
    s->rgb = rgb;
    s->width = width;
    s->height = height;
    s->half = half;
    for (int i = 0; i < 256; i++) {
        double v = i / 255.0;
        s->table[i] = (float) (v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4));
    }
}

static int scales_open(Scales *s, VipsImage *in, float *half) {
    int width = 0, height = 0;
    unsigned char *owned = NULL;
    const unsigned char *rgb = to_rgb8(in, &width, &height, &owned);
    scales_open_rgb(s, rgb, width, height, half);
    s->rgb_owned = owned;
    return rgb ? 0 : -1;
}

static void scales_close(Scales *s) {
    g_free(s->rgb_owned);
    if (s->linear != s->half)
        free(s->linear);
    s->rgb = s->rgb_owned = NULL;
    s->linear = NULL;
}

/// Moves to the next scale: 2x2 box means of linear light, the last row and column repeated when a
/// side is odd, summed in the same order as downsample() so that either path gives the same floats.
static int scales_next(Scales *s) {
    if (s->scale > 0) {
        float *smaller = downsample(s->linear, s->width, s->height, &s->width, &s->height);
        if (s->linear != s->half)
            free(s->linear);
        s->linear = smaller;
        s->scale++;
        return smaller ? 0 : -1;
    }
    int width = s->width, height = s->height, w = (width + 1) / 2, h = (height + 1) / 2;
    float *out = s->half ? s->half : planes_alloc((size_t) w * h * 3 * sizeof(float));
    if (!out) {
        vips_error("ssimulacra2", "%s", "out of memory");
        return -1;
    }
    const float *t = s->table;
    for (int y = 0; y < h; y++) {
        const unsigned char *r0 = s->rgb + (size_t) (2 * y) * width * 3;
        const unsigned char *r1 = s->rgb + (size_t) (2 * y + 1 < height ? 2 * y + 1 : height - 1) * width * 3;
        float *o = out + (size_t) y * w * 3;
        for (int x = 0; x < w; x++) {
            int x0 = 2 * x * 3, x1 = (2 * x + 1 < width ? 2 * x + 1 : width - 1) * 3;
            for (int c = 0; c < 3; c++)
                o[x * 3 + c] = (t[r0[x0 + c]] + t[r0[x1 + c]] + t[r1[x0 + c]] + t[r1[x1 + c]]) * 0.25f;
        }
    }
    g_free(s->rgb_owned);
    s->rgb = s->rgb_owned = NULL;
    s->linear = out;
    s->width = w;
    s->height = h;
    s->scale = 1;
    return 0;
}

/// The current scale's held rows (`source`, or every row when NULL) in linear light: `s->linear`
/// itself when that is every row of a float scale, else written into `into` (width·rows·3 floats).
static float *scales_rows(Scales *s, const int *source, int rows, float *into) {
    if (s->scale > 0 && !source)
        return s->linear;
    int width = s->width;
    for (int y = 0; y < rows; y++) {
        size_t from = (size_t) (source ? source[y] : y) * width * 3;
        float *o = into + (size_t) y * width * 3;
        if (s->scale > 0) {
            memcpy(o, s->linear + from, (size_t) width * 3 * sizeof(float));
        } else {
            const unsigned char *p = s->rgb + from;
            for (int i = 0; i < width * 3; i++)
                o[i] = s->table[p[i]];
        }
    }
    return into;
}

/// A cube root good to float precision: a bit-level first guess refined by Newton steps, several
/// times faster than cbrtf, which was the largest single cost of the conversion.
static inline float cube_root(float x) {
    union { float f; uint32_t u; } v = { x };
    v.u = v.u / 3 + 709921077u;
    float y = v.f;
    for (int i = 0; i < 3; i++)
        y = (2.0f * y + x / (y * y)) * (1.0f / 3.0f);
    return y;
}

/// Interleaved linear RGB to libjxl's XYB in three planes, shifted positive as SSIMULACRA 2 does
/// (X·14+0.42, Y+0.01, B−Y+0.55).
static void to_xyb(const float *rgb, size_t n, float *xyb) {
    const float bias = 0.0037930732552754493f;
    const float root_bias = cbrtf(bias);
    float *px = xyb, *py = xyb + n, *pb = xyb + 2 * n;
    for (size_t i = 0; i < n; i++) {
        float r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
        float m0 = 0.30f * r + 0.622f * g + 0.078f * b + bias;
        float m1 = 0.23f * r + 0.692f * g + 0.078f * b + bias;
        float m2 = 0.24342268924547819f * r + 0.20476744424496821f * g + 0.55180986650955360f * b + bias;
        m0 = cube_root(m0 > 0 ? m0 : 0) - root_bias;
        m1 = cube_root(m1 > 0 ? m1 : 0) - root_bias;
        m2 = cube_root(m2 > 0 ? m2 : 0) - root_bias;
        float y = 0.5f * (m0 + m1);
        px[i] = 7.0f * (m0 - m1) + 0.42f;
        py[i] = y + 0.01f;
        pb[i] = m2 - y + 0.55f;
    }
}

/// The reference's Gaussian, sigma 1.5 cut where it falls below 0.001 (radius 5), normalised.
static void kernel(float k[2 * RADIUS + 1]) {
    double sum = 0, v[2 * RADIUS + 1];
    for (int i = -RADIUS; i <= RADIUS; i++)
        sum += v[i + RADIUS] = exp(-(double) (i * i) / (2 * 1.5 * 1.5));
    for (int i = 0; i < 2 * RADIUS + 1; i++)
        k[i] = (float) (v[i] / sum);
}

/// Blurs one plane: mirrored columns beyond the left and right edges, zero rows above and below.
/// `row` is scratch of width + 2·RADIUS floats.
static void blur(const float *in, float *out, int width, int height, float *row) {
    float k[2 * RADIUS + 1];
    kernel(k);
    // Horizontal into `out`, each row copied with mirrored ends first.
    for (int y = 0; y < height; y++) {
        const float *src = in + (size_t) y * width;
        memcpy(row + RADIUS, src, width * sizeof(float));
        for (int i = 1; i <= RADIUS; i++) {
            int left = i - 1, right = width - i;
            row[RADIUS - i] = src[left < width ? left : width - 1];
            row[RADIUS + width - 1 + i] = src[right >= 0 ? right : 0];
        }
        float *dst = out + (size_t) y * width;
        for (int x = 0; x < width; x++) {
            const float *r = row + x;
            dst[x] = k[0] * (r[0] + r[10]) + k[1] * (r[1] + r[9]) + k[2] * (r[2] + r[8]) + k[3] * (r[3] + r[7])
                + k[4] * (r[4] + r[6]) + k[5] * r[5];
        }
    }
    // Vertical in place, the 2·RADIUS+1 source rows kept in `window` (zeros beyond the edges).
    float *window = g_malloc((size_t) (2 * RADIUS + 1) * width * sizeof(float));
    for (int y = 0; y < 2 * RADIUS + 1; y++) {
        int source = y - RADIUS;
        float *w = window + (size_t) y * width;
        if (source >= 0 && source < height)
            memcpy(w, out + (size_t) source * width, width * sizeof(float));
        else
            memset(w, 0, width * sizeof(float));
    }
    for (int y = 0; y < height; y++) {
        float *dst = out + (size_t) y * width;
        // The window slot of source row y−RADIUS+i is (y+i) mod (2·RADIUS+1).
        const float *w[2 * RADIUS + 1];
        for (int i = 0; i < 2 * RADIUS + 1; i++)
            w[i] = window + (size_t) ((y + i) % (2 * RADIUS + 1)) * width;
        for (int x = 0; x < width; x++)
            dst[x] = k[0] * (w[0][x] + w[10][x]) + k[1] * (w[1][x] + w[9][x]) + k[2] * (w[2][x] + w[8][x])
                + k[3] * (w[3][x] + w[7][x]) + k[4] * (w[4][x] + w[6][x]) + k[5] * w[5][x];
        // Slide: the slot of row y−RADIUS now takes row y+RADIUS+1, read before it is overwritten.
        int next = y + RADIUS + 1;
        float *slot = window + (size_t) (y % (2 * RADIUS + 1)) * width;
        if (next < height)
            memcpy(slot, out + (size_t) next * width, width * sizeof(float));
        else
            memset(slot, 0, width * sizeof(float));
    }
    g_free(window);
}

/// Chooses the rows scored at one scale: every row, or with `period` above BAND, one band of BAND rows
/// in the middle of every `period` rows, each with RADIUS rows of context above and below so that
/// the blur inside a band is exact. Below eight bands, every row: on the bench corpus five bands (WebP
/// at 1024 px) erred by up to 0.8 points where ten (JPEG at 2048 px) stayed within 0.4, and a score
/// of so few rows is cheap anyway. Returns the rows held; `source` and `counted` stay NULL for every row.
static int plan_rows(int height, int period, int **source, unsigned char **counted) {
    *source = NULL;
    *counted = NULL;
    int bands = period > BAND ? height / period : 0;
    if (bands < 8)
        return height;
    *source = g_new(int, bands * (BAND + 2 * RADIUS));
    *counted = g_new(unsigned char, bands * (BAND + 2 * RADIUS));
    int rows = 0;
    for (int band = 0; band < bands; band++) {
        int top = band * period + (period - BAND) / 2;
        for (int y = top - RADIUS; y < top + BAND + RADIUS; y++) {
            if (y < 0 || y >= height)
                continue;
            (*source)[rows] = y;
            (*counted)[rows] = y >= top && y < top + BAND;
            rows++;
        }
    }
    return rows;
}

int ipv_score_reference_is_sampled(const ipv_score_reference *ref) {
    return ref && ref->scales > 0 && ref->source[0] != NULL;
}

/// Frees the reference's planes.
void ipv_score_reference_free(ipv_score_reference *ref) {
    if (!ref) return;
    for (int scale = 0; scale < SCALES; scale++) {
        free(ref->xyb[scale]);
        free(ref->moments[scale]);
        g_free(ref->source[scale]);
        g_free(ref->counted[scale]);
    }
    free(ref->scratch_held);
    free(ref->scratch_xyb);
    free(ref->scratch_blurred);
    free(ref->scratch_half);
    free(ref->scratch_rgb);
    g_free(ref);
}

ipv_score_reference *ipv_score_reference_new(VipsImage *reference, int sampling) {
    ipv_score_reference *ref = g_new0(ipv_score_reference, 1);
    Scales image;
    float *row = NULL;
    if (scales_open(&image, reference, NULL))
        goto fail;
    // Sampling's error was measured on images with all six scales; a narrower one (150x2400 erred
    // +0.8 points, over the error `auto` allows for) has few pixels a row and is cheap to score whole.
    if (image.width < SAMPLED_MIN_SIDE || image.height < SAMPLED_MIN_SIDE)
        sampling = 1;
    row = g_malloc((size_t) (image.width + 2 * RADIUS) * sizeof(float));
    size_t largest = 0;
    for (int scale = 0; scale < SCALES; scale++) {
        if (scale > 0 && scales_next(&image))
            goto fail;
        int width = image.width, height = image.height;
        if (width < 8 || height < 8)
            break;
        // The two finest scales hold most of the pixels: sampled, they hold 1/sampling and 2/sampling.
        int period = scale == 0 ? BAND * sampling : scale == 1 ? BAND * (sampling / 2) : 0;
        int rows = ref->rows[scale] = plan_rows(height, period, &ref->source[scale], &ref->counted[scale]);
        size_t n = (size_t) width * rows;
        float *xyb = ref->xyb[scale] = planes_alloc(3 * n * sizeof(float));
        float *moments = ref->moments[scale] = planes_alloc(6 * n * sizeof(float));
        if (!xyb || !moments) {
            vips_error("ssimulacra2", "%s", "out of memory");
            goto fail;
        }
        largest = MAX(largest, n);
        float *buffer = planes_alloc(3 * n * sizeof(float));
        if (!buffer) {
            vips_error("ssimulacra2", "%s", "out of memory");
            goto fail;
        }
        float *held = scales_rows(&image, ref->source[scale], rows, buffer);
        to_xyb(held, n, xyb);
        free(buffer);
        for (int c = 0; c < 3; c++) {
            const float *x = xyb + c * n;
            float *square = moments + (3 + c) * n;
            for (size_t i = 0; i < n; i++)
                square[i] = x[i] * x[i];
            blur(x, moments + c * n, width, rows, row);
            blur(square, square, width, rows, row);
        }
        ref->width[scale] = width;
        ref->height[scale] = height;
        ref->scales = scale + 1;
    }
    scales_close(&image);
    g_free(row);
    row = NULL;
    ref->scratch_held = planes_alloc(3 * largest * sizeof(float));
    ref->scratch_xyb = planes_alloc(3 * largest * sizeof(float));
    ref->scratch_blurred = planes_alloc(3 * largest * sizeof(float));
    ref->scratch_half = ref->scales > 1 ? planes_alloc((size_t) ref->width[1] * ref->height[1] * 3 * sizeof(float)) : NULL;
    if (!ref->scratch_held || !ref->scratch_xyb || !ref->scratch_blurred || (ref->scales > 1 && !ref->scratch_half)) {
        vips_error("ssimulacra2", "%s", "out of memory");
        goto fail;
    }
    return ref;
fail:
    scales_close(&image);
    g_free(row);
    ipv_score_reference_free(ref);
    return NULL;
}

/// Adds one channel's sums over one scale: 1−SSIM, its 4th power, artefacts, their 4th power, lost
/// detail, its 4th power.
static void channel_sums(const float *x1, const float *mu1, const float *s11, const float *x2, const float *mu2,
                         const float *s22, const float *s12, size_t n, double sums[6]) {
    double s[6] = { 0 };
    // Per-pixel terms in float, summed per block of pixels in float and then in double: the loop
    // vectorises, and a block's float sum loses nothing the score can show.
    enum { BLOCK = 256 };
    for (size_t start = 0; start < n; start += BLOCK) {
        size_t end = start + BLOCK < n ? start + BLOCK : n;
        float b[6] = { 0 };
        for (size_t i = start; i < end; i++) {
            float m1 = mu1[i], m2 = mu2[i];
            float num_m = 1.0f - (m1 - m2) * (m1 - m2);
            float num_s = 2.0f * (s12[i] - m1 * m2) + 0.0009f;
            float denom_s = (s11[i] - m1 * m1) + (s22[i] - m2 * m2) + 0.0009f;
            float d = 1.0f - num_m * num_s / denom_s;
            d = d > 0 ? d : 0;
            float edge = (1.0f + fabsf(x2[i] - m2)) / (1.0f + fabsf(x1[i] - m1)) - 1.0f;
            float artefact = edge > 0 ? edge : 0, lost = edge < 0 ? -edge : 0;
            b[0] += d;
            b[1] += (d * d) * (d * d);
            b[2] += artefact;
            b[3] += (artefact * artefact) * (artefact * artefact);
            b[4] += lost;
            b[5] += (lost * lost) * (lost * lost);
        }
        for (int k = 0; k < 6; k++)
            s[k] += b[k];
    }
    memcpy(sums, s, sizeof s);
}

static int score_scales(ipv_score_reference *ref, Scales *opened, double *score);

int ipv_score(ipv_score_reference *ref, VipsImage *distorted, double *score) {
    if (!ref || ref->scales == 0 || distorted->Xsize != ref->width[0] || distorted->Ysize != ref->height[0]) {
        vips_error("ssimulacra2", "%s", "the images differ in size or are smaller than 8x8");
        return -1;
    }
    Scales image;
    if (scales_open(&image, distorted, ref->scratch_half))
        return -1;
    return score_scales(ref, &image, score);
}

/// Reads a 3-band 8-bit image into `into` (width·height·3 bytes) through a region, 64 rows at a time:
/// the decoder runs in this thread and writes into one buffer the reference keeps, where copying each
/// decoded encode to a fresh memory image mapped and faulted in a new buffer for every probe.
static int read_rgb8(VipsImage *in, unsigned char *into) {
    VipsRegion *region = vips_region_new(in);
    if (!region)
        return -1;
    int result = 0;
    size_t line = (size_t) in->Xsize * 3;
    for (int top = 0; result == 0 && top < in->Ysize; top += 64) {
        VipsRect strip = { 0, top, in->Xsize, MIN(64, in->Ysize - top) };
        result = vips_region_prepare(region, &strip);
        for (int y = 0; result == 0 && y < strip.height; y++)
            memcpy(into + (size_t) (top + y) * line, VIPS_REGION_ADDR(region, 0, top + y), line);
    }
    g_object_unref(region);
    return result;
}

int ipv_score_encoded(ipv_score_reference *ref, const void *buf, size_t len, double *score) {
    if (!ref || ref->scales == 0) {
        vips_error("ssimulacra2", "%s", "the reference is smaller than 8x8");
        return -1;
    }
    VipsImage *lazy = vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (!lazy)
        return -1;
    int result = -1;
    if (lazy->Bands == 3 && lazy->BandFmt == VIPS_FORMAT_UCHAR && lazy->Xsize == ref->width[0] && lazy->Ysize == ref->height[0]) {
        if (!ref->scratch_rgb)
            ref->scratch_rgb = planes_alloc((size_t) ref->width[0] * ref->height[0] * 3);
        if (!ref->scratch_rgb) {
            vips_error("ssimulacra2", "%s", "out of memory");
        } else if (read_rgb8(lazy, ref->scratch_rgb) == 0) {
            Scales image;
            scales_open_rgb(&image, ref->scratch_rgb, ref->width[0], ref->height[0], ref->scratch_half);
            result = score_scales(ref, &image, score);
        }
    } else {
        // Alpha, grey or a size that does not match: the general path, which flattens and converts.
        VipsImage *memory = vips_image_copy_memory(lazy);
        if (memory) {
            result = ipv_score(ref, memory, score);
            g_object_unref(memory);
        }
    }
    g_object_unref(lazy);
    return result;
}

/// The score of an opened distorted image against `ref`; closes it.
static int score_scales(ipv_score_reference *ref, Scales *opened, double *score) {
    Scales image = *opened;
    float *xyb = ref->scratch_xyb, *blurred = ref->scratch_blurred;
    float *row = g_malloc((size_t) (image.width + 2 * RADIUS) * sizeof(float));
    int result = -1;
    double norms[SCALES][18];
    for (int scale = 0; scale < ref->scales; scale++) {
        if (scale > 0 && scales_next(&image))
            goto done;
        int w = image.width, rows = ref->rows[scale];
        size_t n = (size_t) w * rows;
        to_xyb(scales_rows(&image, ref->source[scale], rows, ref->scratch_held), n, xyb);
        float *mu2 = blurred, *s22 = blurred + n, *s12 = blurred + 2 * n;
        double sums[18] = { 0 };
        size_t pixels = 0;
        for (int c = 0; c < 3; c++) {
            const float *x1 = ref->xyb[scale] + c * n, *x2 = xyb + c * n;
            const float *mu1 = ref->moments[scale] + c * n, *s11 = ref->moments[scale] + (3 + c) * n;
            for (size_t i = 0; i < n; i++) {
                s22[i] = x2[i] * x2[i];
                s12[i] = x1[i] * x2[i];
            }
            blur(x2, mu2, w, rows, row);
            blur(s22, s22, w, rows, row);
            blur(s12, s12, w, rows, row);
            // Summed over the counted rows, one run of consecutive counted rows at a time.
            pixels = 0;
            for (int y = 0; y < rows;) {
                int end = y;
                while (end < rows && (!ref->counted[scale] || ref->counted[scale][end]))
                    end++;
                if (end > y) {
                    size_t at = (size_t) y * w, count = (size_t) (end - y) * w;
                    double run[6];
                    channel_sums(x1 + at, mu1 + at, s11 + at, x2 + at, mu2 + at, s22 + at, s12 + at, count, run);
                    for (int k = 0; k < 6; k++)
                        sums[c * 6 + k] += run[k];
                    pixels += count;
                    y = end;
                } else {
                    y++;
                }
            }
        }
        for (int i = 0; i < 18; i++)
            norms[scale][i] = i % 2 == 0 ? sums[i] / pixels : sqrt(sqrt(sums[i] / pixels));
    }
    // The weights' order: channel, then scale, then norm (L1, L4), then SSIM, artefacts, lost detail.
    // Each norm takes the weight of its channel and scale, and a scale an image is too small for
    // (under 8 pixels on a side) adds nothing. The reference counts through the weights instead, so
    // below 256 pixels on a side the second and third channels took other scales' weights: a 64x1024
    // JPEG at quality 80 scored 9.8 (WebP 18.2, against 49.9 and up for every other fixture), and
    // `auto` paid for it in bytes. With six scales both ways agree exactly.
    double total = 0;
    for (int c = 0; c < 3; c++)
        for (int scale = 0; scale < ref->scales; scale++)
            for (int k = 0; k < 2; k++)
                for (int kind = 0; kind < 3; kind++)
                    total += weights[c * SCALES * 6 + scale * 6 + k * 3 + kind] * fabs(norms[scale][c * 6 + kind * 2 + k]);
    total *= 0.9562382616834844;
    total = 2.326765642916932 * total - 0.020884521182843837 * total * total
        + 6.248496625763138e-05 * total * total * total;
    *score = total > 0 ? 100.0 - 10.0 * pow(total, 0.6276336467831387) : 100.0;
    result = 0;
done:
    scales_close(&image);
    g_free(row);
    return result;
}
