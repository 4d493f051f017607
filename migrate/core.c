/*
 * The process's own kernel state besides registers, signals, files and
 * what is each thread's (threads.c): the mm's bounds and auxv
 * (PR_SET_MM_MAP), personality, identity and capabilities (which the
 * kernel keeps per thread, and which are set in each), rlimits, CPU time.
 */
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include <linux/ptrace.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define ARCH_GET_XCOMP_PERM	0x1022
#define ARCH_REQ_XCOMP_PERM	0x1023
#define AUXV_MAX		1024
#define CMDLINE_MAX		(64 << 10)
#define COMM_MAX		64
#define GROUPS_MAX		1024	/* what fits the restore's scratch */
#define CAP_VERSION_3		0x20080522

/* A /proc file of the task, whole, up to max bytes. */
static int
core_read_proc(pid_t pid, const char *name, uint8_t **out, size_t *len,
    size_t max, char **cause)
{
	char	 path[64];
	int	 fd;
	ssize_t	 n;
	size_t	 have = 0;
	uint8_t	*buf;

	snprintf(path, sizeof path, "/proc/%d/%s", pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf = xmalloc(max + 1);
	while (have < max && (n = read(fd, buf + have, max - have)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			xasprintf(cause, "%s: %s", path, strerror(errno));
			close(fd);
			free(buf);
			return -1;
		}
		have += n;
	}
	close(fd);
	buf[have] = '\0';
	*out = buf;
	*len = have;
	return 0;
}

/* Fields of /proc/PID/stat, counted from 1 as in proc(5). */
static int
core_stat(pid_t pid, unsigned long long *f, size_t nf, char **cause)
{
	uint8_t		*buf;
	size_t		 len, i;
	char		*p, *end;

	if (core_read_proc(pid, "stat", &buf, &len, 4096, cause) == -1)
		return -1;
	memset(f, 0, nf * sizeof *f);
	if ((p = strrchr((char *)buf, ')')) == NULL) {
		xasprintf(cause, "/proc/%d/stat: unexpected format", pid);
		free(buf);
		return -1;
	}
	p += 2;
	for (i = 3; i < nf && *p != '\0'; i++) {
		if (i == 3) {
			p += 2;	/* the state letter */
			continue;
		}
		f[i] = strtoull(p, &end, 10);
		p = *end == ' ' ? end + 1 : end;
	}
	free(buf);
	return 0;
}

/* A "Key:\tvalues" line of /proc/PID/status, its value. */
int
core_status_value(pid_t pid, const char *key, char *out, size_t size,
    char **cause)
{
	if (proc_status(pid, key, out, size) == -1) {
		xasprintf(cause, "/proc/%d/status: %s: %s", pid, key,
		    errno == ENOENT ? "no such line" : strerror(errno));
		return -1;
	}
	return 0;
}

static int
core_status_ids(pid_t pid, const char *key, unsigned long *ids, size_t n,
    char **cause)
{
	char	 buf[1024], *p, *end;
	size_t	 i;

	if (core_status_value(pid, key, buf, sizeof buf, cause) == -1)
		return -1;
	p = buf;
	for (i = 0; i < n; i++) {
		ids[i] = strtoul(p, &end, 10);
		if (end == p) {
			xasprintf(cause, "/proc/%d/status: bad %s line", pid,
			    key);
			return -1;
		}
		p = end;
	}
	return 0;
}

static int
core_header(struct mig_task *t, Osm__ImgHeader *h, char **cause)
{
	struct utsname	 u;
	char		 host[256];
	uint8_t		*buf;
	size_t		 len;

	osm__img_header__init(h);
	h->arch = EM_X86_64;
	h->page_size = MIG_PAGE;
	h->pid = t->vtgid;
	h->threads = t->nth;
	h->time = time(NULL);
	/* The main thread's name, also once it has ended. */
	if (core_read_proc(t->tgid, "comm", &buf, &len, 64, cause) == -1)
		return -1;
	buf[strcspn((char *)buf, "\n")] = '\0';
	h->comm = (char *)buf;
	if (core_read_proc(t->pid, "cmdline", &buf, &len, CMDLINE_MAX,
	    cause) == -1)
		return -1;
	h->cmdline.data = buf;
	h->cmdline.len = len;
	if (gethostname(host, sizeof host) == -1)
		snprintf(host, sizeof host, "unknown");
	host[sizeof host - 1] = '\0';
	h->node = xstrdup(host);
	uname(&u);
	h->kernel = xstrdup(u.release);
	return 0;
}

static int
core_rlimits(struct mig_task *t, Osm__ImgTask *k, char **cause)
{
	struct rlimit	 rl;
	int		 r;

	k->rlimits = xcalloc(RLIM_NLIMITS, sizeof *k->rlimits);
	for (r = 0; r < RLIM_NLIMITS; r++) {
		if (prlimit(t->pid, r, NULL, &rl) == -1) {
			xasprintf(cause, "prlimit %d: %s", t->pid,
			    strerror(errno));
			return -1;
		}
		k->rlimits[r] = xmalloc(sizeof **k->rlimits);
		osm__img_rlimit__init(k->rlimits[r]);
		k->rlimits[r]->resource = r;
		k->rlimits[r]->cur = rl.rlim_cur;
		k->rlimits[r]->max = rl.rlim_max;
		k->n_rlimits++;
	}
	return 0;
}

static int
core_ids(struct mig_task *t, Osm__ImgTask *k, int flags, char **cause)
{
	unsigned long	 u[4], g[4];
	char		 buf[16384], *p, *end;
	unsigned long	 v;

	if (core_status_ids(t->pid, "Uid", u, 4, cause) == -1 ||
	    core_status_ids(t->pid, "Gid", g, 4, cause) == -1)
		return -1;
	/* With MIG_CONTEXT the credentials stay at home, whatever they are. */
	if (!(flags & MIG_CONTEXT) &&
	    (u[0] != u[1] || u[1] != u[2] || g[0] != g[1] || g[1] != g[2])) {
		xasprintf(cause, "process %d runs with mixed user or group ids "
		    "(a set-id program), which a restore would not keep",
		    t->pid);
		return -1;
	}
	k->uid = u[0];
	k->gid = g[0];
	if (core_status_value(t->pid, "Groups", buf, sizeof buf, cause) == -1)
		return -1;
	k->groups = xcalloc(GROUPS_MAX, sizeof *k->groups);
	for (p = buf;; p = end) {
		v = strtoul(p, &end, 10);
		if (end == p)
			break;
		if (k->n_groups == GROUPS_MAX) {
			xasprintf(cause, "process %d is in more than %d groups",
			    t->pid, GROUPS_MAX);
			return -1;
		}
		k->groups[k->n_groups++] = v;
	}
	return 0;
}

/*
 * CPU time the process used: its threads' (schedstat counts in ns), the
 * threads that ended before the dump not among them.
 */
static int
core_cpu_ns(struct mig_task *t, uint64_t *ns, char **cause)
{
	char	 name[64];
	uint8_t	*buf;
	size_t	 len, i;

	*ns = 0;
	for (i = 0; i < t->nth; i++) {
		snprintf(name, sizeof name, "task/%d/schedstat", t->th[i]->tid);
		if (core_read_proc(t->tgid, name, &buf, &len, 256,
		    cause) == -1)
			return -1;
		*ns += strtoull((char *)buf, NULL, 10);
		free(buf);
	}
	return 0;
}

/*
 * The process's CPU clock (any process may read another's), which counts
 * its ended threads too, and what it carried from before.
 */
static int
core_cpu_total(struct mig_task *t, uint64_t *ns, char **cause)
{
	if (proc_cpu_clock(t->tgid, ns) == -1) {
		xasprintf(cause, "the CPU clock of process %d: %s", t->tgid,
		    strerror(errno));
		return -1;
	}
	*ns += t->cpu_process;
	return 0;
}

int
core_dump(struct mig_task *t, Osm__ImgHeader *h, Osm__ImgTask *k,
    int flags, char **cause)
{
	unsigned long long	 f[53];
	uint8_t			*buf;
	size_t			 len;
	char			 path[64], exe[PATH_MAX];
	struct stat		 st;
	uint64_t		 v;
	ssize_t			 n;

	if (core_header(t, h, cause) == -1)
		return -1;
	osm__img_task__init(k);
	if (core_stat(t->pid, f, nitems(f), cause) == -1)
		return -1;
	k->utime_ticks = f[14];
	k->stime_ticks = f[15];
	k->start_code = f[26];
	k->end_code = f[27];
	k->start_stack = f[28];
	k->start_data = f[45];
	k->end_data = f[46];
	k->start_brk = f[47];
	k->arg_start = f[48];
	k->arg_end = f[49];
	k->env_start = f[50];
	k->env_end = f[51];
	if (task_sys_ok(t, "brk", SYS_brk, (sysargs){ 0 }) == -1)
		goto inject;
	k->brk = t->last_rv;

	if (core_read_proc(t->pid, "auxv", &buf, &len, AUXV_MAX, cause) == -1)
		return -1;
	k->auxv.data = buf;
	k->auxv.len = len;
	if (core_read_proc(t->pid, "personality", &buf, &len, 64,
	    cause) == -1)
		return -1;
	k->personality = strtoul((char *)buf, NULL, 16);
	free(buf);
	if (core_cpu_ns(t, &k->cpu_ns, cause) == -1 ||
	    core_cpu_total(t, &k->cpu_total_ns, cause) == -1)
		return -1;
	k->has_cpu_total_ns = 1;
	if (proc_usage_bound(t->tgid, 1, &k->cpu_user_ns,
	    &k->cpu_sys_ns) == 0) {
		k->cpu_user_ns += t->cpu_usage[0];
		k->cpu_sys_ns += t->cpu_usage[1];
		k->has_cpu_user_ns = k->has_cpu_sys_ns = 1;
	}
	if (task_sys_ok(t, "ARCH_GET_XCOMP_PERM", SYS_arch_prctl,
	    (sysargs){ ARCH_GET_XCOMP_PERM, t->scratch }) == -1)
		goto inject;
	if (task_read(t, t->scratch, &v, sizeof v, cause) == -1)
		return -1;
	k->xcomp_perm = v;
	if (proc_status_mask(t->pid, "CapEff", &k->cap_eff) == -1 ||
	    proc_status_mask(t->pid, "CapPrm", &k->cap_prm) == -1 ||
	    proc_status_mask(t->pid, "CapInh", &k->cap_inh) == -1) {
		xasprintf(cause, "/proc/%d/status: capabilities: %s", t->pid,
		    strerror(errno));
		return -1;
	}

	snprintf(path, sizeof path, "/proc/%d/exe", t->pid);
	if ((n = readlink(path, exe, sizeof exe - 1)) > 0 &&
	    stat(path, &st) == 0) {
		exe[n] = '\0';
		k->exe = xstrdup(exe);
		k->exe_id = xmalloc(sizeof *k->exe_id);
		fileid_make(&st, k->exe_id);
	}
	/*
	 * These stay at home with MIG_CONTEXT; and a migrated copy answers
	 * them only through its home, which is busy with this very dump.
	 */
	if (flags & MIG_CONTEXT)
		k->dumpable = 1;
	else {
		if (task_sys_ok(t, "PR_GET_DUMPABLE", SYS_prctl,
		    (sysargs){ PR_GET_DUMPABLE }) == -1)
			goto inject;
		k->dumpable = t->last_rv;
		if (task_sys_ok(t, "PR_GET_NO_NEW_PRIVS", SYS_prctl,
		    (sysargs){ PR_GET_NO_NEW_PRIVS }) == -1)
			goto inject;
		k->no_new_privs = t->last_rv == 1;
	}
	if (core_ids(t, k, flags, cause) == -1 ||
	    core_rlimits(t, k, cause) == -1)
		return -1;
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}

void
core_free(Osm__ImgHeader *h, Osm__ImgTask *k)
{
	size_t	i;

	free(h->comm);
	free(h->cmdline.data);
	free(h->node);
	free(h->kernel);
	free(k->auxv.data);
	free(k->groups);
	for (i = 0; i < k->n_rlimits; i++)
		free(k->rlimits[i]);
	free(k->rlimits);
	free(k->exe);
	free(k->exe_id);
}

int
core_check(const Osm__ImgHeader *h, const Osm__ImgTask *k, char **cause)
{
	size_t	i;

	if (h->arch != EM_X86_64 || h->page_size != MIG_PAGE) {
		xasprintf(cause, "image is for another machine (arch %u, page "
		    "size %u)", h->arch, h->page_size);
		return -1;
	}
	if (strlen(h->comm) > COMM_MAX || h->cmdline.len > CMDLINE_MAX ||
	    k->auxv.len % 16 != 0 || k->auxv.len > AUXV_MAX ||
	    k->n_groups > GROUPS_MAX || k->n_rlimits > RLIM_NLIMITS ||
	    (k->exe != NULL && (k->exe[0] != '/' || k->exe_id == NULL ||
	    strlen(k->exe) >= PATH_MAX)) || h->threads == 0 ||
	    h->threads > MIG_THREADS_MAX || h->pid <= 0) {
		xasprintf(cause, "image corrupted: task record");
		return -1;
	}
	for (i = 0; i < k->n_rlimits; i++) {
		if (k->rlimits[i]->resource >= RLIM_NLIMITS) {
			xasprintf(cause, "image corrupted: rlimit");
			return -1;
		}
	}
	return 0;
}

/* Checks against this node: may we restore this user's process? */
int
core_check_local(const Osm__ImgTask *k, char **cause)
{
	if (geteuid() != 0 && geteuid() != k->uid) {
		xasprintf(cause, "the image is of a process of user %u; only "
		    "that user or root may restore it", k->uid);
		return -1;
	}
	return 0;
}

/*
 * The image's resource limits, and its user: before any file is opened in
 * the target, so that each is opened with that user's rights. A user
 * restoring their own image changes no identity, nor does MIG_CONTEXT.
 */
int
core_restore_identity(struct mig_task *t, const Osm__ImgTask *k, int flags,
    char **cause)
{
	struct mig_thread *th;
	struct rlimit	 rl;
	size_t		 i;
	gid_t		*g;

	/*
	 * Resource limits first, while the target is still ours: setting
	 * those of another user's process takes CAP_SYS_RESOURCE.
	 */
	for (i = 0; i < k->n_rlimits; i++) {
		rl.rlim_cur = k->rlimits[i]->cur;
		rl.rlim_max = k->rlimits[i]->max;
		if (prlimit(t->pid, k->rlimits[i]->resource, &rl, NULL) == -1) {
			xasprintf(cause, "cannot set resource limit %u of the "
			    "restored process: %s", k->rlimits[i]->resource,
			    strerror(errno));
			return -1;
		}
	}
	if ((flags & MIG_CONTEXT) || geteuid() != 0 ||
	    (k->uid == 0 && k->gid == 0))
		return 0;
	g = xcalloc(k->n_groups + 1, sizeof *g);
	for (i = 0; i < k->n_groups; i++)
		g[i] = k->groups[i];
	if (task_write(t, t->scratch, g, (k->n_groups + 1) * sizeof *g,
	    cause) == -1) {
		free(g);
		return -1;
	}
	free(g);
	/* Credentials are each thread's: every one takes them on. */
	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		if (task_tsys_ok(t, th, "setgroups", SYS_setgroups,
		    (sysargs){ k->n_groups, t->scratch }) == -1 ||
		    task_tsys_ok(t, th, "setresgid", SYS_setresgid,
		    (sysargs){ k->gid, k->gid, k->gid }) == -1 ||
		    task_tsys_ok(t, th, "setresuid", SYS_setresuid,
		    (sysargs){ k->uid, k->uid, k->uid }) == -1) {
			*cause = task_cause(t);
			return -1;
		}
	}
	return 0;
}

/* Open the image's executable in the target, if it is still the same. */
static long
core_exe_fd(struct mig_task *t, const Osm__ImgTask *k, uint64_t where)
{
	char		 link[64];
	struct stat	 st;
	char		*cause = NULL;
	long		 fd;

	if (k->exe == NULL || stat(k->exe, &st) == -1 ||
	    !fileid_same(k->exe_id, &st))
		return -1;
	if (task_write(t, where, k->exe, strlen(k->exe) + 1, &cause) == -1 ||
	    task_sys_ok(t, "open exe", SYS_openat, (sysargs){ AT_FDCWD, where,
	    O_RDONLY | O_CLOEXEC, 0 }) == -1) {
		free(cause);
		free(task_cause(t));
		return -1;
	}
	fd = t->last_rv;
	snprintf(link, sizeof link, "/proc/%d/fd/%ld", t->pid, fd);
	if (stat(link, &st) == -1 || !fileid_same(k->exe_id, &st)) {
		task_sys_ok(t, "close", SYS_close, (sysargs){ fd });
		return -1;
	}
	return fd;
}

int
core_restore(struct mig_task *t, const Osm__ImgHeader *h,
    const Osm__ImgTask *k, int flags, char **cause)
{
	struct prctl_mm_map	 map;
	uint64_t		 auxv = t->scratch + sizeof map;
	uint64_t		 perm;
	size_t			 i;
	long			 exe;
	int			 bit;

	t->has_cpu_img = k->has_cpu_total_ns;
	t->cpu_img[0] = k->cpu_total_ns;
	t->cpu_img[1] = k->utime_ticks;
	t->cpu_img[2] = k->stime_ticks;
	t->has_usage_img = k->has_cpu_user_ns && k->has_cpu_sys_ns;
	t->usage_img[0] = k->cpu_user_ns;
	t->usage_img[1] = k->cpu_sys_ns;
	memset(&map, 0, sizeof map);
	map.start_code = k->start_code;
	map.end_code = k->end_code;
	map.start_data = k->start_data;
	map.end_data = k->end_data;
	map.start_brk = k->start_brk;
	map.brk = k->brk;
	map.start_stack = k->start_stack;
	map.arg_start = k->arg_start;
	map.arg_end = k->arg_end;
	map.env_start = k->env_start;
	map.env_end = k->env_end;
	map.auxv = (__u64 *)auxv;
	map.auxv_size = k->auxv.len;
	exe = core_exe_fd(t, k, auxv + AUXV_MAX);
	map.exe_fd = exe;
	if (task_write(t, auxv, k->auxv.data, k->auxv.len, cause) == -1 ||
	    task_write(t, t->scratch, &map, sizeof map, cause) == -1)
		return -1;
	if (task_sys_ok(t, "PR_SET_MM_MAP", SYS_prctl, (sysargs){ PR_SET_MM,
	    PR_SET_MM_MAP, t->scratch, sizeof map }) == -1) {
		if (exe == -1)
			goto inject;
		/* Only the executable link needs a capability: keep ours. */
		free(task_cause(t));
		map.exe_fd = -1;
		if (task_write(t, t->scratch, &map, sizeof map, cause) == -1)
			return -1;
		if (task_sys_ok(t, "PR_SET_MM_MAP", SYS_prctl,
		    (sysargs){ PR_SET_MM, PR_SET_MM_MAP, t->scratch,
		    sizeof map }) == -1)
			goto inject;
	}
	if (exe != -1 && task_sys_ok(t, "close", SYS_close,
	    (sysargs){ exe }) == -1)
		goto inject;

	/* Personality and no_new_privs are each thread's. */
	for (i = 0; i < t->nth; i++) {
		if (task_tsys_ok(t, t->th[i], "personality", SYS_personality,
		    (sysargs){ k->personality }) == -1 ||
		    (k->no_new_privs && task_tsys_ok(t, t->th[i],
		    "PR_SET_NO_NEW_PRIVS", SYS_prctl,
		    (sysargs){ PR_SET_NO_NEW_PRIVS, 1 }) == -1))
			goto inject;
	}
	/*
	 * Taking on another user made it undumpable: as it was, then. A
	 * migrated process stays dumpable, or its agents could not move it
	 * again.
	 */
	if (task_sys_ok(t, "PR_SET_DUMPABLE", SYS_prctl,
	    (sysargs){ PR_SET_DUMPABLE, (flags & MIG_CONTEXT) ||
	    k->dumpable != 0 }) == -1)
		goto inject;
	/* Dynamic FPU features (AMX) the process had asked for. */
	if (task_sys_ok(t, "ARCH_GET_XCOMP_PERM", SYS_arch_prctl,
	    (sysargs){ ARCH_GET_XCOMP_PERM, t->scratch }) == -1)
		goto inject;
	if (task_read(t, t->scratch, &perm, sizeof perm, cause) == -1)
		return -1;
	if ((k->xcomp_perm & ~perm) != 0) {
		bit = 63 - __builtin_clzll(k->xcomp_perm & ~perm);
		if (task_sys_ok(t, "ARCH_REQ_XCOMP_PERM", SYS_arch_prctl,
		    (sysargs){ ARCH_REQ_XCOMP_PERM, bit }) == -1)
			goto inject;
	}
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}

/*
 * No thread keeps more capabilities than the image's process had (a
 * restore inside a user namespace of ours starts with every one of that
 * namespace), nor more than it has: the kernel gives none back.
 */
int
core_restore_caps(struct mig_task *t, const Osm__ImgTask *k, int flags,
    char **cause)
{
	struct mig_thread	*th;
	uint32_t		 hdr[2] = { CAP_VERSION_3, 0 }, d[6];
	uint64_t		 eff, prm, inh;
	char			 buf[64];
	size_t			 i;

	if (flags & MIG_CONTEXT)
		return 0;
	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		if (task_thread_status(t, th, "CapEff", buf, sizeof buf,
		    cause) == -1)
			return -1;
		eff = strtoull(buf, NULL, 16);
		if (task_thread_status(t, th, "CapPrm", buf, sizeof buf,
		    cause) == -1)
			return -1;
		prm = strtoull(buf, NULL, 16);
		if (task_thread_status(t, th, "CapInh", buf, sizeof buf,
		    cause) == -1)
			return -1;
		inh = strtoull(buf, NULL, 16);
		if ((eff & k->cap_eff) == eff && (prm & k->cap_prm) == prm &&
		    (inh & k->cap_inh) == inh)
			continue;
		prm &= k->cap_prm;
		eff &= k->cap_eff & prm;
		inh &= k->cap_inh;
		d[0] = eff;
		d[1] = prm;
		d[2] = inh;
		d[3] = eff >> 32;
		d[4] = prm >> 32;
		d[5] = inh >> 32;
		if (task_write(t, t->scratch, hdr, sizeof hdr, cause) == -1 ||
		    task_write(t, t->scratch + sizeof hdr, d, sizeof d,
		    cause) == -1)
			return -1;
		if (task_tsys_ok(t, th, "capset", SYS_capset,
		    (sysargs){ t->scratch, t->scratch + sizeof hdr }) == -1) {
			*cause = task_cause(t);
			return -1;
		}
	}
	return 0;
}
