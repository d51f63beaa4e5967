// The C program on libvips `imagepipe bench --compare` measures imagepipe against: the same outputs with nothing else (no hashing, no placeholder, no fsync, no records).
// Usage: SOURCE_DIR DEST_DIR WORKERS SPEC... with SPEC name:width:height:format:quality:fit:progressive:effort.
#define _XOPEN_SOURCE 700
#include <vips/vips.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    char name[64], format[8];
    int width, height, quality, cover, progressive, effort;
} Spec;

static const char *source, *dest;
static Spec *specs;
static int spec_count;
static char **files;
static size_t file_count, file_capacity;
static atomic_size_t next_file;
static atomic_int failures;

static int collect(const char *path, const struct stat *info, int type, struct FTW *ftw) {
    (void) info;
    if (type == FTW_F && path[ftw->base] != '.') {
        if (file_count == file_capacity) {
            file_capacity = file_capacity ? 2 * file_capacity : 256;
            files = realloc(files, file_capacity * sizeof *files);
        }
        files[file_count++] = strdup(path + strlen(source) + 1);
    }
    /* Hidden folders are skipped whole, as imagepipe skips them. */
    return type == FTW_D && ftw->level > 0 && path[ftw->base] == '.' ? FTW_SKIP_SUBTREE : FTW_CONTINUE;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The size a spec gives a w x h image, never enlarged: inside the box, or filling it (cover). */
static void fitted(const Spec *spec, int w, int h, int *out_w, int *out_h) {
    double sx = (double) spec->width / w, sy = (double) spec->height / h;
    double scale = spec->cover ? (sx > sy ? sx : sy) : (sx < sy ? sx : sy);
    if (scale > 1)
        scale = 1;
    *out_w = (int) (w * scale + 0.5) > 0 ? (int) (w * scale + 0.5) : 1;
    *out_h = (int) (h * scale + 0.5) > 0 ? (int) (h * scale + 0.5) : 1;
}

static void make_parents(char *path) {
    for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0755);
        *slash = '/';
    }
}

/* libvips 8.14's WebP saver writes EXIF and XMP even with strip set; imagepipe's WebP outputs
 * carry none, so the fields go first here too (EXIF's own thumbnail included; what is left is a
 * 186-byte EXIF block the saver makes from the resolution, which imagepipe cuts from its bytes). */
static VipsImage *without_metadata(VipsImage *in) {
    VipsImage *out = NULL;
    if (vips_copy(in, &out, NULL))
        return NULL;
    gchar **fields = vips_image_get_fields(out);
    for (int i = 0; fields[i]; i++)
        if (g_str_has_prefix(fields[i], "exif-") || g_str_has_prefix(fields[i], "xmp-") ||
            g_str_has_prefix(fields[i], "iptc-") || g_str_has_prefix(fields[i], "icc-") ||
            g_str_has_prefix(fields[i], "jpeg-thumbnail") ||
            strcmp(fields[i], VIPS_META_ORIENTATION) == 0)
            vips_image_remove(out, fields[i]);
    g_strfreev(fields);
    return out;
}

static int save(VipsImage *image, const Spec *spec, const char *path) {
    if (strcmp(spec->format, "jpeg") == 0) {
        VipsImage *flat = NULL;
        if (vips_image_hasalpha(image)) {
            VipsArrayDouble *white = vips_array_double_newv(3, 255.0, 255.0, 255.0);
            int failed = vips_flatten(image, &flat, "background", white, NULL);
            vips_area_unref(VIPS_AREA(white));
            if (failed)
                return -1;
            image = flat;
        }
        int result = vips_jpegsave(image, path, "Q", spec->quality, "strip", TRUE, "optimize_coding", TRUE,
            "interlace", spec->progressive > 0 && VIPS_MAX(image->Xsize, image->Ysize) >= spec->progressive, NULL);
        if (flat)
            g_object_unref(flat);
        return result;
    }
    if (strcmp(spec->format, "webp") == 0) {
        VipsImage *bare = without_metadata(image);
        if (!bare)
            return -1;
        int result = vips_webpsave(bare, path, "Q", spec->quality, "effort", spec->effort, "strip", TRUE, NULL);
        g_object_unref(bare);
        return result;
    }
    if (strcmp(spec->format, "avif") == 0)
        return vips_heifsave(image, path, "Q", spec->quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1,
            "effort", spec->effort, "bitdepth", 8, "strip", TRUE, NULL);
    return vips_pngsave(image, path, "strip", TRUE, NULL);
}

/* One image: one shrink-on-load decode at the largest size any variant needs, then each variant. */
static int job(const char *relative) {
    char path[4096], out[4096];
    snprintf(path, sizeof path, "%s/%s", source, relative);
    VipsImage *header = vips_image_new_from_file(path, NULL);
    if (!header)
        return -1;
    int w = header->Xsize, h = header->Ysize;
    if (vips_image_get_orientation_swap(header)) {
        int t = w;
        w = h;
        h = t;
    }
    g_object_unref(header);
    int largest_w = 1, largest_h = 1;
    for (int i = 0; i < spec_count; i++) {
        int vw, vh;
        fitted(&specs[i], w, h, &vw, &vh);
        largest_w = vw > largest_w ? vw : largest_w;
        largest_h = vh > largest_h ? vh : largest_h;
    }
    VipsImage *lazy = NULL, *big = NULL;
    if (vips_thumbnail(path, &lazy, largest_w, "height", largest_h, "size", VIPS_SIZE_DOWN, NULL))
        return -1;
    big = vips_image_copy_memory(lazy);
    g_object_unref(lazy);
    if (!big)
        return -1;
    /* Already sRGB: without the profile, thumbnail_image does not convert it again. */
    vips_image_remove(big, VIPS_META_ICC_NAME);
    int result = 0;
    const char *dot = strrchr(relative, '.'), *slash = strrchr(relative, '/');
    int stem = dot && (!slash || dot > slash) ? (int) (dot - relative) : (int) strlen(relative);
    for (int i = 0; i < spec_count && result == 0; i++) {
        const Spec *spec = &specs[i];
        VipsImage *variant = NULL;
        if (vips_thumbnail_image(big, &variant, spec->width, "height", spec->height, "size", VIPS_SIZE_DOWN,
                "crop", spec->cover ? VIPS_INTERESTING_CENTRE : VIPS_INTERESTING_NONE, NULL)) {
            result = -1;
            break;
        }
        const char *ext = strcmp(spec->format, "jpeg") == 0 ? "jpg" : spec->format;
        snprintf(out, sizeof out, "%s/%.*s-%s.%s", dest, stem, relative, spec->name, ext);
        make_parents(out);
        result = save(variant, spec, out);
        g_object_unref(variant);
    }
    g_object_unref(big);
    return result;
}

static void *worker(void *unused) {
    (void) unused;
    for (size_t index; (index = atomic_fetch_add(&next_file, 1)) < file_count;) {
        if (job(files[index])) {
            fprintf(stderr, "%s: %s", files[index], vips_error_buffer());
            atomic_fetch_add(&failures, 1);
        }
    }
    vips_thread_shutdown();
    return NULL;
}

int main(int argc, char **argv) {
    if (VIPS_INIT(argv[0]) || argc < 5) {
        fprintf(stderr, "usage: %s SOURCE_DIR DEST_DIR WORKERS SPEC...\n", argv[0]);
        return 2;
    }
    source = argv[1];
    dest = argv[2];
    int workers = atoi(argv[3]);
    spec_count = argc - 4;
    specs = calloc(spec_count, sizeof *specs);
    for (int i = 0; i < spec_count; i++) {
        char fit[16] = "";
        Spec *s = &specs[i];
        if (sscanf(argv[4 + i], "%63[^:]:%d:%d:%7[^:]:%d:%15[^:]:%d:%d", s->name, &s->width, &s->height, s->format,
                &s->quality, fit, &s->progressive, &s->effort) != 8) {
            fprintf(stderr, "bad spec %s\n", argv[4 + i]);
            return 2;
        }
        s->cover = strcmp(fit, "cover") == 0;
    }
    vips_cache_set_max(0);
    vips_concurrency_set(1);
    if (nftw(source, collect, 32, FTW_PHYS | FTW_ACTIONRETVAL) != 0)
        return 2;
    qsort(files, file_count, sizeof *files, by_name);
    pthread_t threads[64];
    int count = workers < 1 ? 1 : workers > 64 ? 64 : workers;
    int started = 0;
    while (started < count && pthread_create(&threads[started], NULL, worker, NULL) == 0)
        started++;
    if (started == 0)
        worker(NULL);
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    return failures ? 1 : 0;
}
