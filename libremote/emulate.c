/*
 * CPU time as the process sees it: what R's kernel task has used since it
 * was restored here, plus what the process used before (the base, carried
 * in the session), so that clock_gettime(CLOCK_PROCESS_CPUTIME_ID),
 * times() and getrusage() go on from where they were.
 *
 * Any process may read another's process-wide CPU clocks
 * (clock_gettime on MAKE_PROCESS_CPUCLOCK(pid, ...)), with nanosecond
 * precision; a thread's come from /proc/TID/schedstat (nanoseconds) and
 * /proc/TID/stat (ticks). A thread's clock goes on from that thread's own
 * CPU time (emulate_thread_base, from its record in the image); a thread
 * made here, or one the caller said nothing of, starts at 0, as it would
 * have at home. The process's faults and the like (the base's) belong to
 * the main thread.
 */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define NSEC		1000000000ULL
#define PROF		0
#define VIRT		1
#define SCHED		2
#define PROCESS_CLOCK(pid, which)	\
	((clockid_t)(((unsigned int)~(pid) << 3) | (which)))

struct cpu {
	uint64_t	 rtime;		/* ns on the CPU */
	uint64_t	 utime;		/* ns, tick-sampled */
	uint64_t	 stime;
	uint64_t	 minflt;
	uint64_t	 majflt;
};

static uint64_t
emulate_ticks_ns(uint64_t ticks)
{
	return ticks * (NSEC / sysconf(_SC_CLK_TCK));
}

static int
emulate_clock(pid_t pid, int which, uint64_t *ns)
{
	struct timespec	ts;

	if (clock_gettime(PROCESS_CLOCK(pid, which), &ts) != 0)
		return -1;
	*ns = ts.tv_sec * NSEC + ts.tv_nsec;
	return 0;
}

/* /proc/PID[/task/TID]/stat: faults and tick-sampled times. */
static int
emulate_stat(const char *dir, struct cpu *cpu)
{
	char			 path[96], buf[1024], *p;
	unsigned long long	 minflt, majflt, utime, stime;

	snprintf(path, sizeof path, "%s/stat", dir);
	if (read_file_str(path, buf, sizeof buf) != 0 ||
	    (p = strrchr(buf, ')')) == NULL)
		return -1;
	/* after the name: state ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime stime */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu %*u %llu %*u "
	    "%llu %llu", &minflt, &majflt, &utime, &stime) != 4)
		return -1;
	cpu->minflt = minflt;
	cpu->majflt = majflt;
	cpu->utime = emulate_ticks_ns(utime);
	cpu->stime = emulate_ticks_ns(stime);
	return 0;
}

/*
 * Thread tid (ours) used ns of CPU before it came: its clocks go on from
 * there. 0 forgets it (it ended, its id may be another's).
 */
void
emulate_thread_base(struct emulate *e, pid_t tid, uint64_t ns)
{
	size_t	i;

	for (i = 0; i < e->nthreads; i++) {
		if (e->threads[i].tid == tid)
			break;
	}
	if (ns == 0) {
		if (i < e->nthreads)
			e->threads[i] = e->threads[--e->nthreads];
		return;
	}
	if (i == e->nthreads) {
		e->threads = xreallocarray(e->threads, e->nthreads + 1,
		    sizeof *e->threads);
		e->nthreads++;
	}
	e->threads[i].tid = tid;
	e->threads[i].ns = ns;
}

void
emulate_free(struct emulate *e)
{
	free(e->threads);
	e->threads = NULL;
	e->nthreads = 0;
}

/*
 * Thread tid's base added to its clocks: all of it to the precise one,
 * split between user and system time as the process's base is (one
 * number is carried per thread).
 */
static void
emulate_thread_add(struct emulate *e, pid_t tid, struct cpu *cpu)
{
	uint64_t	ns = 0, u = e->base.utime_ns, s = e->base.stime_ns;
	uint64_t	su;
	size_t		i;

	for (i = 0; i < e->nthreads; i++) {
		if (e->threads[i].tid == tid) {
			ns = e->threads[i].ns;
			break;
		}
	}
	su = u + s == 0 ? 0 : (unsigned __int128)ns * s / (u + s);
	cpu->rtime += ns;
	cpu->utime += ns - su;
	cpu->stime += su;
}

/*
 * Process-wide or one thread's (scope 1: tid, scope 2: the main one);
 * the process's with its base (bare: R's kernel's only).
 */
static int
emulate_cpu_of(struct emulate *e, pid_t tid, int scope, int bare,
    struct cpu *cpu)
{
	char		dir[64], buf[128];
	uint64_t	prof;
	int		main;

	memset(cpu, 0, sizeof *cpu);
	if (scope == 2)
		tid = e->pid;
	main = scope == 0 || tid == e->pid;
	if (scope == 0) {
		snprintf(dir, sizeof dir, "/proc/%ld", (long)e->pid);
		if (emulate_stat(dir, cpu) != 0 ||
		    emulate_clock(e->pid, SCHED, &cpu->rtime) != 0 ||
		    emulate_clock(e->pid, VIRT, &cpu->utime) != 0 ||
		    emulate_clock(e->pid, PROF, &prof) != 0)
			return -1;
		cpu->stime = prof - cpu->utime;
	} else {
		snprintf(dir, sizeof dir, "/proc/%ld/task/%ld", (long)e->pid,
		    (long)tid);
		snprintf(buf, sizeof buf, "%s/schedstat", dir);
		if (emulate_stat(dir, cpu) != 0 ||
		    read_file_u64(buf, &cpu->rtime) != 0)
			return -1;
	}
	if (scope == 0 && !bare) {
		cpu->rtime += e->base.utime_ns + e->base.stime_ns;
		cpu->utime += e->base.utime_ns;
		cpu->stime += e->base.stime_ns;
	} else if (scope != 0)
		emulate_thread_add(e, tid, cpu);
	if (main) {
		cpu->minflt += e->base.minflt;
		cpu->majflt += e->base.majflt;
	}
	return 0;
}

static int
emulate_cpu(struct emulate *e, pid_t tid, int scope, struct cpu *cpu)
{
	return emulate_cpu_of(e, tid, scope, 0, cpu);
}

/*
 * Split the precise run time by the ratio of the sampled user and system
 * times, never going back, as the kernel's cputime_adjust does for times()
 * and getrusage().
 */
static void
emulate_adjust(struct emulate *e, struct cpu *cpu, int keep)
{
	uint64_t	rtime = cpu->rtime, utime = cpu->utime;
	uint64_t	stime = cpu->stime;

	if (keep && e->prev_utime + e->prev_stime >= rtime) {
		cpu->utime = e->prev_utime;
		cpu->stime = e->prev_stime;
		return;
	}
	if (stime == 0)
		utime = rtime;
	else if (utime == 0)
		stime = rtime;
	else
		stime = (unsigned __int128)stime * rtime / (stime + utime);
	/* neither goes back, whichever of them the samples missed */
	if (keep && stime < e->prev_stime)
		stime = e->prev_stime;
	utime = rtime - stime;
	if (keep && utime < e->prev_utime) {
		utime = e->prev_utime;
		stime = rtime - utime;
	}
	cpu->utime = utime;
	cpu->stime = stime;
	if (keep) {
		e->prev_utime = utime;
		e->prev_stime = stime;
	}
}

/*
 * The process's user and system time as times() and getrusage() say it:
 * R's kernel's, split as the kernel splits it (never going back), plus
 * what each went on from (usage_user_ns, usage_sys_ns) — as the usage
 * stub adds them to the kernel's own, and as a dump records them.
 */
static int
emulate_self_usage(struct emulate *e, pid_t tid, struct cpu *cpu)
{
	if (emulate_cpu_of(e, tid, 0, 1, cpu) != 0)
		return -1;
	emulate_adjust(e, cpu, 1);
	cpu->utime += e->base.usage_user_ns;
	cpu->stime += e->base.usage_sys_ns;
	return 0;
}

static long
emulate_write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec	local = { (void *)buf, len };
	struct iovec	remote = { (void *)(uintptr_t)addr, len };

	if (process_vm_writev(tid, &local, 1, &remote, 1, 0) != (ssize_t)len)
		return -EFAULT;
	return 0;
}

static long
emulate_clock_call(struct emulate *e, pid_t tid, int res,
    const uint64_t *args)
{
	struct timespec	ts;
	struct cpu	cpu;
	uint64_t	ns;
	int		which, scope;

	if (request_cpu_clock((int32_t)args[0], e->home_pid, &which,
	    &scope) != 0)
		return -EINVAL;
	if (res) {
		/* the same kind of clock of our own has the same resolution */
		if (scope == 0)
			ns = PROCESS_CLOCK(0, which);
		else
			ns = PROCESS_CLOCK(0, which) | 4;
		if (clock_getres((clockid_t)ns, &ts) != 0)
			return -errno;
		if (args[1] == 0)
			return 0;
	} else {
		if (emulate_cpu(e, tid, scope, &cpu) != 0)
			return -EINVAL;
		ns = which == SCHED ? cpu.rtime : which == VIRT ? cpu.utime :
		    cpu.utime + cpu.stime;
		ts.tv_sec = ns / NSEC;
		ts.tv_nsec = ns % NSEC;
	}
	return emulate_write(tid, args[1], &ts, sizeof ts);
}

static long
emulate_times(struct emulate *e, pid_t tid, const uint64_t *args)
{
	struct tms	 t;
	struct cpu	 cpu;
	uint64_t	 tick = NSEC / sysconf(_SC_CLK_TCK);
	long		 now, rv;

	/* the node's ticks since boot: only differences mean anything */
	now = syscall(SYS_times, NULL);
	if (args[0] == 0)
		return now;
	if (emulate_self_usage(e, tid, &cpu) != 0)
		return -EINVAL;
	t.tms_utime = cpu.utime / tick;
	t.tms_stime = cpu.stime / tick;
	t.tms_cutime = e->base.cutime_ns / tick;
	t.tms_cstime = e->base.cstime_ns / tick;
	if ((rv = emulate_write(tid, args[0], &t, sizeof t)) != 0)
		return rv;
	return now;
}

/* VmHWM and the context switches, from /proc/.../status. */
static void
emulate_status(const char *dir, struct rusage *ru)
{
	char		 path[96], line[128];
	FILE		*f;
	long		 v;

	snprintf(path, sizeof path, "%s/status", dir);
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "VmHWM: %ld", &v) == 1 && v > ru->ru_maxrss)
			ru->ru_maxrss = v;
		else if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			ru->ru_nvcsw += v;
		else if (sscanf(line, "nonvoluntary_ctxt_switches: %ld",
		    &v) == 1)
			ru->ru_nivcsw += v;
	}
	fclose(f);
}

static long
emulate_rusage(struct emulate *e, pid_t tid, const uint64_t *args)
{
	struct rusage	ru;
	struct cpu	cpu;
	char		dir[64];
	int		thread = (int)args[0] == RUSAGE_THREAD;

	if (thread ? emulate_cpu(e, tid, 1, &cpu) != 0 :
	    emulate_self_usage(e, tid, &cpu) != 0)
		return -EINVAL;
	if (thread)
		emulate_adjust(e, &cpu, 0);
	memset(&ru, 0, sizeof ru);
	ru.ru_utime.tv_sec = cpu.utime / NSEC;
	ru.ru_utime.tv_usec = cpu.utime % NSEC / 1000;
	ru.ru_stime.tv_sec = cpu.stime / NSEC;
	ru.ru_stime.tv_usec = cpu.stime % NSEC / 1000;
	ru.ru_minflt = cpu.minflt;
	ru.ru_majflt = cpu.majflt;
	if (!thread || tid == e->pid) {
		ru.ru_maxrss = e->base.maxrss_kb;
		ru.ru_nvcsw = e->base.nvcsw;
		ru.ru_nivcsw = e->base.nivcsw;
	}
	if (thread)
		snprintf(dir, sizeof dir, "/proc/%ld/task/%ld", (long)e->pid,
		    (long)tid);
	else
		snprintf(dir, sizeof dir, "/proc/%ld", (long)e->pid);
	emulate_status(dir, &ru);
	return emulate_write(tid, args[1], &ru, sizeof ru);
}

/*
 * The process's user and system time as its times() and getrusage()
 * would say them now (R stopped): no less than they said before. -1 if
 * they cannot be read.
 */
int
emulate_usage(struct emulate *e, uint64_t *user_ns, uint64_t *sys_ns)
{
	struct cpu	cpu;

	if (emulate_self_usage(e, e->pid, &cpu) != 0)
		return -1;
	*user_ns = cpu.utime;
	*sys_ns = cpu.stime;
	return 0;
}

/*
 * What R's times() and getrusage() would say of its user and system time
 * now, R stopped (for a dump, which must record no less); -1: unknown.
 */
int
remote_usage(struct remote *g, uint64_t *user_ns, uint64_t *sys_ns)
{
	return emulate_usage(&g->emu, user_ns, sys_ns);
}

/*
 * Answer an emulated call of R's thread tid: the raw return value, a
 * negative errno on failure.
 */
long
emulate_call(struct emulate *e, pid_t tid, int nr, const uint64_t *args)
{
	switch (nr) {
	case SYS_clock_gettime:
		return emulate_clock_call(e, tid, 0, args);
	case SYS_clock_getres:
		return emulate_clock_call(e, tid, 1, args);
	case SYS_times:
		return emulate_times(e, tid, args);
	case SYS_getrusage:
		return emulate_rusage(e, tid, args);
	}
	return -ENOSYS;
}
