/* SPDX-License-Identifier: MIT */
#ifndef KV_FILE_H
#define KV_FILE_H

#include <stddef.h>

/*
 * Read all of fd into a NUL-terminated buffer (the caller frees it) and
 * store its length in *len.  Returns NULL with errno set on a read error,
 * ENOMEM, or EFBIG when the data exceeds max bytes.  Retries on EINTR.
 */
char *kv_read_all(int fd, size_t max, size_t *len);

#endif
