/*
 * A small checkpoint image, whole and valid, written for tests: the one
 * check_migrate reads back, cuts and corrupts byte by byte, and, with
 * more record fields set, the seeds of the image fuzz target.
 */
#ifndef IMAGE_BUILD_H
#define IMAGE_BUILD_H

#include <stdint.h>

#define IMAGE_BUILD_VMA		0x400000ULL	/* its anonymous area */

/* What the image holds beyond the plain one. */
#define IMAGE_BUILD_SLEEP	0x01	/* stopped in nanosleep, 1 ms left */
#define IMAGE_BUILD_HANDLER	0x02	/* a handler for SIGINT */
#define IMAGE_BUILD_FILE	0x04	/* a regular file at an offset, umask */
#define IMAGE_BUILD_NO_END	0x08	/* no final seal: it ends too soon */
#define IMAGE_BUILD_OTHER	0x10	/* a pipe at 7, a dup of it at 8 */
#define IMAGE_BUILD_BAD_SAME	0x20	/* with OTHER: 8 shares with 9 */
#define IMAGE_BUILD_MISCOUNT	0x40	/* the header counts a thread more */

struct image_build {
	const char	*comm;		/* its command; the arguments: -x */
	uint64_t	 extent_addr;	/* where the second run of pages goes */
	int		 flags;		/* IMAGE_BUILD_* */
	int		 threads;	/* 0 or 1: the main thread; 2: another */
	int		 tid2;		/* the other's id (0: 4243) */
};

int	 image_build(int fd, const struct image_build *ib, uint64_t *bytes,
	    char **cause);

#endif
