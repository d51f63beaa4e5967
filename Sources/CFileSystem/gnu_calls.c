// renameat2, sync_file_range and syncfs need _GNU_SOURCE, which must not reach the module's header: defined
// here alone, it cannot change how the system headers the Swift modules share are read.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "CFileSystem.h"

int ifs_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

int ifs_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

int ifs_syncfs(int fd) {
    return syncfs(fd);
}

int ifs_wait_writeback(int fd) {
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
}

int ifs_file_system(int fd, unsigned long long *device, long long *type) {
    struct stat info;
    struct statfs system;
    if (fstat(fd, &info) != 0 || fstatfs(fd, &system) != 0) return -1;
    *device = info.st_dev;
    *type = system.f_type;
    return 0;
}
