// renameat2 needs _GNU_SOURCE, which must not reach the module's header: defined here alone, it
// cannot change how the system headers the Swift modules share are read.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include "CFileSystem.h"

int ifs_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}
