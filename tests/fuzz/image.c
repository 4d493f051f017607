/*
 * migrate/image.c: a checkpoint image from a file or a socket, as restore
 * and moscr info read it: mig_image_load, which must refuse anything but
 * a whole, consistent image, with a cause; then what moscr info prints of
 * an image it took (moscr-info.c is included for its static printer, and
 * prints to /dev/null).
 *
 * Input: a mode byte, then the image. The seals' and page records'
 * checksums would stop the fuzzer at the first seal, so with mode bit 0
 * the harness puts the right ones in; with bit 1 it also writes each page
 * record's contents itself (zeroes), so that inputs need not carry pages.
 */
#include <sys/wait.h>

#include <arpa/inet.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrate/moscr-info.c"
#include "migrate/internal.h"

#include "fuzz.h"
#include "tests/common/image-build.h"

#define FIX_CRC		0x01
#define MAKE_RAW	0x02
#define DROP_RAW	0x04	/* for seeds: keep only the records, */
#define SCRUB		0x08	/* and not this host's name */

/* moscr.c's, which info needs only for its command line. */
void
moscr_usage(const struct moscr_cmd *c)
{
	abort();
}

int
moscr_help_wanted(int argc, char **argv, const struct moscr_cmd *c)
{
	return 0;
}

void
moscr_err(const char *fmt, ...)
{
}

void
fuzz_init(void)
{
	int	fd;

	if ((fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) == -1 ||
	    dup2(fd, STDOUT_FILENO) == -1)
		fatal("/dev/null");
	close(fd);
}

/* The bytes a page record announces; 0 if over the limit. */
static size_t
raw_len(const Osm__ImgPages *p)
{
	size_t	i, n = 0;

	for (i = 0; i < p->n_extents; i++) {
		if (p->extents[i]->npages > MIG_PAGES_MAX / MIG_PAGE ||
		    n + p->extents[i]->npages * MIG_PAGE > MIG_PAGES_MAX)
			return 0;
		n += p->extents[i]->npages * MIG_PAGE;
	}
	return n;
}

static void
put_rec(struct fuzz_out *o, const uint8_t *p, size_t len, uint32_t *crc)
{
	uint32_t	be = htonl(len);

	fuzz_put(o, &be, 4);
	fuzz_put(o, p, len);
	if (crc != NULL)
		*crc = crc32c(crc32c(*crc, &be, 4), p, len);
}

/*
 * The image in, as the harness is asked to mend it: the running checksum
 * as image.c keeps it, put into every seal; each page record's checksum
 * of the raw record after it (which the harness may write itself).
 */
static void
rewrite(struct fuzz_in *in, int how, struct fuzz_out *o)
{
	Osm__ImgRecord	*rec;
	const uint8_t	*p, *raw;
	uint8_t		*buf, *zero = NULL;
	uint64_t	 records = 0;
	uint32_t	 crc, be;
	size_t		 len, rlen;

	len = fuzz_take(in, 8, &p);
	fuzz_put(o, p, len);
	crc = crc32c(0, p, len);
	while (in->n >= 4) {
		memcpy(&be, in->p, 4);
		in->p += 4;
		in->n -= 4;
		len = fuzz_take(in, ntohl(be), &p);
		rec = osm__img_record__unpack(NULL, len, p);
		raw = NULL;
		rlen = 0;
		if (rec != NULL &&
		    rec->body_case == OSM__IMG_RECORD__BODY_PAGES) {
			rlen = raw_len(rec->pages);
			if (how & MAKE_RAW)
				raw = zero = xcalloc(1, rlen + 1);
			else if (in->n >= 4) {
				memcpy(&be, in->p, 4);
				in->p += 4;
				in->n -= 4;
				rlen = fuzz_take(in, ntohl(be), &raw);
			} else
				rlen = 0;	/* the image ends here */
			if (how & FIX_CRC)
				rec->pages->crc = crc32c(0, raw, rlen);
		}
		if (rec != NULL && (how & SCRUB) &&
		    rec->body_case == OSM__IMG_RECORD__BODY_HEADER) {
			free(rec->header->node);
			rec->header->node = xstrdup("node");
		}
		if (rec != NULL && (how & FIX_CRC) &&
		    rec->body_case == OSM__IMG_RECORD__BODY_SEAL) {
			rec->seal->crc = crc;
			rec->seal->records = records;
		}
		if (rec != NULL && (((how & FIX_CRC) &&
		    (rec->body_case == OSM__IMG_RECORD__BODY_PAGES ||
		    rec->body_case == OSM__IMG_RECORD__BODY_SEAL)) ||
		    ((how & SCRUB) &&
		    rec->body_case == OSM__IMG_RECORD__BODY_HEADER))) {
			len = osm__img_record__get_packed_size(rec);
			buf = xmalloc(len + 1);
			osm__img_record__pack(rec, buf);
			put_rec(o, buf, len, &crc);
			free(buf);
		} else
			put_rec(o, p, len, &crc);
		records++;
		if (raw != NULL && !(how & DROP_RAW))
			put_rec(o, raw, rlen, NULL);
		free(zero);
		zero = NULL;
		if (rec != NULL)
			osm__img_record__free_unpacked(rec, NULL);
	}
	fuzz_put(o, in->p, in->n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in	 in = { data, size };
	struct fuzz_out	 o = { 0 };
	struct mig_image mi;
	char		*cause = NULL;
	int		 fd, mode, fd0 = fuzz_lowest_fd();

	mode = fuzz_u8(&in);
	rewrite(&in, mode & (FIX_CRC | MAKE_RAW), &o);
	fd = fuzz_memfd(o.p, o.n);
	if (mig_image_load(fd, &mi, &cause) == -1) {
		fuzz_assert(cause != NULL);
		log_debug("%s", cause);
		free(cause);
	} else {
		fuzz_assert(cause == NULL && mi.bytes == o.n);
		log_debug("image of %s accepted", mi.header->comm);
		info_print("fuzz", &mi);
		fflush(stdout);
		mig_image_free(&mi);
	}
	free(o.p);
	close(fd);
	fuzz_fd_check(fd0);
	return 0;
}

/* --- seeds ------------------------------------------------------------- */

#define VMA_START	IMAGE_BUILD_VMA

/* The len bytes of the file fd, into o. */
static void
buf_put_fd(struct fuzz_out *o, int fd, off_t len)
{
	uint8_t	*buf = xmalloc(len + 1);

	if (pread(fd, buf, len, 0) != len)
		fatal("pread");
	fuzz_put(o, buf, len);
	free(buf);
}

/*
 * check_migrate's image (tests/common/image-build.c), with more in it: a
 * sleep to restart, a signal handler, a regular file, a pipe and its dup;
 * two threads.
 */
static void
small_image(struct fuzz_out *o, uint64_t extent_addr, int seal)
{
	struct image_build	 ib = { .comm = "fuzz",
				    .extent_addr = extent_addr,
				    .flags = IMAGE_BUILD_SLEEP |
				    IMAGE_BUILD_HANDLER | IMAGE_BUILD_FILE |
				    IMAGE_BUILD_OTHER,
				    .threads = 2 };
	uint64_t		 bytes;
	char			*cause = NULL;
	int			 fd;

	if (!seal)
		ib.flags |= IMAGE_BUILD_NO_END;
	fd = fuzz_memfd("", 0);
	if (image_build(fd, &ib, &bytes, &cause) == -1)
		fatalx("%s", cause);
	buf_put_fd(o, fd, lseek(fd, 0, SEEK_END));
	close(fd);
}

/* A live process, dumped: /bin/sleep, as moscr dump would. */
static int
live_image(struct fuzz_out *o)
{
	struct mig_task	*t;
	char		*cause = NULL;
	pid_t		 pid;
	off_t		 end;
	int		 fd, rc = -1;

	if ((pid = fork()) == 0) {
		/* nothing of ours in its image: no files, no directory */
		if ((fd = open("/dev/null", O_RDWR)) == -1 || chdir("/") == -1)
			_exit(127);
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		closefrom(STDERR_FILENO + 1);
		execl("/bin/sleep", "sleep", "100", (char *)NULL);
		_exit(127);
	}
	usleep(200000);		/* past its exec and its loader */
	fd = fuzz_memfd("", 0);
	if ((t = mig_seize(pid, &cause)) != NULL) {
		if (mig_dump(t, fd, 0, NULL, &cause) == 0)
			rc = 0;
		mig_kill(t);
	} else
		kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (rc == -1) {
		fprintf(stderr, "image: no live seed: %s\n", cause);
		free(cause);
	} else {
		end = lseek(fd, 0, SEEK_END);
		buf_put_fd(o, fd, end);
	}
	close(fd);
	return rc;
}

/* Write the seed: as it is, and with bits 0-1 set, its records alone. */
static void
seeds_of(const char *dir, const char *name, struct fuzz_out *img)
{
	struct fuzz_out	 o = { 0 };
	struct fuzz_in	 in = { img->p, img->n };
	char		 path[64];

	if (img->n < 65536) {
		fuzz_put_u8(&o, 0);
		fuzz_put(&o, img->p, img->n);
		fuzz_seed(dir, name, &o);
	}
	fuzz_put_u8(&o, FIX_CRC | MAKE_RAW);
	rewrite(&in, DROP_RAW | SCRUB, &o);
	snprintf(path, sizeof path, "%s-records", name);
	fuzz_seed(dir, path, &o);
	free(img->p);
	memset(img, 0, sizeof *img);
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out	 img = { 0 };

	small_image(&img, VMA_START + 4 * MIG_PAGE, 1);
	seeds_of(dir, "small", &img);
	small_image(&img, VMA_START + 15 * MIG_PAGE, 1);
	seeds_of(dir, "pages-outside", &img);
	small_image(&img, VMA_START + 4 * MIG_PAGE, 0);
	seeds_of(dir, "no-end", &img);
	if (live_image(&img) == 0)
		seeds_of(dir, "sleep", &img);
}
