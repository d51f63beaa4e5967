// File-system calls that Glibc's Swift module leaves out: extended attributes, renameat2.
#pragma once
#include <sys/types.h>
#include <sys/xattr.h>

/// Renames `from` to `to` only if `to` does not exist (RENAME_NOREPLACE): 0, or -1 with errno
/// (EEXIST when taken; EINVAL or ENOSYS where the file system or kernel cannot).
int ifs_rename_noreplace(const char *from, const char *to);
