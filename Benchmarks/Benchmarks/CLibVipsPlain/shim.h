// libvips for the plain reference the benchmark suite measures imagepipe against (pkg-config vips).
#include <vips/vips.h>
