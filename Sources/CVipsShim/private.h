// What the shim's C files share among themselves and do not show Swift.
#ifndef CVIPSSHIM_PRIVATE_H
#define CVIPSSHIM_PRIVATE_H
/// Marks where the error text of the libvips operation about to start begins (see ipv_take_error).
void ipv_mark_operation(void);

/// A libvips source reading the open file `fd` from its start.
VipsSource *ipv_source_descriptor(int fd);
#endif
