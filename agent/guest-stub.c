/*
 * The clock stub in R (stub.c): R's CPU-time clocks answered inside R,
 * with no wakeup of another process. A program that polls clock(),
 * time.process_time() or clock_gettime(CLOCK_PROCESS_CPUTIME_ID) calls
 * the vDSO's clock_gettime, which for a CPU clock makes the system call;
 * R's filter would notify it to us, some microseconds each
 * (libremote/emulate.c), against half a microsecond at home. With the
 * stub, R makes the call itself (with RMT_CLOCK_MAGIC, which the filter
 * lets run) and adds the CPU time used before R came: the process's to
 * the process's clock (the setup's, SES_CPU), the calling thread's own
 * to its thread clock, from the threads' records in the image. A thread
 * made here has no entry and starts at 0, as it would have at home; a
 * thread that ends has its entry zeroed, for its id may come back.
 * Beside it, the usage stub (ustub.c) in libc's times and getrusage adds
 * the same bases to R's own, from the clock stub's data page, with calls
 * the filter lets run too: glibc makes those calls with the system call
 * instruction itself, not through the vDSO.
 *
 * The stubs are the guest's, not the program's: dumps of R (the way
 * home, a checkpoint) leave their pages out and record the vDSO and
 * libc as they were (guest_stub_hide). No clock stub (a vDSO we cannot
 * patch, no room near it), and R's clocks, times and getrusage are
 * answered as before, by the guest agent; no usage stub (a static
 * program, a libc whose times or getrusage start otherwise), and its
 * times and getrusage are.
 *
 * Calls made with the system call instruction itself (a static program's,
 * syscall(2)'s) still come to the guest agent, which adds the same bases
 * (libremote/emulate.c). R's dumps carry each thread's time on
 * (mig_cpu_carried).
 */
#include <sys/syscall.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * Dumps of R through t record its user and system time as its times()
 * and getrusage() could have read them at most: R's kernel's and the
 * bases they went on from (as the usage stub adds them, rounded up to
 * the microsecond, whose ticks its times() counts); no less than the
 * guest's emulation of them would say now (what R read through it: its
 * split is its own).
 */
static void
guest_stub_usage(struct guest *g, struct mig_task *t)
{
	uint64_t	u = g->base.usage_user_ns, s = g->base.usage_sys_ns;
	uint64_t	eu, es, ku, ks;

	if (g->ustub.start != 0) {
		u = (u + 999) / 1000 * 1000;
		s = (s + 999) / 1000 * 1000;
	}
	if (g->remote != NULL && remote_usage(g->remote, &eu, &es) == 0 &&
	    proc_usage_bound(g->pid, 1, &ku, &ks) == 0) {
		if (eu > ku + u)
			u = eu - ku;
		if (es > ks + s)
			s = es - ks;
	}
	mig_usage_carried(t, u, s);
}

/*
 * Dumps of R through t leave the stubs out, and record each thread's CPU
 * time and the process's with what they carried here; NULL: none, what
 * the rounds of a live dump leave out (mig_live.hidden).
 */
const struct mig_hidden *
guest_stub_hide(struct guest *g, struct mig_task *t)
{
	const struct mig_hidden	*h = NULL;

	if (t != NULL) {
		mig_cpu_carried(t, g->base.utime_ns + g->base.stime_ns, g->tcpu,
		    g->ntcpu);
		guest_stub_usage(g, t);
	}
	if (g->rstub.start != 0)
		h = &g->rstub.read.hidden;
	if (g->ustub.start != 0) {
		g->ustub.getrusage.hidden.next = h;
		h = ustub_hidden(&g->ustub);
	}
	if (g->stub.start != 0) {
		g->stub.hidden.next = h;
		h = &g->stub.hidden;
	}
	if (t != NULL && h != NULL)
		mig_hide(t, h);
	return h;
}

/*
 * Each thread's CPU time before it came, from its record in the image R
 * was restored from (t, held): the stub's table and the guest's
 * emulation go on from it (remote_thread_cpu, once g->remote is made),
 * and R's dumps carry it. A record without it (an image of an older
 * version) gives the main thread the process's, as before.
 */
void
guest_stub_threads(struct guest *g, struct mig_task *t)
{
	pid_t	*tids;
	size_t	 n, i;
	uint64_t ns;

	n = mig_threads(t, NULL, 0);
	tids = xcalloc(n, sizeof *tids);
	mig_threads(t, tids, n);
	free(g->tcpu);
	g->tcpu = xcalloc(n, sizeof *g->tcpu);
	g->ntcpu = 0;
	for (i = 0; i < n; i++) {
		if (mig_thread_cpu(t, tids[i], &ns) == -1) {
			if (i != 0)
				continue;
			ns = g->base.utime_ns + g->base.stime_ns;
		}
		g->tcpu[g->ntcpu].tid = tids[i];
		g->tcpu[g->ntcpu++].ns = ns;
	}
	free(tids);
}

/*
 * Put the stubs into R, held in t under its filter: the clock stub, and
 * beside it the usage stub. -1: R's clocks are the guest's, and its
 * times and getrusage.
 */
int
guest_stub_install(struct guest *g, struct mig_task *t, char **cause)
{
	char	*why = NULL;

	if (stub_install(&g->stub, t, g->pid, g->base.utime_ns +
	    g->base.stime_ns, g->base.usage_user_ns, g->base.usage_sys_ns,
	    g->tcpu, g->ntcpu, cause) == -1)
		return -1;
	if (ustub_install(&g->ustub, &g->stub, t, g->pid, 1, &why) == -1) {
		log_info("%s: times and getrusage answered by the guest: %s",
		    g->conn.who, why);
		free(why);
	}
	return 0;
}

/*
 * R's reads of a window answered in R (rstub.c), if R has one thread
 * (held in t, before its filter; rstub_attach once g->remote is made);
 * if not, by us.
 */
void
guest_stub_reads(struct guest *g, struct mig_task *t)
{
	char	*why = NULL;

	if (g->threaded)
		return;
	if (rstub_install(&g->rstub, t, g->pid, &why) == -1) {
		log_info("%s: reads answered by the guest: %s", g->conn.who,
		    why);
		free(why);
	}
}

/*
 * Where R's threads are, from each one's /proc/PID/task/TID/syscall: 0
 * each is stopped or not running, outside the stub's code (at code) and
 * in no call the stub made on a file opened here (its descriptor marked);
 * 1 one is in either (whatever the others do); -1 one runs now, or
 * cannot be read.
 */
static int
guest_stub_where(pid_t pid, uint64_t code)
{
	char		 path[320], buf[512], *p;
	struct dirent	*de;
	uint64_t	 pc, a0;
	DIR		*d;
	int		 rv = 0;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while (rv != 1 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%s/syscall",
		    (int)pid, de->d_name);
		if (read_file_str(path, buf, sizeof buf) == -1 ||
		    strncmp(buf, "running", 7) == 0 ||
		    (p = strrchr(buf, ' ')) == NULL) {
			rv = -1;
			continue;
		}
		pc = strtoull(p + 1, NULL, 16);
		a0 = (p = strchr(buf, ' ')) != NULL ?
		    strtoull(p + 1, NULL, 16) : 0;
		if ((pc >= code && pc < code + 4096) ||
		    a0 >> 32 == RMT_CLOCK_MAGIC)
			rv = 1;
	}
	closedir(d);
	return rv;
}

/*
 * R held stopped: is a thread of it taking a lock on a file opened here
 * that the stub took (rstub_locking, or in the kernel in a marked fcntl
 * or flock: an F_SETLKW waiting)? A thread /proc cannot say of is taken to.
 */
int
guest_stub_locking(struct guest *g)
{
	char		 path[320], buf[512], *p, *end;
	struct dirent	*de;
	uint64_t	 pc, a0;
	long		 nr;
	DIR		*d;
	int		 rv = 0;

	snprintf(path, sizeof path, "/proc/%d/task", (int)g->pid);
	if ((d = opendir(path)) == NULL)
		return 1;
	while (rv == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%s/syscall",
		    (int)g->pid, de->d_name);
		if (read_file_str(path, buf, sizeof buf) == -1 ||
		    (p = strrchr(buf, ' ')) == NULL) {
			rv = 1;
			continue;
		}
		pc = strtoull(p + 1, NULL, 16);
		nr = strtol(buf, &end, 10);
		a0 = *end == ' ' ? strtoull(end + 1, NULL, 16) : 0;
		if (end == buf)
			rv = 1;		/* "running" */
		else if (nr == -1)
			rv = rstub_locking(&g->rstub, pc);
		else
			rv = (nr == SYS_fcntl || nr == SYS_flock) &&
			    a0 >> 32 == RMT_CLOCK_MAGIC;
	}
	closedir(d);
	return rv;
}

/*
 * R's way home goes live: R runs on through the rounds, and what it owes
 * the home's offsets must be sent before the home is told (it takes no
 * call after). So the stub serves no more, and once R is seen outside it
 * (no read of it half done: it would move an offset after we took them
 * in), or on a CPU three times 50 us apart (a read begun takes a few
 * microseconds there) with no write half way into the ring (its busy
 * mark: a write's copy may take longer), what it served is taken in, for
 * guest_files_stand_in to send. So with its calls on files opened here:
 * none is begun from now on, and none is still in the kernel.
 */
void
guest_stub_reads_off(struct guest *g)
{
	uint64_t	code = g->rstub.start;
	int		i, running = 0, local, served, where;

	if (code == 0 || g->remote == NULL)
		return;
	local = rstub_local_stop(g->remote);
	served = rstub_stop(g->remote);
	if (!local && !served)
		return;		/* off already (threads) */
	for (i = 0; i < 20000; i++) {
		usleep(50);
		if ((where = guest_stub_where(g->pid, code)) == 0)
			break;
		if (where == 1) {
			running = 0;	/* stopped in it: it goes on later */
		} else if (++running >= 3 && !rstub_half_written(g->remote))
			break;	/* on a CPU since: a read begun is done, and
				   no write is half way into the ring (a copy
				   of up to 1 MiB) */
	}
	if (i == 20000)
		log_warnx("%s: never seen outside the read stub: an offset may "
		    "be wrong at home", g->conn.who);
	rstub_threaded(g->remote);
}

/* Thread vtid (as R knows it) ended: its id may come back, from 0. */
void
guest_stub_thread_gone(struct guest *g, pid_t vtid)
{
	char	*cause = NULL;
	size_t	 i;

	for (i = 0; i < g->ntcpu; i++) {
		if (g->tcpu[i].tid == vtid)
			break;
	}
	if (i == g->ntcpu)
		return;
	g->tcpu[i].tid = 0;
	g->tcpu[i].ns = 0;
	if (stub_thread_gone(&g->stub, i, &cause) == -1) {
		log_warnx("%s: %s", g->conn.who, cause);
		free(cause);
	}
}

/*
 * R is making a thread, which waits in its clone for us: the stub must
 * look its thread up from now on. -1 if it could not be told.
 */
int
guest_stub_threaded(struct guest *g)
{
	char	*cause = NULL;

	if (g->remote != NULL)
		rstub_threaded(g->remote);
	if (stub_threaded(&g->stub, &cause) == -1) {
		log_warnx("%s: %s", g->conn.who, cause);
		free(cause);
		return -1;
	}
	return 0;
}
