// File-system calls that Glibc's Swift module leaves out: extended attributes, renameat2, sync_file_range.
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
