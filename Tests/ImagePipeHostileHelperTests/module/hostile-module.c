// A hostile libvips module, for the tests alone: code run inside a real image helper as an exploit
// of a decoder would run it. The tests build it with the system's compiler, install it as the JPEG XL
// module of a VIPSHOME of their own (one of the two modules imagepipe loads, by name), and start the
// worker as root with that VIPSHOME.
//
// Loading it registers a loader class of the highest priority, so that libvips asks it first whether
// it reads each source: that question runs in the helper, inside its sandbox, with the source's first
// bytes. A JPEG whose first segment is a comment "IMAGEPIPE-HOSTILE:<action>[:<argument>]" makes it
// act; it then answers no, and libvips decodes the image as usual. Each action writes what it met to
// standard error, one line starting "hostile <action>:", which the worker logs as the helper's output.
// It never changes anything when the sandbox lets an attempt through: values the kernel refuses
// (EINVAL) once past the sandbox, a memory file's file system, which cannot be frozen, and
// sources the tests keep on tmpfs.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <vips/vips.h>

#define FIFREEZE_COMMAND 0xC0045877u
#define EXT4_IOC_SHUTDOWN_COMMAND 0x8004587Du
#define FS_IOC_GETFLAGS_COMMAND 0x80086601u
#define TRIGGER "IMAGEPIPE-HOSTILE:"

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *format, ...) {
    char line[1024];
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(line, sizeof line - 1, format, arguments);
    va_end(arguments);
    if (length < 0) return;
    if (length > (int) sizeof line - 2) length = (int) sizeof line - 2;
    line[length++] = '\n';
    ssize_t ignored = write(2, line, (size_t) length);
    (void) ignored;
}

// What an attempt met: "ok" when it went through, else the errno's name.
static const char *outcome(long status) {
    if (status >= 0) return "ok";
    switch (errno) {
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case ENOTTY: return "ENOTTY";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENOENT: return "ENOENT";
    case EBADF: return "EBADF";
    default: return "other";
    }
}

static void report_identity(const char *where) {
    uid_t ruid = 0, euid = 0, suid = 0;
    gid_t rgid = 0, egid = 0, sgid = 0;
    getresuid(&ruid, &euid, &suid);
    getresgid(&rgid, &egid, &sgid);
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    syscall(SYS_capget, &header, data);
    unsigned long long bounding = 0;
    for (int capability = 0; capability < 64; capability++) {
        int held = prctl(PR_CAPBSET_READ, capability, 0, 0, 0);
        if (held < 0) break;
        if (held == 1) bounding |= 1ull << capability;
    }
    say("hostile identity: where=%s uid=%u euid=%u suid=%u gid=%u effective=%#llx permitted=%#llx bounding=%#llx", where, ruid,
        euid, suid, rgid, (unsigned long long) data[0].effective | ((unsigned long long) data[1].effective << 32),
        (unsigned long long) data[0].permitted | ((unsigned long long) data[1].permitted << 32), bounding);
}

// FIFREEZE and EXT4_IOC_SHUTDOWN on every descriptor the helper holds (the source among them, which
// the tests keep on tmpfs: neither can freeze or shut that down), and an ioctl that any process may
// make, which only the filter refuses.
static void attack_file_systems(void) {
    for (int fd = 0; fd < 256; fd++) {
        struct stat status;
        if (fstat(fd, &status) != 0) continue;
        int flags = 2;  // EXT4_GOING_FLAGS_NOLOGFLUSH
        long frozen = ioctl(fd, FIFREEZE_COMMAND, 0);
        const char *freeze = outcome(frozen);
        long shut = ioctl(fd, EXT4_IOC_SHUTDOWN_COMMAND, &flags);
        const char *shutdown = outcome(shut);
        long attributes = 0;
        const char *getflags = outcome(ioctl(fd, FS_IOC_GETFLAGS_COMMAND, &attributes));
        say("hostile freeze: fd=%d type=%s fifreeze=%s shutdown=%s getflags=%s", fd, S_ISREG(status.st_mode) ? "file" : "other", freeze,
            shutdown, getflags);
    }
}

static void attack_clock(void) {
    struct timex change;
    memset(&change, 0, sizeof change);
    change.modes = ADJ_TICK;
    change.tick = 0;  // refused by the kernel (EINVAL) once past the sandbox and the capability check
    const char *adjust = outcome(adjtimex(&change));
    struct timespec invalid = {.tv_sec = 0, .tv_nsec = 2000000000L};  // refused by the kernel (EINVAL)
    const char *set = outcome(syscall(SYS_clock_settime, CLOCK_REALTIME, &invalid));
    say("hostile clock: adjtimex=%s clock_settime=%s", adjust, set);
}

static void attack_scheduling(void) {
    struct sched_param parameter = {.sched_priority = 0};  // FIFO takes 1 to 99: EINVAL once past the sandbox
    const char *fifo = outcome(syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &parameter));
    const char *nice = outcome(setpriority(PRIO_PROCESS, 0, -1));
    const char *ioprio = outcome(syscall(SYS_ioprio_set, 1, 0, (1 << 13) | 4));
    static char page[4096] __attribute__((aligned(4096)));
    const char *lock = outcome(syscall(SYS_mlock2, page, sizeof page, ~1u));  // an invalid flag: EINVAL past the sandbox
    say("hostile sched: fifo=%s nice=%s ioprio=%s mlock=%s", fifo, nice, ioprio, lock);
}

static void attack_paths(void) {
    struct stat status;
    const char *stat_path = outcome(syscall(SYS_newfstatat, AT_FDCWD, "/etc/passwd", &status, 0));
    const char *stat_flag = outcome(syscall(SYS_newfstatat, 0, "/etc/passwd", &status, AT_EMPTY_PATH));
    const char *access_path = outcome(syscall(SYS_faccessat, AT_FDCWD, "/etc/passwd", R_OK, 0));
    char target[256];
    const char *link = outcome(syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", target, sizeof target));
    long fd = syscall(SYS_openat, AT_FDCWD, "/", O_PATH | O_CLOEXEC);
    const char *path_only = outcome(fd);
    if (fd >= 0) close((int) fd);
    say("hostile paths: stat=%s stat_empty_path=%s access=%s readlink=%s o_path=%s", stat_path, stat_flag, access_path, link, path_only);
}

// A reply the worker did not ask for, sent on the helper's channel (descriptor 3) while its job is
// under way: a well-formed "failed" reply with a nonce of 0, which no job has, and a reason of its own.
static void send_stray_reply(void) {
    unsigned char message[256];
    size_t length = 0;
    message[length++] = 15;  // failed
    memset(message + length, 0, 8);  // the nonce
    length += 8;
    const char *code = "corrupt_image", *reason = "a stray reply from a hostile helper";
    unsigned long long sizes[2] = {strlen(code), strlen(reason)};
    const char *texts[2] = {code, reason};
    for (int i = 0; i < 2; i++) {
        memcpy(message + length, &sizes[i], 8);
        length += 8;
        memcpy(message + length, texts[i], sizes[i]);
        length += sizes[i];
    }
    struct iovec vector = {.iov_base = message, .iov_len = length};
    struct msghdr header = {.msg_iov = &vector, .msg_iovlen = 1};
    say("hostile stray: sendmsg=%s", outcome(sendmsg(3, &header, MSG_NOSIGNAL)));
}

static int free_forged(void *data, void *area) {
    (void) area;
    g_free(data);
    return 0;
}

// The JPEG saver's build, taken over: it runs the real one, then replaces what it made by an HTML
// page ("forge"), or by the real JPEG with the size in its frame header changed to 1x1 ("forge-size").
static int (*real_build)(VipsObject *object);
static int forge_size;

static int forged_build(VipsObject *object) {
    int status = real_build(object);
    if (status != 0) return status;
    VipsBlob *made = NULL;
    g_object_get(object, "buffer", &made, NULL);
    if (made == NULL) return status;
    size_t length = 0;
    const unsigned char *bytes = vips_blob_get(made, &length);
    unsigned char *forged;
    size_t forged_length;
    if (forge_size) {
        forged = g_memdup2(bytes, length);
        forged_length = length;
        for (size_t at = 2; at + 9 < length; at++) {
            if (forged[at] == 0xFF && forged[at + 1] >= 0xC0 && forged[at + 1] <= 0xC2) {
                forged[at + 5] = 0, forged[at + 6] = 1, forged[at + 7] = 0, forged[at + 8] = 1;
                break;
            }
        }
    } else {
        const char *page = "<!doctype html><html><body><script>document.location='https://attacker.invalid/'</script></body></html>";
        forged = (unsigned char *) g_strdup(page);
        forged_length = strlen(page);
    }
    vips_area_unref(VIPS_AREA(made));
    VipsBlob *replacement = vips_blob_new(free_forged, forged, forged_length);
    g_object_set(object, "buffer", replacement, NULL);
    vips_area_unref(VIPS_AREA(replacement));
    say("hostile forge: jpeg output replaced by %s", forge_size ? "a jpeg stating 1x1" : "an html page");
    return 0;
}

static void take_over_jpeg_saver(int size_only) {
    forge_size = size_only;
    if (real_build != NULL) return;
    VipsObjectClass *saver = VIPS_OBJECT_CLASS(g_type_class_ref(g_type_from_name("VipsForeignSaveJpegBuffer")));
    real_build = saver->build;
    saver->build = forged_build;
}

// Which sources this process has seen: a helper must never meet two of them.
static char seen[32][24];
static int seen_count;

static void observe(const char *argument) {
    for (int i = 0; i < seen_count; i++)
        if (strcmp(seen[i], argument) == 0) return;
    if (seen_count < 32) snprintf(seen[seen_count++], sizeof seen[0], "%s", argument);
    char list[600] = "";
    for (int i = 0; i < seen_count; i++) {
        strncat(list, i ? "," : "", sizeof list - strlen(list) - 1);
        strncat(list, seen[i], sizeof list - strlen(list) - 1);
    }
    say("hostile observe: pid=%d seen=%s", (int) getpid(), list);
}

// Each action once per process, however often libvips asks.
static int done_actions;

static void act(const unsigned char *bytes, size_t length) {
    // FF D8, then a comment segment (FF FE, a 16-bit length) holding the trigger.
    if (length < 6 || bytes[0] != 0xFF || bytes[1] != 0xD8 || bytes[2] != 0xFF || bytes[3] != 0xFE) return;
    size_t segment = (size_t) bytes[4] << 8 | bytes[5];
    if (segment < 2 || 4 + segment > length) return;
    char text[256];
    size_t count = segment - 2 < sizeof text - 1 ? segment - 2 : sizeof text - 1;
    memcpy(text, bytes + 6, count);
    text[count] = '\0';
    if (strncmp(text, TRIGGER, strlen(TRIGGER)) != 0) return;
    const char *action = text + strlen(TRIGGER);
    char name[64];
    const char *colon = strchr(action, ':');
    snprintf(name, sizeof name, "%.*s", colon ? (int) (colon - action) : (int) strlen(action), action);
    const char *argument = colon ? colon + 1 : "";
    if (strcmp(name, "observe") == 0) return observe(argument);
    static const char *const names[] = {"identity", "freeze", "clock", "sched", "paths", "stray", "forge", "forge-size"};
    for (int i = 0; i < (int) (sizeof names / sizeof names[0]); i++) {
        if (strcmp(name, names[i]) != 0 || (done_actions & (1 << i))) continue;
        done_actions |= 1 << i;
        switch (i) {
        case 0: report_identity("helper"); break;
        case 1: attack_file_systems(); break;
        case 2: attack_clock(); break;
        case 3: attack_scheduling(); break;
        case 4: attack_paths(); break;
        case 5: send_stray_reply(); break;
        case 6: take_over_jpeg_saver(0); break;
        case 7: take_over_jpeg_saver(1); break;
        }
    }
}

// The loader classes: one asked about sources, one about buffers. Neither ever claims an image.
typedef VipsForeignLoad HostileLoad;
typedef VipsForeignLoadClass HostileLoadClass;

static gboolean is_a_source(VipsSource *source) {
    const unsigned char *bytes = vips_source_sniff(source, 255);
    if (bytes != NULL) act(bytes, 255);
    return FALSE;
}

static gboolean is_a_buffer(const void *buffer, size_t length) {
    act(buffer, length);
    return FALSE;
}

static VipsForeignFlags get_flags(VipsForeignLoad *load) {
    (void) load;
    return 0;
}

static int header(VipsForeignLoad *load) {
    (void) load;
    return -1;
}

G_DEFINE_TYPE(HostileLoad, hostile_load_source, VIPS_TYPE_FOREIGN_LOAD);

static void hostile_load_source_class_init(HostileLoadClass *class) {
    VipsObjectClass *object_class = VIPS_OBJECT_CLASS(class);
    object_class->nickname = "hostileload_source";
    object_class->description = "a hostile module's loader (tests only)";
    VIPS_FOREIGN_CLASS(class)->priority = 1000;
    class->is_a_source = is_a_source;
    class->get_flags = get_flags;
    class->header = header;
}

static void hostile_load_source_init(HostileLoad *load) { (void) load; }

typedef VipsForeignLoad HostileBufferLoad;
typedef VipsForeignLoadClass HostileBufferLoadClass;

G_DEFINE_TYPE(HostileBufferLoad, hostile_load_buffer, VIPS_TYPE_FOREIGN_LOAD);

static void hostile_load_buffer_class_init(HostileBufferLoadClass *class) {
    VipsObjectClass *object_class = VIPS_OBJECT_CLASS(class);
    object_class->nickname = "hostileload_buffer";
    object_class->description = "a hostile module's loader (tests only)";
    VIPS_FOREIGN_CLASS(class)->priority = 1000;
    class->is_a_buffer = is_a_buffer;
    class->get_flags = get_flags;
    class->header = header;
}

static void hostile_load_buffer_init(HostileBufferLoad *load) { (void) load; }

// Run when the module is loaded: in the zygote, before any sandbox, as libvips starts.
G_MODULE_EXPORT const gchar *g_module_check_init(GModule *module) {
    (void) module;
    report_identity("module-load");
    hostile_load_source_get_type();
    hostile_load_buffer_get_type();
    // Kept loaded: its classes stay registered for the process's life.
    g_module_make_resident(module);
    return NULL;
}
