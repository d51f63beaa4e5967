// Logos laid over variants: a logo made ready once (8-bit sRGB with alpha, in memory), then blended into each output's area under it.
#include "CVipsShim.h"
#include "private.h"

int ipv_watermark_prepare(VipsImage *in, VipsImage **out) {
    ipv_mark_operation();
    VipsImage *srgb = NULL;
    VipsImage *with_alpha = NULL;
    if (ipv_to_srgb8(in, &srgb))
        return -1;
    if (vips_image_hasalpha(srgb)) {
        with_alpha = srgb;
    } else {
        int status = vips_bandjoin_const1(srgb, &with_alpha, 255.0, NULL);
        g_object_unref(srgb);
        if (status)
            return -1;
    }
    if (with_alpha->Bands != 4) {
        vips_error("watermark", "a logo needs RGB or grey pixels with alpha, not %d bands", with_alpha->Bands);
        g_object_unref(with_alpha);
        return -1;
    }
    /* Decoded now, whole: every output reads it, on any compression thread. */
    VipsImage *memory = vips_image_copy_memory(with_alpha);
    g_object_unref(with_alpha);
    if (!memory)
        return -1;
    *out = memory;
    return 0;
}

/* Only the logo's area is blended: the rest of the output is copied through untouched by the
 * insert, so the cost follows the logo's size, not the image's. */
int ipv_watermark(VipsImage *in, VipsImage *logo, int left, int top, double opacity, VipsImage **out) {
    ipv_mark_operation();
    VipsImage *faded = NULL, *area = NULL, *blended = NULL, *cast = NULL, *bands = NULL;
    int status = -1;
    if (opacity < 1.0) {
        double scale[4] = { 1.0, 1.0, 1.0, opacity };
        double offset[4] = { 0.0, 0.0, 0.0, 0.0 };
        if (vips_linear(logo, &faded, scale, offset, 4, "uchar", TRUE, NULL))
            goto done;
    } else {
        g_object_ref(logo);
        faded = logo;
    }
    if (vips_extract_area(in, &area, left, top, logo->Xsize, logo->Ysize, NULL))
        goto done;
    if (vips_composite2(area, faded, &blended, VIPS_BLEND_MODE_OVER, NULL))
        goto done;
    if (vips_cast(blended, &cast, VIPS_FORMAT_UCHAR, NULL))
        goto done;
    /* An opaque output stays without alpha: the blend added an opaque band. */
    if (cast->Bands > in->Bands) {
        if (vips_extract_band(cast, &bands, 0, "n", in->Bands, NULL))
            goto done;
    } else {
        g_object_ref(cast);
        bands = cast;
    }
    status = vips_insert(in, bands, out, left, top, NULL);
done:
    VIPS_UNREF(faded);
    VIPS_UNREF(area);
    VIPS_UNREF(blended);
    VIPS_UNREF(cast);
    VIPS_UNREF(bands);
    return status;
}
