/*
 * P's CPU-time clocks back home. The kernel's count what P used here only
 * (at home, and as the husk while away); what the process used away is
 * in the image that came home: the process's CPU time (ImgTask
 * cpu_total_ns) and each thread's (ImgThread cpu_ns), each the total
 * wherever it ran. What the kernel here does not count of it is carried:
 * the clock stub (stub.c) is put into P, held, before it runs again, and
 * adds it to CLOCK_PROCESS_CPUTIME_ID and each thread's
 * CLOCK_THREAD_CPUTIME_ID read through the vDSO (clock(),
 * time.process_time() and clock_gettime itself); dumps of P (the next
 * move, a checkpoint) leave the stub out and carry the time on, and the
 * next move's setup counts it. times() and getrusage() make the system
 * call themselves, which at home no one could answer without a ptrace
 * stop: the usage stub (ustub.c) is put into libc's times and getrusage
 * beside the clock stub, and adds the same bases from the clock stub's
 * data (a seccomp filter whose notifications we answered would cost a
 * round trip a call, and P's children would inherit it, exec or not).
 *
 * A thread P makes at home starts at 0 (the stub stops taking the one
 * thread's entry as every thread's, and an entry of a thread that ended
 * whose id the new one has is zeroed); a child P forks gets the stub's
 * data wiped (MADV_WIPEONFORK): its clocks are its own. An exec drops the
 * stub with the old program's memory, and the clocks are the kernel's
 * again.
 */
#include <sys/ptrace.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* P's CPU clock, or thread tid's, the kernel's: 0 if it cannot be read. */
static uint64_t
clock_kernel(pid_t pid, pid_t tid)
{
	uint64_t	ns;

	if ((tid == 0 ? proc_cpu_clock(pid, &ns) :
	    proc_thread_cpu(pid, tid, &ns)) == -1)
		return 0;
	return ns;
}

/* What the image said, less what the kernel counts: never below 0. */
static uint64_t
clock_less(uint64_t img, uint64_t here)
{
	return img > here ? img - here : 0;
}

/*
 * What times() and getrusage() of P, just restored and held, carry of
 * each of user and system time: what the image says it could have read
 * at most less what the kernel here counts at least, so that neither
 * ever says less than before the move (a tick ahead, rather). An image
 * without them (an older version's): the CPU clock's, split as R's
 * kernel split it.
 */
static void
clock_usage(struct deputy *d)
{
	uint64_t	iu, is, ku, ks;

	if (mig_process_usage(d->task, &iu, &is) == -1 ||
	    proc_usage_bound(d->pid, 0, &ku, &ks) == -1) {
		d->usage_user_ns = d->carry_user_ns;
		d->usage_sys_ns = d->carry_ns - d->carry_user_ns;
		return;
	}
	d->usage_user_ns = clock_less(iu, ku);
	d->usage_sys_ns = clock_less(is, ks);
}

/*
 * An image was restored into P, held in d->task: carry what the kernel
 * does not count of its CPU time, and put the stub in to add it. Without
 * the image's times (an older version's), with nothing to add, or if the
 * stub cannot be put in, nothing is carried: the clocks are the kernel's.
 */
void
deputy_clock_restored(struct deputy *d)
{
	uint64_t	 total, ut, st, ns, any;
	pid_t		*tids;
	size_t		 n, i;
	char		*cause = NULL;

	deputy_clock_exec(d);
	if (mig_process_cpu(d->task, &total, &ut, &st) == -1)
		return;
	d->carry_ns = any = clock_less(total, clock_kernel(d->pid, 0));
	d->carry_user_ns = ut + st == 0 ? d->carry_ns :
	    (unsigned __int128)d->carry_ns * ut / (ut + st);
	clock_usage(d);
	any |= d->usage_user_ns | d->usage_sys_ns;
	n = mig_threads(d->task, NULL, 0);
	tids = xcalloc(n, sizeof *tids);
	mig_threads(d->task, tids, n);
	d->tcpu = xcalloc(n, sizeof *d->tcpu);
	for (i = 0; i < n; i++) {
		if (mig_thread_cpu(d->task, tids[i], &ns) == -1)
			continue;
		d->tcpu[d->ntcpu].tid = tids[i];
		d->tcpu[d->ntcpu].ns = clock_less(ns, clock_kernel(d->pid,
		    mig_thread_here(d->task, tids[i])));
		any |= d->tcpu[d->ntcpu++].ns;
	}
	free(tids);
	if (any != 0 && stub_install(&d->stub, d->task, d->pid, d->carry_ns,
	    d->usage_user_ns, d->usage_sys_ns, d->tcpu, d->ntcpu,
	    &cause) == -1) {
		log_warnx("process %d (%s): its CPU clocks at home leave out "
		    "the %.3f s it used away: %s", (int)d->pid, d->command,
		    d->carry_ns / 1e9, cause);
		free(cause);
		/* the kernel's from here on, as before, never a jump up */
		deputy_clock_exec(d);
	} else if (any != 0 && ustub_install(&d->ustub, &d->stub, d->task,
	    d->pid, 0, &cause) == -1) {
		/* its clocks go on; times and getrusage are the kernel's */
		log_warnx("process %d (%s): its times and getrusage at home "
		    "leave out the %.3f s it used away: %s", (int)d->pid,
		    d->command, d->carry_ns / 1e9, cause);
		free(cause);
	}
	deputy_clock_hold(d);
}

/* Dumps of P, held in d->task, leave the stub out and carry the time. */
void
deputy_clock_hold(struct deputy *d)
{
	mig_cpu_carried(d->task, d->carry_ns, d->tcpu, d->ntcpu);
	mig_usage_carried(d->task, d->usage_user_ns, d->usage_sys_ns);
	if (d->stub.start != 0) {
		d->stub.hidden.next = ustub_hidden(&d->ustub);
		mig_hide(d->task, &d->stub.hidden);
	}
}

/* What the rounds of a live dump of P leave out; NULL: nothing. */
const struct mig_hidden *
deputy_clock_hidden(struct deputy *d)
{
	if (d->stub.start == 0)
		return NULL;
	d->stub.hidden.next = ustub_hidden(&d->ustub);
	return &d->stub.hidden;
}

/* P's CPU time, with what it carried: for a move's setup, and mosps. */
void
deputy_clock_cpu(struct deputy *d, uint64_t *user_ns, uint64_t *sys_ns)
{
	proc_cpu_ns(d->pid, user_ns, sys_ns);
	*user_ns += d->carry_user_ns;
	*sys_ns += d->carry_ns - d->carry_user_ns;
}

/*
 * What P's times() and getrusage() could say at most of its user and
 * system time now, P held: for a move's setup, which R's go on from.
 */
void
deputy_clock_usage(struct deputy *d, uint64_t *user_ns, uint64_t *sys_ns)
{
	uint64_t	tick = 1000000000ULL / sysconf(_SC_CLK_TCK);

	proc_usage_bound(d->pid, 1, user_ns, sys_ns);
	/* what the usage stub adds: times()'s ticks, rounded up */
	*user_ns += (d->usage_user_ns + tick - 1) / tick * tick;
	*sys_ns += (d->usage_sys_ns + tick - 1) / tick * tick;
}

/*
 * P, held, becomes the husk of a copy away, which carries the time on:
 * the stub goes (the husk's code replaces every thread's registers, and
 * a restore into P finds its vDSO as the kernel made it).
 */
void
deputy_clock_leave(struct deputy *d)
{
	char	*cause = NULL;

	if (ustub_remove(&d->ustub, d->task, &cause) == -1) {
		log_warnx("process %d: %s", (int)d->pid, cause);
		free(cause);
		cause = NULL;
	}
	if (stub_remove(&d->stub, d->task, &cause) == -1) {
		log_warnx("process %d: %s", (int)d->pid, cause);
		free(cause);
	}
	mig_hide(d->task, NULL);
	mig_cpu_carried(d->task, 0, NULL, 0);
	mig_usage_carried(d->task, 0, 0);
	deputy_clock_exec(d);
}

/*
 * P at home made thread tid (ours; 0: a thread stopped at its start, as
 * a new one is, which may come before its maker's event): it starts at
 * 0. (The stub is told through /proc/P/mem, which does not fail us, P's
 * tracer, short of P's end.)
 */
void
deputy_clock_clone(struct deputy *d, pid_t tid)
{
	char	 buf[128], *p;
	pid_t	 vtid;
	size_t	 i;
	char	*cause = NULL;

	if (d->stub.start == 0)
		return;
	if (stub_threaded(&d->stub, &cause) == -1)
		goto fail;
	if (tid == 0)
		return;
	vtid = tid;
	if (proc_status(tid, "NSpid", buf, sizeof buf) == 0 &&
	    (p = strrchr(buf, '\t')) != NULL)
		vtid = (pid_t)strtol(p + 1, NULL, 10);
	for (i = 0; i < d->ntcpu; i++) {
		if (d->tcpu[i].tid != vtid)
			continue;
		d->tcpu[i].tid = 0;
		d->tcpu[i].ns = 0;
		if (stub_thread_gone(&d->stub, i, &cause) == -1)
			goto fail;
	}
	return;
fail:
	log_warnx("process %d: its new thread's clock: %s", (int)d->pid,
	    cause);
	free(cause);
}

/* P's memory is no longer the one the stub was put in: nothing carried. */
void
deputy_clock_exec(struct deputy *d)
{
	memset(&d->stub, 0, sizeof d->stub);
	memset(&d->ustub, 0, sizeof d->ustub);
	free(d->tcpu);
	d->tcpu = NULL;
	d->ntcpu = 0;
	d->carry_ns = d->carry_user_ns = 0;
	d->usage_user_ns = d->usage_sys_ns = 0;
}
