// Recognising an embedded ICC profile that describes sRGB, so converting from it can be skipped.
#include "CVipsShim.h"
#include <math.h>
#include <string.h>

/* Converting from an embedded profile costs a small image more than the rest of its work (a
 * LittleCMS transform is built for each image). Photos and avatars very often carry a profile that
 * is sRGB itself, from which the conversion changes nothing beyond rounding; such a profile is
 * recognised by what it says, not by its name: RGB data over an XYZ connection space, no lookup
 * tables, the sRGB primaries (as adapted to D50) and the sRGB tone curve on every channel. */

static unsigned long be32(const unsigned char *p) {
    return (unsigned long) p[0] << 24 | (unsigned long) p[1] << 16 | (unsigned long) p[2] << 8 | p[3];
}

static double s15fixed16(const unsigned char *p) {
    return (double) (int32_t) be32(p) / 65536.0;
}

/* The tag's data and size, or NULL when absent or out of bounds. */
static const unsigned char *find_tag(const unsigned char *icc, size_t len, const char *signature, size_t *size) {
    unsigned long count = be32(icc + 128);
    if (count > (len - 132) / 12)
        return NULL;
    for (unsigned long i = 0; i < count; i++) {
        const unsigned char *entry = icc + 132 + i * 12;
        if (memcmp(entry, signature, 4) != 0)
            continue;
        unsigned long offset = be32(entry + 4), length = be32(entry + 8);
        if (offset > len || length > len - offset)
            return NULL;
        *size = length;
        return icc + offset;
    }
    return NULL;
}

static double srgb_curve(double x) {
    return x <= 0.04045 ? x / 12.92 : pow((x + 0.055) / 1.055, 2.4);
}

/* Whether a tone-curve tag is sRGB's to within a fifth of an 8-bit level. */
static int is_srgb_curve(const unsigned char *tag, size_t size) {
    if (size >= 12 && memcmp(tag, "curv", 4) == 0) {
        unsigned long entries = be32(tag + 8);
        if (entries < 2 || entries > (size - 12) / 2)
            return 0; /* a pure gamma (one entry) is not sRGB's curve */
        for (unsigned long i = 0; i < entries; i++) {
            double x = (double) i / (double) (entries - 1);
            double y = (double) (tag[12 + i * 2] << 8 | tag[13 + i * 2]) / 65535.0;
            if (fabs(y - srgb_curve(x)) > 0.2 / 255)
                return 0;
        }
        return 1;
    }
    if (size >= 12 + 5 * 4 && memcmp(tag, "para", 4) == 0 && (tag[8] << 8 | tag[9]) == 3) {
        double g = s15fixed16(tag + 12), a = s15fixed16(tag + 16), b = s15fixed16(tag + 20);
        double c = s15fixed16(tag + 24), d = s15fixed16(tag + 28);
        return fabs(g - 2.4) < 0.01 && fabs(a - 1 / 1.055) < 0.001 && fabs(b - 0.055 / 1.055) < 0.001 &&
            fabs(c - 1 / 12.92) < 0.001 && fabs(d - 0.04045) < 0.001;
    }
    return 0;
}

static int is_colorant(const unsigned char *icc, size_t len, const char *signature, double x, double y, double z) {
    size_t size;
    const unsigned char *tag = find_tag(icc, len, signature, &size);
    return tag && size >= 20 && memcmp(tag, "XYZ ", 4) == 0 && fabs(s15fixed16(tag + 8) - x) < 0.003 &&
        fabs(s15fixed16(tag + 12) - y) < 0.003 && fabs(s15fixed16(tag + 16) - z) < 0.003;
}

int ipv_icc_is_srgb(const void *data, size_t len) {
    const unsigned char *icc = data;
    if (!icc || len < 132 || be32(icc) > len || memcmp(icc + 16, "RGB ", 4) != 0 || memcmp(icc + 20, "XYZ ", 4) != 0)
        return 0;
    size_t size;
    /* Lookup tables, integer or float, take precedence over the matrix and curves in a colour engine. */
    const char *tables[] = { "A2B0", "A2B1", "A2B2", "D2B0", "D2B1", "D2B2" };
    for (int i = 0; i < 6; i++)
        if (find_tag(icc, len, tables[i], &size))
            return 0;
    if (!is_colorant(icc, len, "rXYZ", 0.4361, 0.2225, 0.0139) || !is_colorant(icc, len, "gXYZ", 0.3851, 0.7169, 0.0971) ||
        !is_colorant(icc, len, "bXYZ", 0.1431, 0.0606, 0.7141))
        return 0;
    const char *curves[] = { "rTRC", "gTRC", "bTRC" };
    for (int i = 0; i < 3; i++) {
        const unsigned char *tag = find_tag(icc, len, curves[i], &size);
        if (!tag || !is_srgb_curve(tag, size))
            return 0;
    }
    return 1;
}
