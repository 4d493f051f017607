/*
 * Round trips of small messages over TCP: the floor under a forwarded
 * call between two lab nodes. bench/forward runs it.
 *
 *	tcprtt -s PORT			serve one client: echo what comes
 *	tcprtt -c ADDR PORT N [SIZE]	N round trips of SIZE bytes (1)
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int
full(int fd, char *buf, size_t len, int out)
{
	ssize_t	n;

	while (len > 0) {
		n = out ? write(fd, buf, len) : read(fd, buf, len);
		if (n <= 0)
			return -1;
		buf += n;
		len -= n;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in	 sin;
	struct timespec		 a, b;
	char			*buf;
	int			 fd, c, one = 1, i, n;
	size_t			 size;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	if (argc == 3 && strcmp(argv[1], "-s") == 0) {
		sin.sin_port = htons(atoi(argv[2]));
		fd = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1 ||
		    listen(fd, 1) == -1 || (c = accept(fd, NULL, NULL)) == -1) {
			perror("tcprtt");
			return 1;
		}
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		buf = malloc(1 << 20);
		while ((n = read(c, buf, 1 << 20)) > 0)
			if (full(c, buf, n, 1) == -1)
				break;
		return 0;
	}
	if (argc < 5 || strcmp(argv[1], "-c") != 0) {
		fprintf(stderr, "usage: tcprtt -s PORT | -c ADDR PORT N [SIZE]\n");
		return 2;
	}
	inet_pton(AF_INET, argv[2], &sin.sin_addr);
	sin.sin_port = htons(atoi(argv[3]));
	n = atoi(argv[4]);
	size = argc > 5 ? (size_t)atoi(argv[5]) : 1;
	buf = calloc(1, size);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	for (i = 0; i < 50 && connect(fd, (struct sockaddr *)&sin,
	    sizeof sin) == -1; i++)
		usleep(20000);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		if (full(fd, buf, size, 1) == -1 || full(fd, buf, size, 0) == -1) {
			perror("tcprtt");
			return 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("tcp %zu bytes: %.2f us per round trip\n", size,
	    ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3) / n);
	return 0;
}
