/* SPDX-License-Identifier: MIT */
#ifndef KV_NET_H
#define KV_NET_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Listen on host:port (host NULL or "" for any address; port "0" for an
 * ephemeral one) with SO_REUSEADDR.  Returns the socket, or -1 with the
 * reason in err.
 */
int kv_listen(const char *host, const char *port, int backlog, char *err,
    size_t errlen);

/* The local port a socket is bound to, or -1. */
int kv_local_port(int fd);

/*
 * Connect to host:port within timeout_s seconds (every address getaddrinfo
 * gives, in order).  Returns a blocking socket with TCP_NODELAY set, or -1
 * with the reason in err.
 */
int kv_connect(const char *host, const char *port, double timeout_s,
    char *err, size_t errlen);

/* Read or write exactly len bytes, retrying on EINTR.  read_full returns
 * len, 0 on EOF before any byte, -1 on error or EOF mid-way (errno
 * ECONNRESET then).  write_full returns 0 or -1. */
ssize_t kv_read_full(int fd, void *buf, size_t len);
int kv_write_full(int fd, const void *buf, size_t len);

/* Set SO_RCVTIMEO and SO_SNDTIMEO; 0 or -1. */
int kv_set_timeouts(int fd, double seconds);

#endif
