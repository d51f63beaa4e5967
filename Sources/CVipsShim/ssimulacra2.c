// SSIMULACRA 2 on libvips operations: linear light, XYB, six box-downscaled scales, blurred moments.
//
// Follows libjxl's tools/ssimulacra2.cc and the `ssimulacra2` reference package (PyPI) step by step:
// sRGB to linear RGB, opsin XYB made positive, at each of up to six scales a Gaussian blur (sigma 1.5,
// radius 5, zero rows above and below, mirrored columns) of each image, its square and their product,
// then per channel the 1-SSIM map and the edge maps' L1 and L4 norms, weighted into one score.
// The reference's scales and moments are computed once, so scoring several encodes of one image
// only pays for the distorted side.
#include "CVipsShim.h"
#include <math.h>
#include <string.h>

#define SCALES 6
#define PAD 6

struct ipv_score_reference {
    int scales;
    int width[SCALES], height[SCALES];
    VipsImage *xyb[SCALES];     // the reference in positive XYB, in memory
    VipsImage *moments[SCALES]; // blurred xyb and xyb², in memory (6 bands)
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

/// Runs `op` on a fresh set of temporaries owned by `context`; returns -1 from the caller on failure.
#define TRY(call) do { if (call) return -1; } while (0)

/// 8-bit sRGB (alpha flattened onto white, as a JPEG output would be) to 3-band linear float RGB.
static int to_linear(VipsImage *in, VipsImage **out) {
    VipsImage *context = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(context), 4);
    int result = -1;
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
    float table[256];
    for (int i = 0; i < 256; i++) {
        double v = i / 255.0;
        table[i] = (float) (v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4));
    }
    t[3] = vips_image_new_from_memory_copy(table, sizeof table, 256, 1, 1, VIPS_FORMAT_FLOAT);
    if (t[3] && vips_maplut(rgb, out, t[3], NULL) == 0)
        result = 0;
done:
    g_object_unref(context);
    return result;
}

/// Linear RGB to libjxl's XYB, shifted positive as SSIMULACRA 2 does (X·14+0.42, Y+0.01, B−Y+0.55).
static int to_xyb(VipsImage *linear, VipsImage **out) {
    static const double bias = 0.0037930732552754493;
    static const double opsin[9] = {
        0.30, 0.622, 0.078,
        0.23, 0.692, 0.078,
        0.24342268924547819, 0.20476744424496821, 0.55180986650955360,
    };
    // From the cube roots (m0, m1, m2) to positive XYB in one step: X = (m0−m1)/2, Y = (m0+m1)/2, B = m2.
    static const double positive[9] = {
        7.0, -7.0, 0.0,
        0.5, 0.5, 0.0,
        -0.5, -0.5, 1.0,
    };
    double offsets[3] = { 0.42, 0.01, 0.55 };
    double ones[3] = { 1, 1, 1 };
    VipsImage *context = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(context), 7);
    t[0] = vips_image_new_matrix_from_array(3, 3, opsin, 9);
    t[1] = vips_image_new_matrix_from_array(3, 3, positive, 9);
    int result = -1;
    if (t[0] && t[1] &&
        !vips_recomb(linear, &t[2], t[0], NULL) &&
        !vips_linear1(t[2], &t[3], 1.0, bias, NULL) &&
        !vips_math2_const1(t[3], &t[4], VIPS_OPERATION_MATH2_POW, 1.0 / 3.0, NULL) &&
        !vips_linear1(t[4], &t[5], 1.0, -cbrt(bias), NULL) &&
        !vips_recomb(t[5], &t[6], t[1], NULL) &&
        !vips_linear(t[6], out, ones, offsets, 3, NULL))
        result = 0;
    g_object_unref(context);
    return result;
}

/// The reference's Gaussian: sigma 1.5, radius 5, zero rows beyond the top and bottom, mirrored columns.
static int blur(VipsImage *in, VipsImage **out) {
    VipsImage *context = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(context), 3);
    int width = in->Xsize, height = in->Ysize;
    int result = -1;
    if (!vips_embed(in, &t[0], PAD, 0, width + 2 * PAD, height, "extend", VIPS_EXTEND_MIRROR, NULL) &&
        !vips_embed(t[0], &t[1], 0, PAD, width + 2 * PAD, height + 2 * PAD, "extend", VIPS_EXTEND_BLACK, NULL) &&
        !vips_gaussblur(t[1], &t[2], 1.5, "min_ampl", 0.001, "precision", VIPS_PRECISION_FLOAT, NULL) &&
        !vips_extract_area(t[2], out, PAD, PAD, width, height, NULL))
        result = 0;
    g_object_unref(context);
    return result;
}

/// Halves linear RGB by 2x2 box means, the last row and column repeated when a side is odd.
static int downsample(VipsImage *in, VipsImage **out) {
    VipsImage *context = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(context), 1);
    int width = in->Xsize + (in->Xsize & 1), height = in->Ysize + (in->Ysize & 1);
    int result = -1;
    if (!vips_embed(in, &t[0], 0, 0, width, height, "extend", VIPS_EXTEND_COPY, NULL) &&
        !vips_shrink(t[0], out, 2.0, 2.0, NULL))
        result = 0;
    g_object_unref(context);
    return result;
}

/// Copies an image into memory, replacing the caller's reference.
static int materialise(VipsImage **image) {
    VipsImage *memory = vips_image_copy_memory(*image);
    g_object_unref(*image);
    *image = memory;
    return memory ? 0 : -1;
}

/// One scale's XYB image from its linear RGB, in memory.
static int xyb_at_scale(VipsImage *linear, VipsImage **xyb) {
    TRY(to_xyb(linear, xyb));
    return materialise(xyb);
}

ipv_score_reference *ipv_score_reference_new(VipsImage *reference) {
    ipv_score_reference *ref = g_new0(ipv_score_reference, 1);
    VipsImage *linear = NULL;
    if (to_linear(reference, &linear) || materialise(&linear))
        goto fail;
    for (int scale = 0; scale < SCALES; scale++) {
        if (scale > 0) {
            VipsImage *smaller = NULL;
            if (downsample(linear, &smaller))
                goto fail;
            g_object_unref(linear);
            linear = smaller;
            if (materialise(&linear))
                goto fail;
        }
        if (linear->Xsize < 8 || linear->Ysize < 8)
            break;
        VipsImage *xyb = NULL, *square = NULL, *pair = NULL, *moments = NULL;
        int failed = xyb_at_scale(linear, &xyb);
        if (!failed) {
            VipsImage *both[2] = { xyb, NULL };
            failed = vips_multiply(xyb, xyb, &square, NULL);
            both[1] = square;
            failed = failed || vips_bandjoin(both, &pair, 2, NULL) || blur(pair, &moments) || materialise(&moments);
        }
        if (square) g_object_unref(square);
        if (pair) g_object_unref(pair);
        ref->xyb[scale] = xyb;
        ref->moments[scale] = moments;
        if (failed)
            goto fail;
        ref->width[scale] = linear->Xsize;
        ref->height[scale] = linear->Ysize;
        ref->scales = scale + 1;
    }
    g_object_unref(linear);
    return ref;
fail:
    if (linear) g_object_unref(linear);
    ipv_score_reference_free(ref);
    return NULL;
}

void ipv_score_reference_free(ipv_score_reference *ref) {
    if (!ref) return;
    for (int scale = 0; scale < SCALES; scale++) {
        if (ref->xyb[scale]) g_object_unref(ref->xyb[scale]);
        if (ref->moments[scale]) g_object_unref(ref->moments[scale]);
    }
    g_free(ref);
}

/// Sums over one scale, per channel c at c*6: 1−SSIM, its 4th power, artefacts, their 4th power,
/// lost detail, its 4th power.
typedef struct {
    GMutex lock;
    double sums[18];
} ScaleSums;

static void *sums_start(VipsImage *image, void *a, void *b) {
    (void) image; (void) a; (void) b;
    return g_new0(double, 18);
}

static int sums_generate(VipsRegion *region, void *seq, void *a, void *b, gboolean *stop) {
    (void) a; (void) b; (void) stop;
    double *sums = seq;
    const VipsRect *r = &region->valid;
    for (int y = 0; y < r->height; y++) {
        const float *p = (const float *) VIPS_REGION_ADDR(region, r->left, r->top + y);
        for (int x = 0; x < r->width; x++, p += 21) {
            for (int c = 0; c < 3; c++) {
                double x1 = p[c], mu1 = p[3 + c], s11 = p[6 + c];
                double x2 = p[9 + c], mu2 = p[12 + c], s22 = p[15 + c], s12 = p[18 + c];
                double num_m = 1.0 - (mu1 - mu2) * (mu1 - mu2);
                double num_s = 2.0 * (s12 - mu1 * mu2) + 0.0009;
                double denom_s = (s11 - mu1 * mu1) + (s22 - mu2 * mu2) + 0.0009;
                double d = 1.0 - num_m * num_s / denom_s;
                if (d < 0) d = 0;
                double edge = (1.0 + fabs(x2 - mu2)) / (1.0 + fabs(x1 - mu1)) - 1.0;
                double artefact = edge > 0 ? edge : 0, lost = edge < 0 ? -edge : 0;
                double *s = sums + c * 6;
                s[0] += d;
                s[1] += (d * d) * (d * d);
                s[2] += artefact;
                s[3] += (artefact * artefact) * (artefact * artefact);
                s[4] += lost;
                s[5] += (lost * lost) * (lost * lost);
            }
        }
    }
    return 0;
}

static int sums_stop(void *seq, void *a, void *b) {
    (void) b;
    ScaleSums *total = a;
    g_mutex_lock(&total->lock);
    for (int i = 0; i < 18; i++) total->sums[i] += ((double *) seq)[i];
    g_mutex_unlock(&total->lock);
    g_free(seq);
    return 0;
}

/// The 18 sums of one scale: the reference's XYB and moments joined with the distorted image's XYB
/// and its blurred xyb, xyb² and reference·distorted, reduced by libvips' threads without holding the maps.
static int scale_sums(const ipv_score_reference *ref, int scale, VipsImage *xyb, double sums[18]) {
    VipsImage *context = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(context), 5);
    int result = -1;
    if (vips_multiply(xyb, xyb, &t[0], NULL) || vips_multiply(ref->xyb[scale], xyb, &t[1], NULL))
        goto done;
    VipsImage *products[3] = { xyb, t[0], t[1] };
    if (vips_bandjoin(products, &t[2], 3, NULL) || blur(t[2], &t[3]))
        goto done;
    VipsImage *all[4] = { ref->xyb[scale], ref->moments[scale], xyb, t[3] };
    if (vips_bandjoin(all, &t[4], 4, NULL) || vips_image_pio_input(t[4]))
        goto done;
    ScaleSums total;
    memset(&total, 0, sizeof total);
    g_mutex_init(&total.lock);
    result = vips_sink(t[4], sums_start, sums_generate, sums_stop, &total, NULL);
    g_mutex_clear(&total.lock);
    memcpy(sums, total.sums, sizeof total.sums);
done:
    g_object_unref(context);
    return result;
}

int ipv_score(const ipv_score_reference *ref, VipsImage *distorted, double *score) {
    if (!ref || ref->scales == 0 || distorted->Xsize != ref->width[0] || distorted->Ysize != ref->height[0]) {
        vips_error("ssimulacra2", "%s", "the images differ in size or are smaller than 8x8");
        return -1;
    }
    double total = 0;
    int weight = 0;
    double norms[SCALES][18];
    // Linear light at full size stays lazy (a table look-up, read twice): it is the largest plane.
    VipsImage *linear = NULL;
    if (to_linear(distorted, &linear))
        return -1;
    for (int scale = 0; scale < ref->scales; scale++) {
        if (scale > 0) {
            VipsImage *smaller = NULL;
            int failed = downsample(linear, &smaller);
            g_object_unref(linear);
            linear = smaller;
            if (failed || materialise(&linear))
                return -1;
        }
        VipsImage *xyb = NULL;
        double sums[18];
        int failed = xyb_at_scale(linear, &xyb) || scale_sums(ref, scale, xyb, sums);
        if (xyb) g_object_unref(xyb);
        if (failed) {
            g_object_unref(linear);
            return -1;
        }
        double pixels = (double) ref->width[scale] * ref->height[scale];
        for (int i = 0; i < 18; i++)
            norms[scale][i] = i % 2 == 0 ? sums[i] / pixels : sqrt(sqrt(sums[i] / pixels));
    }
    g_object_unref(linear);
    // The reference's order: channel, then scale, then norm (L1, L4), then SSIM, artefacts, lost detail.
    for (int c = 0; c < 3; c++)
        for (int scale = 0; scale < ref->scales; scale++)
            for (int n = 0; n < 2; n++)
                for (int kind = 0; kind < 3; kind++)
                    total += weights[weight++] * fabs(norms[scale][c * 6 + kind * 2 + n]);
    total *= 0.9562382616834844;
    total = 2.326765642916932 * total - 0.020884521182843837 * total * total
        + 6.248496625763138e-05 * total * total * total;
    *score = total > 0 ? 100.0 - 10.0 * pow(total, 0.6276336467831387) : 100.0;
    return 0;
}
