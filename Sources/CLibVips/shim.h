// The libvips headers, as one module for Swift and the C shim.
#include <vips/vips.h>
