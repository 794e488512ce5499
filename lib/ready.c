/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clock.h"
#include "net.h"
#include "proc.h"
#include "ready.h"

/* libcurl's entry points, from dlopen: linked in, its dependencies would
 * add some 8 ms to every start. */
static struct {
	CURLcode (*global_init)(long);
	CURL *(*init)(void);
	CURLcode (*setopt)(CURL *, CURLoption, ...);
	CURLcode (*perform)(CURL *);
	CURLcode (*getinfo)(CURL *, CURLINFO, ...);
	void (*cleanup)(CURL *);
} cu;

int
ready_split_hostport(const char *s, char *host, size_t hlen, char *port,
    size_t plen)
{
	const char *colon = strrchr(s, ':');
	size_t n;

	if (colon == NULL || colon == s || colon[1] == '\0')
		return -1;
	n = (size_t)(colon - s);
	if (s[0] == '[' && n >= 2 && s[n - 1] == ']')
		s++, n -= 2;
	if (n == 0 || n >= hlen || strlen(colon + 1) >= plen)
		return -1;
	memcpy(host, s, n);
	host[n] = '\0';
	snprintf(port, plen, "%s", colon + 1);
	return 0;
}

int
ready_init(const struct ready *r, char *err, size_t errlen)
{
	static const char *const names[] = { "curl_global_init",
	    "curl_easy_init", "curl_easy_setopt", "curl_easy_perform",
	    "curl_easy_getinfo", "curl_easy_cleanup" };
	void **slot[] = { (void **)&cu.global_init, (void **)&cu.init,
	    (void **)&cu.setopt, (void **)&cu.perform, (void **)&cu.getinfo,
	    (void **)&cu.cleanup };
	void *h;

	if (r->http == NULL)
		return 0;
	if ((h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(err, errlen, "%s (is libcurl4 installed?)", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((*slot[i] = dlsym(h, names[i])) == NULL) {
			snprintf(err, errlen, "%s", dlerror());
			return -1;
		}
	}
	if (cu.global_init(CURL_GLOBAL_DEFAULT) != 0) {
		snprintf(err, errlen, "curl_global_init failed");
		return -1;
	}
	return 0;
}

static size_t
discard(char *p, size_t size, size_t n, void *ctx)
{
	return size * n;
}

static bool
probe_http(const char *url, double end)
{
	CURL *c = cu.init ? cu.init() : NULL;
	long code = 0;
	bool ok;

	if (c == NULL)
		return false;
	cu.setopt(c, CURLOPT_URL, url);
	cu.setopt(c, CURLOPT_TIMEOUT_MS,
	    (long)fmax(1.0, fmin(1000.0, 1000.0 * (end - kv_mono()))));
	cu.setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu.setopt(c, CURLOPT_WRITEFUNCTION, discard);
	ok = cu.perform(c) == CURLE_OK &&
	    cu.getinfo(c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
	    code >= 200 && code < 300;
	cu.cleanup(c);
	return ok;
}

/*
 * Run sh -c cmd in its own process group and wait for it until the
 * monotonic time end; past it, kill the whole group (while the unreaped
 * shell still holds its PID, so the group cannot be another's) and reap
 * the shell.
 * True only when it exited 0 in time.
 */
static bool
probe_cmd(const char *cmd, double end)
{
	int st = 0, nul, pidfd;
	pid_t p = fork(), w;

	if (p == 0) {
		setpgid(0, 0);
		if ((nul = open("/dev/null", O_RDWR)) >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
		}
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (p < 0)
		return false;
	setpgid(p, p);	/* both sides: no race with the kill below */
	pidfd = proc_pidfd_open(p);
	while ((w = waitpid(p, &st, WNOHANG)) == 0 ||
	    (w < 0 && errno == EINTR)) {
		double left = end - kv_mono();

		if (left <= 0) {
			kill(-p, SIGKILL);
			while ((w = waitpid(p, &st, 0)) < 0 && errno == EINTR)
				;
			if (pidfd >= 0)
				close(pidfd);
			return false;
		}
		/* a pidfd wakes at the exit; without one, look every 10 ms */
		if (pidfd >= 0)
			poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1,
			    (int)fmin(left * 1000.0 + 1, 1000.0));
		else
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	if (pidfd >= 0)
		close(pidfd);
	return w == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool
ready_probe(const struct ready *r, double end)
{
	char host[256], port[32], err[256];
	int fd;

	if (r->tcp) {
		if (ready_split_hostport(r->tcp, host, sizeof(host), port,
		    sizeof(port)) < 0 ||
		    (fd = kv_connect(host, port, fmax(0.001, fmin(0.5,
		    end - kv_mono())), err, sizeof(err))) < 0)
			return false;
		close(fd);
		return true;
	}
	if (r->http)
		return probe_http(r->http, end);
	if (r->cmd)
		return probe_cmd(r->cmd, end);
	return true;
}

const char *
ready_wait(const struct ready *r, int pidfd)
{
	double end = kv_mono() + r->timeout_s;

	for (;;) {
		if (proc_pidfd_exited(pidfd))
			return "the service exited before it became ready";
		if (ready_probe(r, end))
			return NULL;
		if (kv_mono() >= end)
			return "readiness timeout";
		poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1, 100);
	}
}
