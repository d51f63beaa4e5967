// A C target needs one source file; the module only re-exports <sys/xattr.h>.
#include "CFileSystem.h"
