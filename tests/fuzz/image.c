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

#define VMA_START	0x400000ULL

static void
write_rec(struct img *img, Osm__ImgRecord *rec)
{
	char	*cause = NULL;

	if (img_write(img, rec, &cause) == -1)
		fatalx("%s", cause);
}

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

/* As tests/unit/check_migrate.c makes it: small, but whole. */
static void
small_image(struct fuzz_out *o, uint64_t extent_addr, int seal)
{
	Osm__ImgRecord	 rec = OSM__IMG_RECORD__INIT;
	Osm__ImgHeader	 h = OSM__IMG_HEADER__INIT;
	Osm__ImgTask	 k = OSM__IMG_TASK__INIT;
	Osm__ImgRegs	 r = OSM__IMG_REGS__INIT;
	Osm__ImgGpregs	 gp = OSM__IMG_GPREGS__INIT;
	Osm__ImgSignals	 s = OSM__IMG_SIGNALS__INIT;
	Osm__ImgSigaction act = OSM__IMG_SIGACTION__INIT, *acts[] = { &act };
	Osm__ImgFiles	 f = OSM__IMG_FILES__INIT;
	Osm__ImgFd	 fd0 = OSM__IMG_FD__INIT, fd3 = OSM__IMG_FD__INIT;
	Osm__ImgFd	*fds[] = { &fd0, &fd3 };
	Osm__ImgMm	 mm = OSM__IMG_MM__INIT;
	Osm__ImgVma	 v[2], *vp[2] = { &v[0], &v[1] };
	Osm__ImgExtent	 e[2], *ep[2] = { &e[0], &e[1] };
	ProtobufCBinaryData pend;
	siginfo_t	 si;
	uint8_t		 xstate[1024], auxv[32], pages[3 * MIG_PAGE];
	uint64_t	 xcr0 = 0x7;
	struct img	 img;
	char		*cause = NULL;
	off_t		 end;
	size_t		 i;
	int		 fd;

	h.arch = 62;
	h.page_size = MIG_PAGE;
	h.pid = 4242;
	h.comm = "fuzz";
	h.cmdline.data = (uint8_t *)"fuzz\0-x";
	h.cmdline.len = 8;
	h.node = "node";
	h.kernel = "6.18";
	memset(auxv, 0, sizeof auxv);
	k.auxv.data = auxv;
	k.auxv.len = sizeof auxv;
	k.start_code = VMA_START;
	memset(xstate, 0, sizeof xstate);
	memcpy(xstate + 464, &xcr0, 8);
	gp.cs = 0x33;
	gp.ss = 0x2b;
	gp.rip = VMA_START + 0x10;
	gp.orig_rax = 35;
	r.gp = &gp;
	r.xstate.data = xstate;
	r.xstate.len = sizeof xstate;
	r.xfeatures = xcr0;
	r.restart = OSM__IMG_RESTART__RESTART_SLEEP;
	r.has_sleep_left_ns = 1;
	r.sleep_left_ns = 1000000;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGUSR1;
	pend.data = (uint8_t *)&si;
	pend.len = sizeof si;
	s.pending = &pend;
	s.n_pending = 1;
	act.signo = SIGINT;
	act.handler = VMA_START + 0x20;
	act.flags = 0x04000000;
	act.restorer = VMA_START + 0x30;
	s.actions = acts;
	s.n_actions = 1;
	f.cwd = "/";
	f.umask = 022;
	fd0.fd = 1;
	fd0.kind = OSM__IMG_FD_KIND__FD_STDIO;
	fd3.fd = 3;
	fd3.kind = OSM__IMG_FD_KIND__FD_REGULAR;
	fd3.path = "/etc/hostname";
	fd3.offset = 2;
	f.fds = fds;
	f.n_fds = 2;
	for (i = 0; i < 2; i++)
		osm__img_vma__init(&v[i]);
	v[0].start = VMA_START;
	v[0].end = VMA_START + 16 * MIG_PAGE;
	v[0].prot = 3;
	v[0].flags = 2;		/* MAP_PRIVATE */
	v[0].kind = OSM__IMG_VMA_KIND__VMA_ANON;
	v[0].pages = 3;
	v[1].start = 0x7f0000000000ULL;
	v[1].end = v[1].start + 2 * MIG_PAGE;
	v[1].prot = 5;
	v[1].flags = 2;
	v[1].kind = OSM__IMG_VMA_KIND__VMA_VDSO;
	mm.vmas = vp;
	mm.n_vmas = 2;
	for (i = 0; i < sizeof pages; i++)
		pages[i] = i * 7;

	fd = fuzz_memfd("", 0);
	img_init(&img, fd);
	if (img_write_preamble(&img, &cause) == -1)
		fatalx("%s", cause);
	rec.body_case = OSM__IMG_RECORD__BODY_HEADER;
	rec.header = &h;
	write_rec(&img, &rec);
	rec.body_case = OSM__IMG_RECORD__BODY_TASK;
	rec.task = &k;
	write_rec(&img, &rec);
	rec.body_case = OSM__IMG_RECORD__BODY_REGS;
	rec.regs = &r;
	write_rec(&img, &rec);
	rec.body_case = OSM__IMG_RECORD__BODY_SIGNALS;
	rec.signals = &s;
	write_rec(&img, &rec);
	rec.body_case = OSM__IMG_RECORD__BODY_FILES;
	rec.files = &f;
	write_rec(&img, &rec);
	rec.body_case = OSM__IMG_RECORD__BODY_MM;
	rec.mm = &mm;
	write_rec(&img, &rec);
	if (img_write_seal(&img, 0, &cause) == -1)
		fatalx("%s", cause);
	for (i = 0; i < 2; i++)
		osm__img_extent__init(&e[i]);
	e[0].addr = VMA_START;
	e[0].npages = 1;
	e[1].addr = extent_addr;
	e[1].npages = 2;
	if (img_write_pages(&img, ep, 2, pages, sizeof pages, &cause) == -1 ||
	    (seal && img_write_seal(&img, 1, &cause) == -1))
		fatalx("%s", cause);
	end = lseek(fd, 0, SEEK_END);
	buf_put_fd(o, fd, end);
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
