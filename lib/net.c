/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "net.h"

int
kv_listen(const char *host, const char *port, int backlog, char *err,
    size_t errlen)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, one = 1, rc, saved = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (host && *host == '\0')
		host = NULL;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "%s:%s: %s", host ? host : "*", port,
		    gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, backlog) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(err, errlen, "listen on %s:%s: %s", host ? host : "*",
		    port, strerror(saved));
	return fd;
}

int
kv_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

/* Connect fd to ai within timeout_s; 0 or -1 with errno set. */
static int
connect_timed(int fd, const struct addrinfo *ai, double timeout_s)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int flags = fcntl(fd, F_GETFL), soerr = 0, rc;
	socklen_t len = sizeof(soerr);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
	if (rc != 0 && errno != EINPROGRESS)
		return -1;
	if (rc != 0) {
		do
			rc = poll(&pfd, 1, (int)ceil(timeout_s * 1000));
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (rc < 0)
			return -1;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
			return -1;
		if (soerr != 0) {
			errno = soerr;
			return -1;
		}
	}
	return fcntl(fd, F_SETFL, flags);
}

int
kv_connect(const char *host, const char *port, double timeout_s, char *err,
    size_t errlen)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, one = 1, rc, saved = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "%s:%s: %s", host, port,
		    gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (connect_timed(fd, ai, timeout_s) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "connect to %s:%s: %s", host, port,
		    strerror(saved));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

ssize_t
kv_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			if (got == 0)
				return 0;
			errno = ECONNRESET;
			return -1;
		}
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int
kv_write_full(int fd, const void *buf, size_t len)
{
	size_t put = 0;
	ssize_t n;

	while (put < len) {
		n = send(fd, (const char *)buf + put, len - put, MSG_NOSIGNAL);
		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, (const char *)buf + put, len - put);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		put += (size_t)n;
	}
	return 0;
}

int
kv_set_timeouts(int fd, double seconds)
{
	struct timeval tv;

	tv.tv_sec = (time_t)seconds;
	tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
		return -1;
	return 0;
}
