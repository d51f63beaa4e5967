// File-system calls that Glibc's Swift module leaves out: extended attributes.
#pragma once
#include <sys/types.h>
#include <sys/xattr.h>
