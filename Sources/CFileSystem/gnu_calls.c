// renameat2 and sync_file_range need _GNU_SOURCE, which must not reach the module's header: defined
// here alone, it cannot change how the system headers the Swift modules share are read.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include "CFileSystem.h"

int ifs_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

int ifs_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}
