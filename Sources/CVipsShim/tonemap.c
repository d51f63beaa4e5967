// A PQ or HLG picture (BT.2100) tone mapped to 8-bit sRGB: libvips 8.14 ignores a HEIF's nclx and
// would keep the coded values as if they were sRGB's: PQ's SDR white comes out a dull grey (148 of
// 255), HLG's midtones too bright and its highlights crowded at the top.
#include "CVipsShim.h"
#include "private.h"
#include <math.h>
#include <stdlib.h>

/* BT.2100's PQ constants. */
#define PQ_M1 (2610.0 / 16384.0)
#define PQ_M2 (2523.0 / 4096.0 * 128.0)
#define PQ_C1 (3424.0 / 4096.0)
#define PQ_C2 (2413.0 / 4096.0 * 32.0)
#define PQ_C3 (2392.0 / 4096.0 * 32.0)
/* BT.2100's HLG constants, and the display its OOTF is taken for (1,000 cd/m2, system gamma 1.2). */
#define HLG_A 0.17883277
#define HLG_B (1.0 - 4.0 * HLG_A)
#define HLG_C (0.5 - HLG_A * log(4.0 * HLG_A))
#define HLG_PEAK 1000.0
#define HLG_GAMMA 1.2

/* Linear light from a PQ signal in [0, 1], in cd/m2. */
static double pq_to_nits(double signal) {
    double p = pow(signal, 1.0 / PQ_M2);
    double num = p - PQ_C1 > 0 ? p - PQ_C1 : 0;
    return 10000.0 * pow(num / (PQ_C2 - PQ_C3 * p), 1.0 / PQ_M1);
}

/* Scene light in [0, 1] from an HLG signal in [0, 1] (the OETF's inverse). */
static double hlg_to_scene(double signal) {
    if (signal <= 0.5) return signal * signal / 3.0;
    return (exp((signal - HLG_C) / HLG_A) + HLG_B) / 12.0;
}

/* Each source primaries' linear RGB into BT.709's (the sRGB primaries), derived from the
 * primaries' chromaticities and D65 white: BT.2020 (nclx 9) and Display P3 (12); BT.709 (1) is
 * the identity. Primaries nclx does not name here are taken as BT.2020's, BT.2100's own. */
static const double from_bt2020[9] = {1.660491, -0.587641, -0.072850, -0.124550, 1.132900, -0.008349, -0.018151, -0.100579, 1.118730};
static const double from_p3[9] = {1.224940, -0.224940, 0, -0.042057, 1.042057, 0, -0.019638, -0.078636, 1.098274};
static const double identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
/* BT.2100's luminance of its own primaries, the HLG OOTF's. */
static const double hlg_luma[3] = {0.2627, 0.6780, 0.0593};

typedef struct {
    int transfer, bands, colour, ushort, bits;
    const double *matrix;
    /* Each code's linear light: cd/m2 for PQ, scene light for HLG. */
    float *linear;
} tone_source;

/* A pixel's display light in BT.709 primaries, cd/m2, negative parts (outside BT.709) at 0. */
static void display_light(const tone_source *s, const VipsPel *pixel, double rgb[3]) {
    double in[3];
    for (int c = 0; c < 3; c++) {
        int band = s->colour == 3 ? c : 0;
        unsigned code = s->ushort ? ((const unsigned short *) pixel)[band] : pixel[band];
        in[c] = s->linear[code];
    }
    if (s->transfer == IPV_TRANSFER_HLG) {
        double ys = hlg_luma[0] * in[0] + hlg_luma[1] * in[1] + hlg_luma[2] * in[2];
        double scale = ys > 0 ? HLG_PEAK * pow(ys, HLG_GAMMA - 1.0) : 0;
        for (int c = 0; c < 3; c++) in[c] *= scale;
    }
    for (int c = 0; c < 3; c++) {
        const double *row = s->matrix + 3 * c;
        double v = row[0] * in[0] + row[1] * in[1] + row[2] * in[2];
        rgb[c] = v > 0 ? v : 0;
    }
}

/* A maxRGB `x` (in SDR white) of a picture whose brightest is `headroom` times SDR white, as the SDR
 * picture shows it (1 its white, the display's peak): unchanged up to `KNEE`, and above it an
 * extended Reinhard curve over what lies between the knee and the headroom, whose slope is 1 at
 * the knee and stays above 0 at the top, so that highlights keep distinct levels where BT.2390's
 * EETF (its end slope 0) would flatten the brightest stops into one. */
#define KNEE 0.5
static double roll_off(double x, double headroom) {
    if (x <= KNEE || headroom <= 1) return x;
    double u = (x - KNEE) / (1 - KNEE), top = (headroom - KNEE) / (1 - KNEE);
    return KNEE + (1 - KNEE) * u * (1 + u / (top * top)) / (1 + u);
}

static double srgb_encode(double linear) {
    return linear <= 0.0031308 ? 12.92 * linear : 1.055 * pow(linear, 1.0 / 2.4) - 0.055;
}

int ipv_tone_map_hdr(VipsImage *in, int transfer, int primaries, int bits, double white, double *peak, VipsImage **out) {
    ipv_mark_operation();
    *out = NULL;
    *peak = 0;
    int ushort = in->BandFmt == VIPS_FORMAT_USHORT;
    int colour = in->Bands >= 3 ? 3 : 1;
    if ((!ushort && in->BandFmt != VIPS_FORMAT_UCHAR) || in->Bands < 1 || in->Bands > 4 || (transfer != IPV_TRANSFER_PQ && transfer != IPV_TRANSFER_HLG) ||
        bits < 8 || bits > (ushort ? 16 : 8) || !(white > 0 && white < 10000)) {
        vips_error("tonemap", "no PQ or HLG picture of 8 to 16 bits in 1 to 4 bands");
        return -1;
    }
    VipsImage *pixels = vips_image_copy_memory(in);
    if (!pixels) return -1;
    int status = -1;
    tone_source s = {transfer, in->Bands, colour, ushort, bits, primaries == 1 ? identity : primaries == 12 ? from_p3 : from_bt2020, NULL};
    size_t codes = ushort ? 65536 : 256;
    unsigned char *encode = NULL;
    s.linear = malloc(codes * sizeof(float));
    encode = malloc(65536);
    if (!s.linear || !encode) {
        vips_error("tonemap", "out of memory");
        goto done;
    }
    // libvips keeps a 10- or 12-bit code in the top bits of 16.
    int shift = ushort ? 16 - bits : 0;
    double top = (double) ((1u << bits) - 1);
    for (size_t code = 0; code < codes; code++) {
        double signal = (double) (code >> shift) / top;
        if (signal > 1) signal = 1;
        s.linear[code] = (float) (transfer == IPV_TRANSFER_PQ ? pq_to_nits(signal) : hlg_to_scene(signal));
    }
    int width = pixels->Xsize, height = pixels->Ysize;
    size_t step = VIPS_IMAGE_SIZEOF_PEL(pixels);
    // The brightest channel of any pixel is the picture's peak, which becomes the SDR picture's.
    double brightest = 0;
    for (int y = 0; y < height; y++) {
        const VipsPel *row = VIPS_IMAGE_ADDR(pixels, 0, y);
        for (int x = 0; x < width; x++) {
            double rgb[3];
            display_light(&s, row + x * step, rgb);
            double m = rgb[0] > rgb[1] ? rgb[0] : rgb[1];
            if (rgb[2] > m) m = rgb[2];
            if (m > brightest) brightest = m;
        }
    }
    *peak = brightest;
    double headroom = brightest / white;
    for (int i = 0; i < 65536; i++) encode[i] = (unsigned char) lround(255.0 * srgb_encode(i / 65535.0));

    VipsImage *result = vips_image_new_memory();
    int out_bands = colour + (in->Bands == 2 || in->Bands == 4);
    vips_image_init_fields(result, width, height, out_bands, VIPS_FORMAT_UCHAR, VIPS_CODING_NONE,
        colour == 3 ? VIPS_INTERPRETATION_sRGB : VIPS_INTERPRETATION_B_W, pixels->Xres, pixels->Yres);
    if (vips_image_write_prepare(result)) {
        g_object_unref(result);
        goto done;
    }
    for (int y = 0; y < height; y++) {
        const VipsPel *row = VIPS_IMAGE_ADDR(pixels, 0, y);
        VipsPel *to = VIPS_IMAGE_ADDR(result, 0, y);
        for (int x = 0; x < width; x++) {
            const VipsPel *pixel = row + x * step;
            double rgb[3];
            display_light(&s, pixel, rgb);
            double m = rgb[0] > rgb[1] ? rgb[0] : rgb[1];
            if (rgb[2] > m) m = rgb[2];
            double relative = m / white;
            double g = relative > KNEE ? roll_off(relative, headroom) / relative / white : 1.0 / white;
            VipsPel *pel = to + x * out_bands;
            if (colour == 3) {
                for (int c = 0; c < 3; c++) {
                    double v = rgb[c] * g;
                    pel[c] = encode[v >= 1 ? 65535 : (int) lround(v * 65535)];
                }
            } else {
                // One band: its light is the same in every primary.
                double v = rgb[0] * g;
                pel[0] = encode[v >= 1 ? 65535 : (int) lround(v * 65535)];
            }
            if (out_bands > colour) {
                unsigned alpha = ushort ? ((const unsigned short *) pixel)[s.bands - 1] : pixel[s.bands - 1];
                pel[colour] = (VipsPel) (ushort ? alpha >> 8 : alpha);
            }
        }
    }
    *out = result;
    status = 0;
done:
    free(s.linear);
    free(encode);
    g_object_unref(pixels);
    return status;
}
