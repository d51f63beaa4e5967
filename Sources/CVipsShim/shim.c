// Non-variadic wrappers over libvips calls, one per operation the compressor uses.
#define _GNU_SOURCE // dladdr
#include "CVipsShim.h"
#include "private.h"
#include <dlfcn.h>
#include <link.h>
#include <gmodule.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static void mark_errors(void);

/* libvips 8.14 compiles an Orc program for each resize it builds (reducev) under its global lock,
 * but frees it when the image is disposed without that lock, and liborc 0.4.33 edits its list of
 * code memory in both: a free on one compression thread beside a compile on the other corrupted
 * that list (a SIGSEGV in orc_code_allocate_codemem). Every resize is built, and every image let
 * go, under this one lock; building is cheap (the pixels are made later, outside it), and the
 * lock cannot be libvips' own, which disposing an image takes too. */
static GMutex programs_lock;

/* The modules of libvips that imagepipe uses: HEIC and AVIF (read and written), JPEG XL (written).
 * The others a Debian libvips carries (ImageMagick, PDF through poppler, OpenSlide) read nothing
 * imagepipe accepts, and loading them cost every process that starts libvips about 12 ms of CPU
 * (their libraries' relocations and static constructors), more in a worker's image helper, where
 * each symbol lookup walks the libraries those modules bring in. A module that is not there (a
 * libvips built with its loaders inside) is no error. */
static const char *const used_modules[] = {"vips-heif", "vips-jxl", NULL};

/* Why a module that is there did not load, for the worker to say; empty when all did. */
static char module_failure[512];

const char *ipv_module_failure(void) { return module_failure; }

/* Loads the used modules by name from the folder libvips would load its own from: beside libvips
 * itself, or, when the user set VIPSHOME, in VIPSHOME's library folder, named as libvips names it
 * (VIPSHOME/lib, or VIPSHOME/x86_64-linux-gnu where libvips lives in such a folder). Nothing else in
 * that folder is loaded: a module is code run in the zygote, before any sandbox, so a stray file
 * dropped beside imagepipe's two modules must not be run. */
static void load_used_modules(const char *vipshome) {
    Dl_info library;
    if (!dladdr((void *)vips_init, &library) || !library.dli_fname) return;
    char *directory = g_path_get_dirname(library.dli_fname);
    if (vipshome && *vipshome) {
        char *base = g_path_get_basename(directory);
        g_free(directory);
        directory = g_build_filename(vipshome, base, NULL);
        g_free(base);
    }
    for (const char *const *name = used_modules; *name; name++) {
        char *path = g_strdup_printf("%s/vips-modules-%d.%d/%s.so", directory, vips_version(0), vips_version(1), *name);
        // Kept open for the process's life, as libvips keeps the modules it loads itself.
        if (!g_module_open(path, G_MODULE_BIND_LAZY) && access(path, F_OK) == 0)
            snprintf(module_failure, sizeof module_failure, "%s", g_module_error());
        g_free(path);
    }
    g_free(directory);
}

static void *ref_class(GType type, void *unused) {
    (void)unused;
    // Kept referenced for the process's life, as libvips keeps the classes it uses.
    g_type_class_ref(type);
    return NULL;
}

void ipv_warm_classes(void) {
    vips_type_map_all(VIPS_TYPE_OPERATION, ref_class, NULL);
}

/* The shared objects mapped in this process, collected once by dl_iterate_phdr. */
static GPtrArray *loaded_libraries;

static int collect_library(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name && info->dlpi_name[0]) g_ptr_array_add((GPtrArray *)data, g_strdup(info->dlpi_name));
    return 0;
}

const char *ipv_loaded_library(size_t index) {
    if (!loaded_libraries) {
        loaded_libraries = g_ptr_array_new();
        dl_iterate_phdr(collect_library, loaded_libraries);
    }
    return index < loaded_libraries->len ? g_ptr_array_index(loaded_libraries, index) : NULL;
}

int ipv_init(const char *argv0) {
    // libvips loads every module in <VIPSHOME>/lib/vips-modules-X.Y as it starts; pointed at a prefix
    // that never exists (Debian's /nonexistent) it loads none, and the used ones are loaded after, by
    // name, from the user's VIPSHOME when one is set. The environment is changed as libvips changes
    // it itself when VIPSHOME is unset (it sets it to the prefix it guessed): one setenv, which may
    // move the environment while another thread reads it, either way; the setenv or unsetenv after
    // moves nothing but the pointers after it.
    const char *set = getenv("VIPSHOME");
    char *vipshome = set ? g_strdup(set) : NULL;
    setenv("VIPSHOME", "/nonexistent", 1);
    int status = VIPS_INIT(argv0 ? argv0 : "imagepipe");
    if (vipshome) setenv("VIPSHOME", vipshome, 1);
    else unsetenv("VIPSHOME");
    if (status == 0) load_used_modules(vipshome);
    g_free(vipshome);
    // Off from the start, not only once configured: large sources are opened as /proc/self/fd/N,
    // names that a later file reuses, and a cached image of the earlier one must never answer.
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_cache_set_max_files(0);
    return status;
}

void ipv_configure(int concurrency) {
    // Batch work never repeats an operation, so the cache only holds memory.
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_cache_set_max_files(0);
    vips_concurrency_set(concurrency > 0 ? concurrency : 1);
    // SVG, PDF, ImageMagick and other loaders not fuzzed for hostile input are refused.
    vips_block_untrusted_set(TRUE);
    // libvips 8.14 marks JPEG XL untrusted. Its saver only ever sees pixels imagepipe made. Its
    // loader reads back the outputs `auto` scores, and no source: one whose first bytes are JPEG
    // XL's is refused before libvips sees it (VipsCompressor.refuseUnreadFormats).
    vips_operation_block_set("VipsForeignSaveJxl", FALSE);
    vips_operation_block_set("VipsForeignLoadJxl", FALSE);
}

/* The header's loader also decodes images that need no shrink-on-load, so it fails on truncation as
 * the thumbnail loaders do. */
/* What a loader fails on: truncated data always, any warning too when asked (see ipv_header_buffer). */
static VipsFailOn fail_on(int refuse_warnings) {
    return refuse_warnings ? VIPS_FAIL_ON_WARNING : VIPS_FAIL_ON_TRUNCATED;
}

static const char *fail_on_option(int refuse_warnings) {
    return refuse_warnings ? "fail_on=warning" : "fail_on=truncated";
}

VipsImage *ipv_header_buffer(const void *buf, size_t len, int refuse_warnings) {
    mark_errors();
    return vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", fail_on(refuse_warnings), NULL);
}

/* A source on an open descriptor, read from its start: the descriptor may have been read to its end
 * when it was hashed, and it is the same open file whether the worker or a helper holds it. */
VipsSource *ipv_source_descriptor(int fd) {
    if (lseek(fd, 0, SEEK_SET) != 0) {
        vips_error("source", "cannot read the file again from its start");
        return NULL;
    }
    return vips_source_new_from_descriptor(fd);
}

VipsImage *ipv_header_descriptor(int fd, int refuse_warnings) {
    mark_errors();
    VipsSource *source = ipv_source_descriptor(fd);
    if (!source) return NULL;
    VipsImage *image = vips_image_new_from_source(source, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", fail_on(refuse_warnings), NULL);
    g_object_unref(source);
    return image;
}


const char *ipv_get_string(VipsImage *image, const char *name) {
    const char *value = NULL;
    // Asking for a field of another type would leave a message in libvips' shared error buffer.
    GType type = vips_image_get_typeof(image, name);
    if ((type == G_TYPE_STRING || type == VIPS_TYPE_REF_STRING) && vips_image_get_string(image, name, &value) == 0)
        return value;
    return NULL;
}

int ipv_get_int(VipsImage *image, const char *name, int fallback) {
    int value = fallback;
    if (vips_image_get_typeof(image, name) == G_TYPE_INT && vips_image_get_int(image, name, &value) == 0)
        return value;
    return fallback;
}

void ipv_forget_profile(VipsImage *image) {
    vips_image_remove(image, VIPS_META_ICC_NAME);
}

int ipv_orientation_swaps(VipsImage *image) {
    return vips_image_get_orientation_swap(image) ? 1 : 0;
}


/* Only the centre crop is left to the thumbnail: a smart crop would evaluate the image inside its
 * build, under programs_lock (see ipv_smartcrop), and a crop at an offset is not among its options. */
static VipsInteresting crop_mode(int crop) {
    return crop ? VIPS_INTERESTING_CENTRE : VIPS_INTERESTING_NONE;
}

int ipv_profile_needs_conversion(VipsImage *header) {
    const void *icc = NULL;
    size_t length = 0;
    if (header->Bands < 3 || (header->Type != VIPS_INTERPRETATION_sRGB && header->Type != VIPS_INTERPRETATION_RGB16) ||
        !vips_image_get_typeof(header, VIPS_META_ICC_NAME) || vips_image_get_blob(header, VIPS_META_ICC_NAME, &icc, &length))
        return 0;
    /* Only an RGB profile describes these pixels; libvips' colourspace step handles the rest as before. */
    if (length < 20 || memcmp((const unsigned char *) icc + 16, "RGB ", 4) != 0)
        return 0;
    return !ipv_icc_is_srgb(icc, length);
}

/* libvips 8.14's thumbnail converts pixels with an embedded profile only when given a profile to
 * export to; without one a Display P3 photo keeps its P3 values and, once stripped, shows dull in
 * every browser. Asked for on every image, it would also run images without a profile through a
 * colour transform; so only for those ipv_profile_needs_conversion picks (CMYK is converted
 * through its profile by libvips' colourspace step anyway). NULL leaves the option unset. */
static const char *export_profile(int to_srgb) {
    return to_srgb ? "srgb" : NULL;
}

int ipv_thumbnail_buffer(const void *buf, size_t len, int width, int height, int crop, int to_srgb, int refuse_warnings, VipsImage **out) {
    mark_errors();
    // libvips 8.14 does not forward fail_on to buffer loaders; the loader option string does.
    g_mutex_lock(&programs_lock);
    int status = vips_thumbnail_buffer((void *) buf, len, out, width,
        "option_string", fail_on_option(refuse_warnings),
        "height", height,
        "size", VIPS_SIZE_DOWN,
        "crop", crop_mode(crop),
        "fail_on", fail_on(refuse_warnings),
        "export_profile", export_profile(to_srgb),
        NULL);
    g_mutex_unlock(&programs_lock);
    return status;
}

int ipv_thumbnail_descriptor(int fd, int width, int height, int crop, int to_srgb, int refuse_warnings, VipsImage **out) {
    mark_errors();
    VipsSource *source = ipv_source_descriptor(fd);
    if (!source) return -1;
    g_mutex_lock(&programs_lock);
    // As for buffers, libvips 8.14 forwards fail_on to source loaders only through the option string.
    int status = vips_thumbnail_source(source, out, width,
        "option_string", fail_on_option(refuse_warnings),
        "height", height,
        "size", VIPS_SIZE_DOWN,
        "crop", crop_mode(crop),
        "fail_on", fail_on(refuse_warnings),
        "export_profile", export_profile(to_srgb),
        NULL);
    g_mutex_unlock(&programs_lock);
    g_object_unref(source);
    return status;
}

int ipv_thumbnail_image(VipsImage *in, int width, int height, int crop, int to_srgb, VipsImage **out) {
    mark_errors();
    g_mutex_lock(&programs_lock);
    int status = vips_thumbnail_image(in, out, width,
        "height", height,
        "size", VIPS_SIZE_DOWN,
        "crop", crop_mode(crop),
        "export_profile", export_profile(to_srgb),
        NULL);
    g_mutex_unlock(&programs_lock);
    return status;
}

int ipv_resize_exact(VipsImage *in, int width, int height, VipsImage **out) {
    mark_errors();
    g_mutex_lock(&programs_lock);
    int status = vips_thumbnail_image(in, out, width,
        "height", height,
        "size", VIPS_SIZE_FORCE,
        NULL);
    g_mutex_unlock(&programs_lock);
    return status;
}

/* libvips' smartcrop finds its crop in its build: for attention it shrinks a map of edges, skin and
 * saturation (a resize whose Orc program must be compiled and freed under programs_lock), so it
 * runs under the lock. It is only ever given the decode already resized to cover the box and held
 * in memory, so the lock is held for the analysis of a small image, never for a decode. */
int ipv_smartcrop(VipsImage *in, int width, int height, int attention, VipsImage **out) {
    mark_errors();
    g_mutex_lock(&programs_lock);
    int status = vips_smartcrop(in, out, width, height,
        "interesting", attention ? VIPS_INTERESTING_ATTENTION : VIPS_INTERESTING_ENTROPY, NULL);
    g_mutex_unlock(&programs_lock);
    return status;
}

int ipv_extract_area(VipsImage *in, int left, int top, int width, int height, VipsImage **out) {
    mark_errors();
    return vips_extract_area(in, out, left, top, width, height, NULL);
}

int ipv_to_srgb8(VipsImage *in, VipsImage **out) {
    mark_errors();
    VipsImage *srgb = NULL;
    if (in->Type == VIPS_INTERPRETATION_sRGB) {
        g_object_ref(in);
        srgb = in;
    } else if (vips_colourspace(in, &srgb, VIPS_INTERPRETATION_sRGB, NULL)) {
        return -1;
    }
    if (srgb->BandFmt == VIPS_FORMAT_UCHAR) {
        *out = srgb;
        return 0;
    }
    // A 16-bit sRGB-tagged image: keep the high byte rather than clip.
    int shift = srgb->BandFmt == VIPS_FORMAT_USHORT || srgb->BandFmt == VIPS_FORMAT_SHORT;
    int result = vips_cast(srgb, out, VIPS_FORMAT_UCHAR, "shift", shift, NULL);
    g_object_unref(srgb);
    return result;
}

int ipv_strip_metadata(VipsImage *in, VipsImage **out) {
    mark_errors();
    if (vips_copy(in, out, NULL))
        return -1;
    // libvips 8.14's WebP saver writes EXIF even with strip set, so the fields go before any saver sees them.
    gchar **fields = vips_image_get_fields(*out);
    for (int i = 0; fields[i] != NULL; i++) {
        const char *name = fields[i];
        if (g_str_has_prefix(name, "exif-") || g_str_has_prefix(name, "xmp-") || g_str_has_prefix(name, "iptc-") ||
            g_str_has_prefix(name, "icc-") || g_str_has_prefix(name, "gif-comment") || strcmp(name, VIPS_META_ORIENTATION) == 0)
            vips_image_remove(*out, name);
    }
    g_strfreev(fields);
    return 0;
}

int ipv_flatten_white(VipsImage *in, VipsImage **out) {
    mark_errors();
    double white[] = { 255.0, 255.0, 255.0 };
    VipsArrayDouble *background = vips_array_double_new(white, 3);
    int result = vips_flatten(in, out, "background", background, NULL);
    vips_area_unref(VIPS_AREA(background));
    return result;
}

int ipv_save_jpeg(VipsImage *in, int quality, int progressive, int full_chroma, int keep_metadata, void **buf, size_t *len) {
    mark_errors();
    return vips_jpegsave_buffer(in, buf, len,
        "Q", quality,
        "strip", keep_metadata ? FALSE : TRUE,
        "optimize_coding", TRUE,
        "interlace", progressive ? TRUE : FALSE,
        "subsample_mode", full_chroma ? VIPS_FOREIGN_SUBSAMPLE_OFF : VIPS_FOREIGN_SUBSAMPLE_AUTO,
        NULL);
}

int ipv_save_webp(VipsImage *in, int quality, int effort, int smart_subsample, int lossless, int keep_metadata, void **buf, size_t *len) {
    mark_errors();
    return vips_webpsave_buffer(in, buf, len,
        "Q", quality,
        "effort", effort,
        "smart_subsample", smart_subsample ? TRUE : FALSE,
        "lossless", lossless ? TRUE : FALSE,
        "strip", keep_metadata ? FALSE : TRUE,
        NULL);
}

int ipv_save_avif(VipsImage *in, int quality, int effort, int full_chroma, int keep_metadata, void **buf, size_t *len) {
    mark_errors();
    return vips_heifsave_buffer(in, buf, len,
        "Q", quality,
        "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1,
        "effort", effort,
        "bitdepth", 8,
        "subsample_mode", full_chroma ? VIPS_FOREIGN_SUBSAMPLE_OFF : VIPS_FOREIGN_SUBSAMPLE_AUTO,
        "strip", keep_metadata ? FALSE : TRUE,
        NULL);
}

int ipv_save_jxl(VipsImage *in, int quality, int effort, int lossless, int keep_metadata, void **buf, size_t *len) {
    mark_errors();
    return vips_jxlsave_buffer(in, buf, len,
        "Q", quality,
        "effort", effort,
        "lossless", lossless ? TRUE : FALSE,
        "strip", keep_metadata ? FALSE : TRUE,
        NULL);
}

int ipv_save(VipsImage *in, IpvFormat format, const IpvEncoding *encoding, void **buf, size_t *len) {
    const IpvEncoding *e = encoding;
    switch (format) {
    case IPV_FORMAT_JPEG: return ipv_save_jpeg(in, e->quality, e->progressive, e->full_chroma, e->keep_metadata, buf, len);
    case IPV_FORMAT_WEBP:
        return ipv_save_webp(in, e->quality, e->effort, e->smart_subsample, e->lossless, e->keep_metadata, buf, len);
    case IPV_FORMAT_AVIF: return ipv_save_avif(in, e->quality, e->effort, e->full_chroma, e->keep_metadata, buf, len);
    case IPV_FORMAT_PNG: return ipv_save_png(in, e->png_compression, e->keep_metadata, buf, len);
    case IPV_FORMAT_GIF: return ipv_save_gif(in, buf, len);
    case IPV_FORMAT_JXL: return ipv_save_jxl(in, e->quality, e->effort, e->lossless, e->keep_metadata, buf, len);
    }
    vips_error("imagepipe", "no encoder for format %d", (int) format);
    return -1;
}

int ipv_save_png(VipsImage *in, int compression, int keep_metadata, void **buf, size_t *len) {
    mark_errors();
    return vips_pngsave_buffer(in, buf, len,
        "compression", compression,
        "strip", keep_metadata ? FALSE : TRUE,
        NULL);
}

/* libpng and other loaders report why they failed as GLib warnings, not in the error buffer (which
 * then holds nothing or a generic "libpng read error"). The warnings raised on each thread are kept
 * here, per thread, so one image's reason never names another image being read at the same time. */
static _Thread_local char thread_warnings[1024];
static _Thread_local size_t thread_warnings_length;

/* libvips' error buffer is one per process and holds 10 KB: once full, every later message is
 * dropped, so a long-running worker would lose every reason after its first hundred or so. It is
 * therefore drained (copied and cleared in one step by vips_error_buffer_copy) into this log
 * whenever a libvips operation that may fail starts on any thread, and when a reason is taken. A
 * thread remembers the log's total length when its operation started and takes the text written
 * since: that operation's, and another thread's only when that one failed in the same moments (the
 * buffer does not say which thread wrote what). libvips' own checks clear the buffer in places
 * (tiffload's format check does); text cleared there before a drain is lost to everyone. */
static GMutex error_log_lock;
static char error_log[16384];
static size_t error_log_length;
/* Bytes ever appended to the log: offsets stay valid after old text is let go of. */
static unsigned long long error_log_total;
#define NOT_MARKED ULLONG_MAX
static _Thread_local unsigned long long operation_began_at = NOT_MARKED;

/* With error_log_lock held. */
static void drain_vips_errors(void) {
    char *drained = vips_error_buffer_copy();
    size_t length = drained ? strlen(drained) : 0;
    if (length >= sizeof error_log) {
        /* More than the whole log at once (cannot happen with libvips' 10 KB buffer): keep the end. */
        memcpy(error_log, drained + length - (sizeof error_log - 1), sizeof error_log - 1);
        error_log_length = sizeof error_log - 1;
    } else if (length > 0) {
        if (error_log_length + length >= sizeof error_log) {
            /* Let go of the oldest text, as much as the new needs. */
            size_t drop = error_log_length + length - (sizeof error_log - 1);
            memmove(error_log, error_log + drop, error_log_length - drop);
            error_log_length -= drop;
        }
        memcpy(error_log + error_log_length, drained, length);
        error_log_length += length;
    }
    error_log[error_log_length] = '\0';
    error_log_total += length;
    g_free(drained);
}

static void keep_thread_warning(const char *message) {
    size_t length = strlen(message);
    if (thread_warnings_length + length + 2 > sizeof thread_warnings)
        return;
    memcpy(thread_warnings + thread_warnings_length, message, length);
    thread_warnings_length += length;
    thread_warnings[thread_warnings_length++] = '\n';
    thread_warnings[thread_warnings_length] = '\0';
}

static void mark_errors(void) {
    g_mutex_lock(&error_log_lock);
    drain_vips_errors();
    operation_began_at = error_log_total;
    g_mutex_unlock(&error_log_lock);
}

void ipv_mark_operation(void) { mark_errors(); }

void ipv_begin_call(void) {
    thread_warnings_length = 0;
    thread_warnings[0] = '\0';
    mark_errors();
}

char *ipv_take_error(void) {
    g_mutex_lock(&error_log_lock);
    unsigned long long before = error_log_total;
    drain_vips_errors();
    /* A thread that marked nothing (a caller outside the compressor) gets only what this drain found. */
    unsigned long long began = operation_began_at == NOT_MARKED ? before : operation_began_at;
    unsigned long long since = error_log_total - began;
    /* Text older than the log holds is gone; what is left of this call's is still worth giving. */
    size_t kept = since < error_log_length ? (size_t)since : error_log_length;
    char *text = g_strconcat(thread_warnings, error_log + error_log_length - kept, NULL);
    operation_began_at = NOT_MARKED;
    g_mutex_unlock(&error_log_lock);
    thread_warnings_length = 0;
    thread_warnings[0] = '\0';
    if (text[0] == '\0') {
        g_free(text);
        return NULL;
    }
    return text;
}

VipsImage *ipv_copy_memory(VipsImage *in) {
    mark_errors();
    return vips_image_copy_memory(in);
}

void ipv_free(void *p) {
    g_free(p);
}

void ipv_unref(VipsImage *image) {
    if (image) {
        g_mutex_lock(&programs_lock);
        g_object_unref(image);
        g_mutex_unlock(&programs_lock);
    }
}

void ipv_thread_done(void) {
    vips_thread_shutdown();
}

static void (*warning_sink)(const char *) = NULL;

static void forward_warning(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void) domain; (void) data;
    if ((level & G_LOG_LEVEL_WARNING) && message)
        keep_thread_warning(message);
    if (warning_sink)
        warning_sink(message);
}

void ipv_set_warning_handler(void (*handler)(const char *message)) {
    warning_sink = handler;
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, forward_warning, NULL);
}

/* A loader's warning may be raised on a libvips worker thread, not the one that asked for the image,
 * so whether an image decodes cleanly is asked of the loader itself: fail_on=warning turns any
 * warning into a failure of this decode alone. Its failure text is taken and dropped, so that no
 * later image's reason names it. */
int ipv_decodes_cleanly(const void *buf, size_t len) {
    mark_errors();
    VipsImage *image = vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_WARNING, NULL);
    double mean = 0;
    int clean = image != NULL && vips_avg(image, &mean, NULL) == 0;
    ipv_unref(image);
    g_free(ipv_take_error());
    return clean;
}
