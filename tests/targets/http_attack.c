/* The HTTP attacks of issue 10 on a root usdtprof, run as an unprivileged
 * user by tests/e2e/test_security_http.cpp. Prints what it achieved.
 *
 *   http_attack headers PORT SECONDS   endless request headers, reconnecting; "sent N"
 *   http_attack post PORT SECONDS      POST /metrics with an endless body, reconnecting; "sent N"
 *   http_attack slow PORT N SECONDS    N connections each sending a byte of a request every 100 ms
 *   http_attack idle PORT N SECONDS    N connections that send nothing; "ready K" once K are open
 *   http_attack endpoint PORT SECONDS  a push endpoint answering every request with an endless
 *                                      chunked body; "listening", then "request K" per request
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((unsigned short)port);
	return a;
}

static int connect_to(int port)
{
	struct sockaddr_in a = loopback(port);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	struct timeval tv = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends prefix then filler forever on fresh connections until SECONDS pass;
 * the total the server took. */
static long long flood(int port, double seconds, const char *prefix, const char *filler)
{
	long long sent = 0;
	double end = now_s() + seconds;
	while (now_s() < end) {
		int fd = connect_to(port);
		if (fd < 0) {
			usleep(10000);
			continue;
		}
		const char *out = prefix;
		while (now_s() < end) {
			ssize_t n = send(fd, out, strlen(out), MSG_NOSIGNAL);
			if (n <= 0)
				break;
			sent += n;
			out = filler;
		}
		close(fd);
	}
	return sent;
}

static void raise_nofile(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static int hold(int port, int count, double seconds, int slow)
{
	raise_nofile();
	int *fds = calloc((size_t)count, sizeof *fds);
	int open_count = 0;
	for (int i = 0; i < count; i++) {
		fds[i] = connect_to(port);
		open_count += fds[i] >= 0;
	}
	printf("ready %d\n", open_count);
	fflush(stdout);
	const char request[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	double end = now_s() + seconds;
	for (size_t at = 0; now_s() < end; at = (at + 1) % (sizeof request - 2)) {
		if (slow)
			for (int i = 0; i < count; i++)
				if (fds[i] >= 0)
					send(fds[i], request + at, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		usleep(100000);
	}
	return 0;
}

static int endpoint(int port, double seconds)
{
	struct sockaddr_in a = loopback(port);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 16) != 0) {
		perror("endpoint");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	static char chunk[16384 + 16];
	int head = snprintf(chunk, sizeof chunk, "4000\r\n");
	memset(chunk + head, 'x', 16384);
	memcpy(chunk + head + 16384, "\r\n", 2);
	size_t chunk_len = (size_t)head + 16384 + 2;
	const char response[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	double end = now_s() + seconds;
	int requests = 0;
	while (now_s() < end) {
		struct pollfd p = {l, POLLIN, 0};
		if (poll(&p, 1, 100) != 1)
			continue;
		int c = accept(l, NULL, NULL);
		if (c < 0)
			continue;
		struct timeval tv = {1, 0};
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		char buf[65536];
		recv(c, buf, sizeof buf, 0); /* the start of the request is enough */
		printf("request %d\n", ++requests);
		fflush(stdout);
		long long sent = 0;
		if (send(c, response, sizeof response - 1, MSG_NOSIGNAL) > 0)
			for (ssize_t n; now_s() < end && (n = send(c, chunk, chunk_len, MSG_NOSIGNAL)) > 0;)
				sent += n;
		printf("closed after %lld\n", sent);
		fflush(stdout);
		close(c);
	}
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 4)
		return 2;
	const char *mode = argv[1];
	int port = atoi(argv[2]);
	if (!strcmp(mode, "headers") || !strcmp(mode, "post")) {
		static char filler[65536];
		int is_post = !strcmp(mode, "post");
		if (is_post) {
			memset(filler, 'b', sizeof filler - 1);
		} else {
			for (size_t i = 0; i + 20 < sizeof filler; i += 20)
				memcpy(filler + i, "X-Filler: abcdefgh\r\n", 20);
		}
		const char *prefix = is_post ? "POST /metrics HTTP/1.1\r\nContent-Length: 1000000000000\r\n\r\n"
					     : "GET /metrics HTTP/1.1\r\n";
		printf("sent %lld\n", flood(port, atof(argv[3]), prefix, filler));
		return 0;
	}
	if ((!strcmp(mode, "slow") || !strcmp(mode, "idle")) && argc >= 5)
		return hold(port, atoi(argv[3]), atof(argv[4]), !strcmp(mode, "slow"));
	if (!strcmp(mode, "endpoint"))
		return endpoint(port, atof(argv[3]));
	return 2;
}
