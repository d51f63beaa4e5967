// File-system calls that Glibc's Swift module leaves out: extended attributes, renameat2, sync_file_range, syncfs.
#pragma once
#include <sys/types.h>
#include <sys/xattr.h>

/// Renames `from` to `to` only if `to` does not exist (RENAME_NOREPLACE): 0, or -1 with errno
/// (EEXIST when taken; EINVAL or ENOSYS where the file system or kernel cannot).
int ifs_rename_noreplace(const char *from, const char *to);

/// Starts writing the file's dirty pages to disk without waiting for them (sync_file_range with
/// SYNC_FILE_RANGE_WRITE): 0, or -1 with errno. It makes nothing durable by itself; it lets the
/// fsyncs that follow find the data already on its way.
int ifs_start_writeback(int fd);

/// Commits the whole file system holding `fd` (syncfs): 0, or -1 with errno. Since Linux 5.8 it
/// also reports a write-back error anywhere on that file system since `fd` was opened or last
/// reported one, so an error may be another file's.
int ifs_syncfs(int fd);

/// Waits for the file's write-back to end and reports a write-back error of this file since `fd`
/// was opened or last reported one (sync_file_range with WAIT_BEFORE, WRITE and WAIT_AFTER): 0, or
/// -1 with errno. It flushes nothing and commits no metadata.
int ifs_wait_writeback(int fd);

/// The device and the file-system type (statfs's f_type) of the file `fd` is open on: 0, or -1 with errno.
int ifs_file_system(int fd, unsigned long long *device, long long *type);
