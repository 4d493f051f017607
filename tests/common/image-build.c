/*
 * The image of tests/common/image-build.h: one anonymous area of 16 pages
 * with two runs of them written (the first page, then two more at
 * extent_addr), a vDSO, standard output, the main thread with a pending
 * SIGUSR1 and, if asked, a second thread, in the order migrate/dump.c
 * writes its records. Without flags every byte is fixed, which
 * check_migrate's corruption tests rely on.
 */
#include <sys/mman.h>

#include <signal.h>
#include <string.h>

#include "lib/osm.h"
#include "migrate/internal.h"
#include "image-build.h"

static int
image_build_rec(struct img *img, int body_case, void *body, char **cause)
{
	Osm__ImgRecord	rec = OSM__IMG_RECORD__INIT;

	rec.body_case = body_case;
	switch (body_case) {
	case OSM__IMG_RECORD__BODY_HEADER:
		rec.header = body;
		break;
	case OSM__IMG_RECORD__BODY_TASK:
		rec.task = body;
		break;
	case OSM__IMG_RECORD__BODY_THREAD:
		rec.thread = body;
		break;
	case OSM__IMG_RECORD__BODY_SIGNALS:
		rec.signals = body;
		break;
	case OSM__IMG_RECORD__BODY_FILES:
		rec.files = body;
		break;
	case OSM__IMG_RECORD__BODY_MM:
		rec.mm = body;
		break;
	}
	return img_write(img, &rec, cause);
}

/*
 * Write the image to fd: 0 and in *bytes its length as migrate/ counted
 * it, or -1 with *cause.
 */
int
image_build(int fd, const struct image_build *ib, uint64_t *bytes,
    char **cause)
{
	Osm__ImgHeader	 h = OSM__IMG_HEADER__INIT;
	Osm__ImgTask	 k = OSM__IMG_TASK__INIT;
	Osm__ImgRegs	 r = OSM__IMG_REGS__INIT, r2;
	Osm__ImgGpregs	 gp = OSM__IMG_GPREGS__INIT, gp2;
	Osm__ImgThread	 th[2];
	Osm__ImgSignals	 s = OSM__IMG_SIGNALS__INIT;
	Osm__ImgSigaction act = OSM__IMG_SIGACTION__INIT, *acts[] = { &act };
	Osm__ImgFiles	 f = OSM__IMG_FILES__INIT;
	Osm__ImgFd	 fd0 = OSM__IMG_FD__INIT, fd3 = OSM__IMG_FD__INIT;
	Osm__ImgFd	 fd7 = OSM__IMG_FD__INIT, fd8 = OSM__IMG_FD__INIT;
	Osm__ImgFd	*fds[4] = { &fd0 };
	Osm__ImgMm	 mm = OSM__IMG_MM__INIT;
	Osm__ImgVma	 v[2], *vp[2] = { &v[0], &v[1] };
	Osm__ImgExtent	 e[2], *ep[2] = { &e[0], &e[1] };
	ProtobufCBinaryData pend;
	siginfo_t	 si;
	uint8_t		 xstate[1024], auxv[32], pages[3 * MIG_PAGE];
	uint64_t	 xcr0 = 0x7;
	struct img	 img;
	char		 cmdline[64];
	size_t		 i, len = strlen(ib->comm);

	if (len + 4 > sizeof cmdline) {
		xasprintf(cause, "command %s too long", ib->comm);
		return -1;
	}
	memcpy(cmdline, ib->comm, len + 1);
	memcpy(cmdline + len + 1, "-x", 3);
	h.arch = 62;
	h.page_size = MIG_PAGE;
	h.pid = 4242;
	h.comm = (char *)ib->comm;
	h.cmdline.data = (uint8_t *)cmdline;
	h.cmdline.len = len + 4;
	h.node = "node";
	h.kernel = "6.18";
	h.threads = (ib->threads == 2 ? 2 : 1) +
	    ((ib->flags & IMAGE_BUILD_MISCOUNT) != 0);
	memset(auxv, 0, sizeof auxv);
	k.auxv.data = auxv;
	k.auxv.len = sizeof auxv;
	k.start_code = IMAGE_BUILD_VMA;
	memset(xstate, 0, sizeof xstate);
	memcpy(xstate + 464, &xcr0, 8);
	gp.cs = 0x33;
	gp.ss = 0x2b;
	gp.rip = IMAGE_BUILD_VMA + 0x10;
	r.gp = &gp;
	r.xstate.data = xstate;
	r.xstate.len = sizeof xstate;
	r.xfeatures = xcr0;
	if (ib->flags & IMAGE_BUILD_SLEEP) {
		gp.orig_rax = 35;	/* nanosleep */
		r.restart = OSM__IMG_RESTART__RESTART_SLEEP;
		r.has_sleep_left_ns = 1;
		r.sleep_left_ns = 1000000;
	}
	memset(&si, 0, sizeof si);
	si.si_signo = SIGUSR1;
	pend.data = (uint8_t *)&si;
	pend.len = sizeof si;
	for (i = 0; i < 2; i++) {
		osm__img_thread__init(&th[i]);
		th[i].comm = (char *)ib->comm;
		th[i].altstack_flags = SS_DISABLE;
		th[i].robust_list_len = 24;
	}
	th[0].tid = h.pid;
	th[0].regs = &r;
	th[0].pending = &pend;
	th[0].n_pending = 1;
	th[0].clear_child_tid = IMAGE_BUILD_VMA + 0x100;
	/* The other: its own registers, a signal mask. */
	r2 = r;
	gp2 = gp;
	gp2.rip = IMAGE_BUILD_VMA + 0x40;
	r2.gp = &gp2;
	th[1].tid = ib->tid2 != 0 ? ib->tid2 : h.pid + 1;
	th[1].comm = "worker";
	th[1].regs = &r2;
	th[1].blocked = 1ULL << (SIGUSR2 - 1);
	if (ib->flags & IMAGE_BUILD_HANDLER) {
		act.signo = SIGINT;
		act.handler = IMAGE_BUILD_VMA + 0x20;
		act.flags = 0x04000000;		/* SA_RESTORER */
		act.restorer = IMAGE_BUILD_VMA + 0x30;
		s.actions = acts;
		s.n_actions = 1;
	}
	f.cwd = "/";
	fd0.fd = 1;
	fd0.kind = OSM__IMG_FD_KIND__FD_STDIO;
	f.fds = fds;
	f.n_fds = 1;
	if (ib->flags & IMAGE_BUILD_FILE) {
		f.umask = 022;
		fd3.fd = 3;
		fd3.kind = OSM__IMG_FD_KIND__FD_REGULAR;
		fd3.path = "/etc/hostname";
		fd3.offset = 2;
		fds[f.n_fds++] = &fd3;
	}
	if (ib->flags & IMAGE_BUILD_OTHER) {
		fd7.fd = 7;
		fd7.kind = OSM__IMG_FD_KIND__FD_OTHER;
		fd7.what = "pipe:[42]";
		fd7.has_dev = fd7.has_ino = 1;
		fd7.dev = 13;
		fd7.ino = 42;
		fd8 = fd7;
		fd8.fd = 8;
		fd8.has_same_as = 1;
		fd8.same_as = (ib->flags & IMAGE_BUILD_BAD_SAME) ? 9 : 7;
		fds[f.n_fds++] = &fd7;
		fds[f.n_fds++] = &fd8;
	}
	for (i = 0; i < 2; i++)
		osm__img_vma__init(&v[i]);
	v[0].start = IMAGE_BUILD_VMA;
	v[0].end = IMAGE_BUILD_VMA + 16 * MIG_PAGE;
	v[0].prot = PROT_READ | PROT_WRITE;
	v[0].flags = MAP_PRIVATE;
	v[0].kind = OSM__IMG_VMA_KIND__VMA_ANON;
	v[0].pages = 3;
	v[1].start = 0x7f0000000000ULL;
	v[1].end = v[1].start + 2 * MIG_PAGE;
	v[1].prot = PROT_READ | PROT_EXEC;
	v[1].flags = MAP_PRIVATE;
	v[1].kind = OSM__IMG_VMA_KIND__VMA_VDSO;
	mm.vmas = vp;
	mm.n_vmas = 2;
	for (i = 0; i < sizeof pages; i++)
		pages[i] = i * 7;
	for (i = 0; i < 2; i++)
		osm__img_extent__init(&e[i]);
	e[0].addr = IMAGE_BUILD_VMA;
	e[0].npages = 1;
	e[1].addr = ib->extent_addr;
	e[1].npages = 2;

	img_init(&img, fd);
	if (img_write_preamble(&img, cause) == -1 ||
	    image_build_rec(&img, OSM__IMG_RECORD__BODY_HEADER, &h,
	    cause) == -1 ||
	    image_build_rec(&img, OSM__IMG_RECORD__BODY_TASK, &k, cause) == -1 ||
	    image_build_rec(&img, OSM__IMG_RECORD__BODY_SIGNALS, &s,
	    cause) == -1 ||
	    image_build_rec(&img, OSM__IMG_RECORD__BODY_FILES, &f,
	    cause) == -1 ||
	    image_build_rec(&img, OSM__IMG_RECORD__BODY_MM, &mm, cause) == -1)
		return -1;
	for (i = 0; i < (ib->threads == 2 ? 2 : 1); i++) {
		if (image_build_rec(&img, OSM__IMG_RECORD__BODY_THREAD, &th[i],
		    cause) == -1)
			return -1;
	}
	if (img_write_seal(&img, 0, cause) == -1 ||
	    img_write_pages(&img, ep, 2, pages, sizeof pages, cause) == -1)
		return -1;
	if (!(ib->flags & IMAGE_BUILD_NO_END) &&
	    img_write_seal(&img, 1, cause) == -1)
		return -1;
	*bytes = img.bytes;
	return 0;
}
