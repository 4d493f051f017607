/*
 * moscr info [--json] FILE: what an image holds, in readable form or as
 * one JSON document (field names in moscr(1)). The whole image is read
 * and checked as a restore would, short of restoring it.
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
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
	.usage = "[--json] FILE",
	.help = "Check the image in FILE ('-': standard input) and show what "
	    "it holds:\n      the process, each thread (id, name, where it "
	    "was stopped), its files\n      and memory; with --json as one "
	    "JSON document.",
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
	[OSM__IMG_FD_KIND__FD_OTHER] = "other",
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
		if (it->has_cpu_ns)
			printf(", cpu %.3f s", it->cpu_ns / 1e9);
		printf("\n");
	}
}

/* "rwxp" from an area's protection and flags. */
static void
info_perms(const Osm__ImgVma *v, char out[5])
{
	out[0] = (v->prot & PROT_READ) ? 'r' : '-';
	out[1] = (v->prot & PROT_WRITE) ? 'w' : '-';
	out[2] = (v->prot & PROT_EXEC) ? 'x' : '-';
	out[3] = (v->flags & MAP_SHARED) ? 's' : 'p';
	out[4] = '\0';
}

static void
info_print(const char *path, const struct mig_image *mi)
{
	const Osm__ImgHeader	*h = mi->header;
	const Osm__ImgRegs	*r = mi->threads[0]->regs;
	const Osm__ImgVma	*v;
	const Osm__ImgFd	*d;
	char			 when[64], size[32], carried[32], perms[5];
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
	if (mi->rounds > 0)
		printf("live:        %u rounds before the description\n",
		    mi->rounds);
	if (mi->parent != NULL)
		printf("adds to:     %s (what changed since it)\n",
		    mi->parent);
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
	printf("cpu time:    %.3f s", mi->task->cpu_ns / 1e9);
	if (mi->task->has_cpu_total_ns)
		printf(", %.3f s wherever it ran", mi->task->cpu_total_ns /
		    1e9);
	printf("\n");
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
		printf("  %3u %-9s ", d->fd, info_kinds[d->kind]);
		if (d->path != NULL)
			printf("%s", d->path);
		else if (d->kind == OSM__IMG_FD_KIND__FD_OTHER)
			printf("%s (the holder's; elsewhere /dev/null or "
			    "--fd)", d->what != NULL ? d->what : "?");
		else
			printf("%s%s(the restorer's own)", d->what != NULL ?
			    d->what : "", d->what != NULL ? " " : "");
		if (d->kind == OSM__IMG_FD_KIND__FD_REGULAR)
			printf(" (offset %llu, flags 0%o)",
			    (unsigned long long)d->offset, d->flags);
		if (d->has_same_as)
			printf(", shared with %u", d->same_as);
		if (d->has_locked && d->locked)
			printf(", locked");
		printf("\n");
	}
	info_size(pages * MIG_PAGE, carried, sizeof carried);
	printf("memory:      %zu areas, %llu pages carried (%s)\n",
	    mi->mm->n_vmas, (unsigned long long)pages, carried);
	for (i = 0; i < mi->mm->n_vmas; i++) {
		v = mi->mm->vmas[i];
		info_size(v->end - v->start, size, sizeof size);
		info_size(v->pages * MIG_PAGE, carried, sizeof carried);
		info_perms(v, perms);
		printf("  %012llx-%012llx %s %9s %9s  %s\n",
		    (unsigned long long)v->start, (unsigned long long)v->end,
		    perms, size, carried,
		    v->path != NULL ? v->path : v->label != NULL ? v->label :
		    "");
	}
}

/*
 * JSON strings are UTF-8, a path or an argument any bytes: one that is not
 * valid UTF-8 goes out with '?' for each byte outside ASCII.
 */
static json_t *
info_json_str(const char *s, size_t len)
{
	json_t	*j;
	char	*copy;
	size_t	 i;

	if ((j = json_stringn(s, len)) != NULL)
		return j;
	copy = xmalloc(len + 1);
	for (i = 0; i < len; i++)
		copy[i] = (unsigned char)s[i] >= 0x80 || s[i] == '\0' ? '?' :
		    s[i];
	j = json_stringn(copy, len);
	free(copy);
	return j;
}

static json_t *
info_json_cstr(const char *s)
{
	return s != NULL ? info_json_str(s, strlen(s)) : json_null();
}

static json_t *
info_json_u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* A signal mask as the list of the signal numbers in it. */
static json_t *
info_json_sigset(uint64_t mask)
{
	json_t	*a = json_array();
	int	 sig;

	for (sig = 1; sig <= 64; sig++)
		if (mask & (1ULL << (sig - 1)))
			json_array_append_new(a, json_integer(sig));
	return a;
}

static json_t *
info_json_call(const Osm__ImgRegs *r)
{
	json_t			*o;

	if (r->restart == OSM__IMG_RESTART__RESTART_NONE)
		return json_null();
	o = json_object();
	json_object_set_new(o, "name",
	    json_string(info_syscall(r->gp->orig_rax)));
	json_object_set_new(o, "nr", json_integer((json_int_t)r->gp->orig_rax));
	json_object_set_new(o, "restart",
	    json_string(info_restart[r->restart]));
	json_object_set_new(o, "sleep_left_ns", r->has_sleep_left_ns ?
	    info_json_u64(r->sleep_left_ns) : json_null());
	return o;
}

static json_t *
info_json_files(const struct mig_image *mi)
{
	const Osm__ImgFd	*d;
	json_t			*a = json_array(), *o;
	int			 reg;
	size_t			 i;

	for (i = 0; i < mi->files->n_fds; i++) {
		d = mi->files->fds[i];
		reg = d->kind == OSM__IMG_FD_KIND__FD_REGULAR;
		o = json_object();
		json_object_set_new(o, "fd", json_integer(d->fd));
		json_object_set_new(o, "kind", json_string(info_kinds[d->kind]));
		json_object_set_new(o, "path", info_json_cstr(d->path));
		json_object_set_new(o, "offset", reg ?
		    info_json_u64(d->offset) : json_null());
		json_object_set_new(o, "flags", reg ? json_integer(d->flags) :
		    json_null());
		json_object_set_new(o, "what", info_json_cstr(d->what));
		json_object_set_new(o, "same_as", d->has_same_as ?
		    json_integer(d->same_as) : json_null());
		json_object_set_new(o, "locked", json_boolean(d->has_locked &&
		    d->locked));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *
info_json_memory(const struct mig_image *mi)
{
	const Osm__ImgVma	*v;
	json_t			*o, *areas = json_array(), *a;
	uint64_t		 pages = 0;
	char			 perms[5];
	size_t			 i;

	for (i = 0; i < mi->mm->n_vmas; i++) {
		v = mi->mm->vmas[i];
		pages += mi->vma_pages[i];
		info_perms(v, perms);
		a = json_object();
		json_object_set_new(a, "start", info_json_u64(v->start));
		json_object_set_new(a, "end", info_json_u64(v->end));
		json_object_set_new(a, "perms", json_string(perms));
		json_object_set_new(a, "pages", info_json_u64(v->pages));
		json_object_set_new(a, "name", info_json_cstr(v->path != NULL ?
		    v->path : v->label));
		json_array_append_new(areas, a);
	}
	o = json_object();
	json_object_set_new(o, "pages", info_json_u64(pages));
	json_object_set_new(o, "bytes", info_json_u64(pages * MIG_PAGE));
	json_object_set_new(o, "areas", areas);
	return o;
}

static json_t *
info_json_rseq(const Osm__ImgThread *it)
{
	json_t	*o;

	if (!it->has_rseq_addr)
		return json_null();
	o = json_object();
	json_object_set_new(o, "addr", info_json_u64(it->rseq_addr));
	json_object_set_new(o, "len", json_integer(it->rseq_len));
	return o;
}

/* Each thread: what info_threads says of it. */
static json_t *
info_json_threads(const struct mig_image *mi)
{
	const Osm__ImgThread	*it;
	json_t			*a = json_array(), *o;
	size_t			 i;

	for (i = 0; i < mi->nthreads; i++) {
		it = mi->threads[i];
		o = json_object();
		json_object_set_new(o, "tid", json_integer(it->tid));
		json_object_set_new(o, "comm", info_json_cstr(it->comm));
		json_object_set_new(o, "ip", info_json_u64(it->regs->gp->rip));
		json_object_set_new(o, "sp", info_json_u64(it->regs->gp->rsp));
		json_object_set_new(o, "call", info_json_call(it->regs));
		json_object_set_new(o, "blocked",
		    info_json_sigset(it->blocked));
		json_object_set_new(o, "pending", json_integer(it->n_pending));
		json_object_set_new(o, "altstack",
		    json_boolean(!(it->altstack_flags & SS_DISABLE)));
		json_object_set_new(o, "rseq", info_json_rseq(it));
		if (it->has_cpu_ns)
			json_object_set_new(o, "cpu_ns",
			    info_json_u64(it->cpu_ns));
		json_array_append_new(a, o);
	}
	return a;
}

/* Everything info_print shows, as numbers and names (moscr(1)). */
static json_t *
info_json(const char *path, const struct mig_image *mi)
{
	const Osm__ImgHeader	*h = mi->header;
	const Osm__ImgThread	*main = mi->threads[0];
	const Osm__ImgRegs	*r = main->regs;
	json_t			*doc, *o, *argv;
	size_t			 i, pending = mi->sig->n_pending_shared;

	argv = json_array();
	for (i = 0; i < h->cmdline.len;) {
		json_array_append_new(argv, info_json_str(
		    (const char *)h->cmdline.data + i, strnlen((const char *)
		    h->cmdline.data + i, h->cmdline.len - i)));
		i += strnlen((const char *)h->cmdline.data + i,
		    h->cmdline.len - i) + 1;
	}
	doc = json_object();
	json_object_set_new(doc, "image", info_json_cstr(path));
	json_object_set_new(doc, "bytes", info_json_u64(mi->bytes));
	json_object_set_new(doc, "format", json_integer(MIG_VERSION));
	json_object_set_new(doc, "rounds", json_integer(mi->rounds));
	if (mi->parent != NULL)
		json_object_set_new(doc, "parent", json_string(mi->parent));
	json_object_set_new(doc, "pid", json_integer(h->pid));
	json_object_set_new(doc, "comm", info_json_cstr(h->comm));
	json_object_set_new(doc, "uid", json_integer(mi->task->uid));
	json_object_set_new(doc, "gid", json_integer(mi->task->gid));
	json_object_set_new(doc, "argv", argv);
	json_object_set_new(doc, "executable", info_json_cstr(mi->task->exe));
	json_object_set_new(doc, "time", info_json_u64(h->time));
	json_object_set_new(doc, "node", info_json_cstr(h->node));
	json_object_set_new(doc, "kernel", info_json_cstr(h->kernel));
	json_object_set_new(doc, "cpu_ns", info_json_u64(mi->task->cpu_ns));
	if (mi->task->has_cpu_total_ns)
		json_object_set_new(doc, "cpu_total_ns",
		    info_json_u64(mi->task->cpu_total_ns));
	o = json_object();
	json_object_set_new(o, "ip", info_json_u64(r->gp->rip));
	json_object_set_new(o, "sp", info_json_u64(r->gp->rsp));
	json_object_set_new(o, "xstate_bytes", json_integer(r->xstate.len));
	json_object_set_new(o, "xfeatures", info_json_u64(r->xfeatures));
	json_object_set_new(doc, "registers", o);
	json_object_set_new(doc, "call", info_json_call(r));
	o = json_object();
	json_object_set_new(o, "handlers", json_integer(mi->sig->n_actions));
	json_object_set_new(o, "blocked", info_json_sigset(main->blocked));
	for (i = 0; i < mi->nthreads; i++)
		pending += mi->threads[i]->n_pending;
	json_object_set_new(o, "pending", json_integer(pending));
	json_object_set_new(o, "timers", json_integer(mi->sig->n_itimers));
	json_object_set_new(o, "altstack",
	    json_boolean(!(main->altstack_flags & SS_DISABLE)));
	json_object_set_new(doc, "signals", o);
	json_object_set_new(doc, "rseq", info_json_rseq(main));
	json_object_set_new(doc, "threads", info_json_threads(mi));
	json_object_set_new(doc, "main_ended", json_boolean(main->tid !=
	    h->pid));
	json_object_set_new(doc, "cwd", info_json_cstr(mi->files->cwd));
	json_object_set_new(doc, "umask", json_integer(mi->files->umask));
	json_object_set_new(doc, "files", info_json_files(mi));
	json_object_set_new(doc, "memory", info_json_memory(mi));
	return doc;
}

static int
moscr_info(int argc, char **argv)
{
	struct mig_image	 mi;
	const char		*path;
	json_t			*doc;
	char			*cause = NULL, *text;
	int			 fd, json = 0;

	if (moscr_help_wanted(argc, argv, &moscr_info_cmd))
		return 0;
	if (argc == 3 && strcmp(argv[1], "--json") == 0) {
		json = 1;
		argv++;
		argc--;
	}
	if (argc != 2)
		moscr_usage(&moscr_info_cmd);
	path = argv[1];
	if (strcmp(path, "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		moscr_err("%s: %s", path, strerror(errno));
		return 1;
	}
	if (mig_image_load(fd, &mi, &cause) == -1) {
		moscr_err("%s: %s", path, cause);
		free(cause);
		return 1;
	}
	if (json) {
		if ((text = json_dumps(doc = info_json(path, &mi),
		    JSON_INDENT(2))) == NULL)
			fatalx("%s: out of memory", __func__);
		json_decref(doc);
		printf("%s\n", text);
		free(text);
	} else
		info_print(path, &mi);
	mig_image_free(&mi);
	return fflush(stdout) == EOF ? 1 : 0;
}
