/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "file.h"

char *
kv_read_all(int fd, size_t max, size_t *len)
{
	char *buf = NULL, *nb;
	size_t n = 0, cap = 0;
	ssize_t r;

	for (;;) {
		if (n + 65536 + 1 > cap) {
			cap = cap ? 2 * cap : 131072;
			if ((nb = realloc(buf, cap)) == NULL) {
				free(buf);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return NULL;
		}
		n += (size_t)r;
		if (n > max) {
			free(buf);
			errno = EFBIG;
			return NULL;
		}
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}
