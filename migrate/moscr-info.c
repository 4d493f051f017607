/*
 * moscr info FILE: what an image holds, in readable form. The whole image
 * is read and checked as a restore would, short of restoring it.
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate/migrate.h"
#include "moscr.h"

static int	moscr_info(int, char **);

const struct moscr_cmd moscr_info_cmd = {
	.name = "info",
	.usage = "FILE",
	.help = "Check the image in FILE ('-': standard input) and show what "
	    "it holds:\n      the process, each thread (id, name, where it "
	    "was stopped), its files\n      and memory.",
	.exec = moscr_info,
};

static const struct {
	long		 nr;
	const char	*name;
} info_syscalls[] = {
	{ SYS_read, "read" }, { SYS_write, "write" },
	{ SYS_nanosleep, "nanosleep" },
	{ SYS_clock_nanosleep, "clock_nanosleep" },
	{ SYS_wait4, "wait4" }, { SYS_poll, "poll" }, { SYS_ppoll, "ppoll" },
	{ SYS_select, "select" }, { SYS_pselect6, "pselect6" },
	{ SYS_futex, "futex" }, { SYS_futex_waitv, "futex_waitv" },
	{ SYS_pause, "pause" }, { SYS_sched_yield, "sched_yield" },
	{ SYS_rt_sigtimedwait, "rt_sigtimedwait" },
	{ SYS_rt_sigsuspend, "rt_sigsuspend" },
	{ SYS_epoll_wait, "epoll_wait" }, { SYS_accept, "accept" },
	{ SYS_connect, "connect" }, { SYS_recvfrom, "recvfrom" },
	{ SYS_restart_syscall, "restart_syscall" },
};

static const char *info_restart[] = {
	[OSM__IMG_RESTART__RESTART_NONE] = "completed",
	[OSM__IMG_RESTART__RESTART_SAME] = "restarted",
	[OSM__IMG_RESTART__RESTART_SLEEP] = "restarted for the time left",
	[OSM__IMG_RESTART__RESTART_EINTR] = "interrupted (EINTR)",
};

static const char *info_kinds[] = {
	[OSM__IMG_FD_KIND__FD_REGULAR] = "file",
	[OSM__IMG_FD_KIND__FD_STDIO] = "stdio",
	[OSM__IMG_FD_KIND__FD_DIRECTORY] = "directory",
	[OSM__IMG_FD_KIND__FD_DEVICE] = "device",
};

static const char *
info_syscall(long nr)
{
	size_t	i;

	for (i = 0; i < nitems(info_syscalls); i++) {
		if (info_syscalls[i].nr == nr)
			return info_syscalls[i].name;
	}
	return "?";
}

static void
info_size(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= (1ULL << 30))
		snprintf(buf, len, "%.1f GiB", bytes / 1073741824.0);
	else if (bytes >= (1ULL << 20))
		snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)bytes >> 10);
}

/* Where a thread was stopped: in which call, and how it resumes. */
static void
info_where(const Osm__ImgRegs *r, char *buf, size_t len)
{
	int	n;

	if (r->restart == OSM__IMG_RESTART__RESTART_NONE) {
		snprintf(buf, len, "at ip 0x%llx",
		    (unsigned long long)r->gp->rip);
		return;
	}
	n = snprintf(buf, len, "in %s (%lld), to be %s",
	    info_syscall(r->gp->orig_rax), (long long)r->gp->orig_rax,
	    info_restart[r->restart]);
	if (r->has_sleep_left_ns && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - n, ", %.3f s left",
		    r->sleep_left_ns / 1e9);
}

static void
info_threads(const struct mig_image *mi)
{
	const Osm__ImgThread	*it;
	char			 where[160];
	size_t			 i;

	printf("threads:     %zu%s\n", mi->nthreads,
	    mi->threads[0]->tid != mi->header->pid ?
	    ", the main thread had ended" : "");
	for (i = 0; i < mi->nthreads; i++) {
		it = mi->threads[i];
		info_where(it->regs, where, sizeof where);
		printf("  %7d %-16s %s", it->tid, it->comm, where);
		if (it->blocked != 0)
			printf(", blocked 0x%llx",
			    (unsigned long long)it->blocked);
		if (it->n_pending > 0)
			printf(", %zu pending", it->n_pending);
		if (!(it->altstack_flags & SS_DISABLE))
			printf(", alternate stack");
		if (it->has_rseq_addr)
			printf(", rseq 0x%llx", (unsigned long long)
			    it->rseq_addr);
		printf("\n");
	}
}

static void
info_print(const char *path, const struct mig_image *mi)
{
	const Osm__ImgHeader	*h = mi->header;
	const Osm__ImgRegs	*r = mi->threads[0]->regs;
	const Osm__ImgVma	*v;
	const Osm__ImgFd	*d;
	char			 when[64], size[32], carried[32];
	struct tm		 tm;
	time_t			 tt = h->time;
	uint64_t		 pages = 0;
	size_t			 i;

	for (i = 0; i < mi->mm->n_vmas; i++)
		pages += mi->vma_pages[i];
	localtime_r(&tt, &tm);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
	info_size(mi->bytes, size, sizeof size);
	printf("image:       %s, %s, format %u\n", path, size, MIG_VERSION);
	printf("process:     %d (%s), user %u, group %u\n", h->pid, h->comm,
	    mi->task->uid, mi->task->gid);
	printf("command:    ");
	for (i = 0; i < h->cmdline.len;) {
		printf(" %.*s", (int)(h->cmdline.len - i),
		    (const char *)h->cmdline.data + i);
		i += strnlen((const char *)h->cmdline.data + i,
		    h->cmdline.len - i) + 1;
	}
	printf("\n");
	if (mi->task->exe != NULL)
		printf("executable:  %s\n", mi->task->exe);
	printf("dumped:      %s on %s (Linux %s)\n", when, h->node, h->kernel);
	printf("cpu time:    %.3f s\n", mi->task->cpu_ns / 1e9);
	info_threads(mi);
	printf("registers:   ip 0x%llx, sp 0x%llx, FPU state %zu bytes "
	    "(features 0x%llx), of thread %d\n",
	    (unsigned long long)r->gp->rip, (unsigned long long)r->gp->rsp,
	    r->xstate.len, (unsigned long long)r->xfeatures,
	    mi->threads[0]->tid);
	printf("signals:     %zu handlers, %zu pending for the process, %zu "
	    "timers\n", mi->sig->n_actions, mi->sig->n_pending_shared,
	    mi->sig->n_itimers);
	printf("cwd:         %s (umask %03o)\n", mi->files->cwd,
	    mi->files->umask);
	printf("files:\n");
	for (i = 0; i < mi->files->n_fds; i++) {
		d = mi->files->fds[i];
		printf("  %3u %-9s %s", d->fd, info_kinds[d->kind],
		    d->path != NULL ? d->path : "(the restorer's own)");
		if (d->kind == OSM__IMG_FD_KIND__FD_REGULAR)
			printf(" (offset %llu, flags 0%o)",
			    (unsigned long long)d->offset, d->flags);
		printf("\n");
	}
	info_size(pages * MIG_PAGE, carried, sizeof carried);
	printf("memory:      %zu areas, %llu pages carried (%s)\n",
	    mi->mm->n_vmas, (unsigned long long)pages, carried);
	for (i = 0; i < mi->mm->n_vmas; i++) {
		v = mi->mm->vmas[i];
		info_size(v->end - v->start, size, sizeof size);
		info_size(v->pages * MIG_PAGE, carried, sizeof carried);
		printf("  %012llx-%012llx %c%c%c%c %9s %9s  %s\n",
		    (unsigned long long)v->start, (unsigned long long)v->end,
		    (v->prot & PROT_READ) ? 'r' : '-',
		    (v->prot & PROT_WRITE) ? 'w' : '-',
		    (v->prot & PROT_EXEC) ? 'x' : '-',
		    (v->flags & MAP_SHARED) ? 's' : 'p', size, carried,
		    v->path != NULL ? v->path : v->label != NULL ? v->label :
		    "");
	}
}

static int
moscr_info(int argc, char **argv)
{
	struct mig_image	 mi;
	char			*cause = NULL;
	int			 fd;

	if (moscr_help_wanted(argc, argv, &moscr_info_cmd))
		return 0;
	if (argc != 2)
		moscr_usage(&moscr_info_cmd);
	if (strcmp(argv[1], "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(argv[1], O_RDONLY | O_CLOEXEC)) == -1) {
		moscr_err("%s: %s", argv[1], strerror(errno));
		return 1;
	}
	if (mig_image_load(fd, &mi, &cause) == -1) {
		moscr_err("%s: %s", argv[1], cause);
		free(cause);
		return 1;
	}
	info_print(argv[1], &mi);
	mig_image_free(&mi);
	return 0;
}
