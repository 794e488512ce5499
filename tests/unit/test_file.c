/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "file.h"
#include "unit.h"

/* A pipe holding n bytes of 'x', write end closed. */
static int
pipe_of(size_t n)
{
	int p[2];
	char buf[4096];

	memset(buf, 'x', sizeof(buf));
	if (pipe(p) != 0)
		return -1;
	while (n > 0) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);

		if (write(p[1], buf, k) != (ssize_t)k)
			return -1;
		n -= k;
	}
	close(p[1]);
	return p[0];
}

int
main(void)
{
	size_t len = 99;
	char *b;
	int fd;

	fd = pipe_of(0);
	b = kv_read_all(fd, 10, &len);
	CHECK(b != NULL && len == 0 && b[0] == '\0');
	free(b);
	close(fd);

	fd = pipe_of(40000);
	b = kv_read_all(fd, 40000, &len);
	CHECK(b != NULL && len == 40000 && b[39999] == 'x' && b[40000] == '\0');
	free(b);
	close(fd);

	fd = pipe_of(40001);
	errno = 0;
	b = kv_read_all(fd, 40000, &len);
	CHECK(b == NULL && errno == EFBIG);
	close(fd);

	errno = 0;
	CHECK(kv_read_all(-1, 10, &len) == NULL && errno == EBADF);
	return DONE("test_file");
}
