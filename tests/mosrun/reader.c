/*
 * Reads a file of known bytes for a while, 4 KiB at a time, mixed with
 * what moves its offset otherwise: lseek back and forth, pread64s (which
 * move none: one far off, a stream where the reads are), reads that end
 * at the file's end, and at the end a dup's read (which moves the offset
 * they share); every byte checked, and the offset asked of the kernel
 * now and then against the one the reads should have left. Tests the
 * read stub (docs/REMOTE.md, "The read stub") across moves.
 *
 *   reader -w FILE SIZE	write the file
 *   reader FILE SECONDS	read it; "ready" after the first 1000 reads,
 *				"ok ..." or what was wrong at the end
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint8_t
byte_at(uint64_t i)
{
	return (uint8_t)((i * 2654435761ULL) >> 13);
}

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
check(const uint8_t *buf, ssize_t n, uint64_t at, const char *what)
{
	ssize_t	i;

	for (i = 0; i < n; i++) {
		if (buf[i] != byte_at(at + i)) {
			printf("%s: byte at %llu is %u, not %u\n", what,
			    (unsigned long long)(at + i), buf[i],
			    byte_at(at + i));
			exit(1);
		}
	}
}

static int
write_file(const char *path, uint64_t size)
{
	uint8_t		buf[65536];
	uint64_t	at = 0;
	size_t		i, n;
	FILE		*f;

	if ((f = fopen(path, "w")) == NULL)
		return 1;
	while (at < size) {
		n = size - at < sizeof buf ? size - at : sizeof buf;
		for (i = 0; i < n; i++)
			buf[i] = byte_at(at + i);
		if (fwrite(buf, 1, n, f) != n)
			return 1;
		at += n;
	}
	return fclose(f) != 0;
}

int
main(int argc, char **argv)
{
	uint8_t		 buf[4096];
	uint64_t	 pos = 0, size, reads = 0, seeks = 0, asks = 0;
	uint64_t	 k;
	struct stat	 sb;
	double		 end;
	ssize_t		 n;
	off_t		 o;
	int		 fd, d, j;

	if (argc == 4 && strcmp(argv[1], "-w") == 0)
		return write_file(argv[2], strtoull(argv[3], NULL, 10));
	if (argc != 3) {
		fprintf(stderr, "usage: reader -w FILE SIZE | FILE SECONDS\n");
		return 2;
	}
	if ((fd = open(argv[1], O_RDONLY)) == -1 || fstat(fd, &sb) == -1) {
		printf("%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	size = sb.st_size;
	setvbuf(stdout, NULL, _IOLBF, 0);
	end = now() + atof(argv[2]);
	for (k = 1; now() < end; k++) {
		if (k == 1000)
			printf("ready\n");
		if (k % 97 == 0 && pos >= 1000) {
			if ((o = lseek(fd, -1000, SEEK_CUR)) != (off_t)(pos -
			    1000)) {
				printf("lseek back: at %lld, not %llu\n",
				    (long long)o, (unsigned long long)pos -
				    1000);
				return 1;
			}
			pos -= 1000;
			seeks++;
		} else if (k % 211 == 0) {
			pos = (pos * 7 + 5000) % size;
			if (lseek(fd, pos, SEEK_SET) != (off_t)pos) {
				printf("lseek: %s\n", strerror(errno));
				return 1;
			}
			seeks++;
		} else if (k % 503 == 0) {
			if ((n = pread(fd, buf, sizeof buf, 12345)) < 0) {
				printf("pread: %s\n", strerror(errno));
				return 1;
			}
			check(buf, n, 12345, "pread");
			/* a stream of them where the reads are */
			for (j = 0; j < 4; j++) {
				if ((n = pread(fd, buf, sizeof buf, pos +
				    j * sizeof buf)) < 0) {
					printf("pread: %s\n", strerror(errno));
					return 1;
				}
				check(buf, n, pos + j * sizeof buf, "pread");
			}
		}
		if ((n = read(fd, buf, sizeof buf)) < 0) {
			printf("read: %s\n", strerror(errno));
			return 1;
		}
		check(buf, n, pos, "read");
		pos += n;
		reads++;
		if (n == 0 || pos >= size) {
			if (n != 0 && (n = read(fd, buf, sizeof buf)) != 0) {
				printf("read at the end: %zd\n", n);
				return 1;
			}
			pos = 0;
			lseek(fd, 0, SEEK_SET);
		}
		if (k % 2000 == 0) {
			if ((o = lseek(fd, 0, SEEK_CUR)) != (off_t)pos) {
				printf("offset %lld, not %llu after %llu "
				    "reads\n", (long long)o,
				    (unsigned long long)pos,
				    (unsigned long long)reads);
				return 1;
			}
			asks++;
		}
	}
	/* a dup's read moves the offset they share (read at home after) */
	if ((d = dup(fd)) == -1 || (n = read(d, buf, 100)) < 0) {
		printf("dup: %s\n", strerror(errno));
		return 1;
	}
	check(buf, n, pos, "dup's read");
	pos += n;
	close(d);
	if ((n = read(fd, buf, sizeof buf)) < 0) {
		printf("read after dup: %s\n", strerror(errno));
		return 1;
	}
	check(buf, n, pos, "read after dup");
	pos += n;
	if ((o = lseek(fd, 0, SEEK_CUR)) != (off_t)pos) {
		printf("offset %lld at the end, not %llu\n", (long long)o,
		    (unsigned long long)pos);
		return 1;
	}
	printf("ok %llu reads, %llu seeks, %llu offsets asked, at %llu\n",
	    (unsigned long long)reads, (unsigned long long)seeks,
	    (unsigned long long)asks, (unsigned long long)pos);
	return 0;
}
