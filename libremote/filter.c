/*
 * R's seccomp filter, built from the table: a classic BPF program that
 * lets the local calls run and sends every other call to the guest agent
 * (SECCOMP_RET_USER_NOTIF). It is linear, in the table's order, hottest
 * local calls first: a forwarded call costs some fifty compares, nothing
 * beside the notification that follows.
 *
 * A local call whose class depends on an argument (mmap's flags, clock
 * ids, prctl options, the scheduler calls' pid) is checked on the low 32
 * bits of that argument, as the kernel reads it, and table_resolve reads
 * the same bits, so the filter and the table cannot disagree.
 *
 * Another architecture (i386 through int 0x80) or an x32 number matches
 * nothing and is notified: the guest agent finds no entry and brings the
 * process home.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define ARG_LOW(i)	(offsetof(struct seccomp_data, args) + 8 * (i))

struct prog {
	struct sock_filter	*insns;
	size_t			 n;
	size_t			 size;
};

static void
filter_emit(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf,
    uint32_t k)
{
	if (p->n == p->size) {
		p->size = p->size == 0 ? 256 : 2 * p->size;
		p->insns = xreallocarray(p->insns, p->size, sizeof *p->insns);
	}
	p->insns[p->n++] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
}

static void
filter_ret(struct prog *p, uint32_t action)
{
	filter_emit(p, BPF_RET | BPF_K, 0, 0, action);
}

/*
 * One entry whose class depends on an argument: if the number matches,
 * load the argument and allow the local values; otherwise fall through
 * with the number still loaded.
 */
static int
filter_rule(struct prog *p, const struct table_entry *e, char **cause)
{
	const struct table_rule	*r = e->rule;
	uint32_t		 local[64];
	size_t			 n = 0, i;

	if (r->bit != 0) {
		filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 4, e->nr);
		filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
		    ARG_LOW(r->arg));
		filter_emit(p, BPF_JMP | BPF_JSET | BPF_K, 1, 0, r->bit);
		filter_ret(p, SECCOMP_RET_USER_NOTIF);
		filter_ret(p, SECCOMP_RET_ALLOW);
		return 0;
	}
	for (i = 0; i < r->nsubs; i++) {
		if (r->subs[i].class != RMT_LOCAL)
			continue;
		if (n == nitems(local)) {
			xasprintf(cause, "%s: too many local values", e->name);
			return -1;
		}
		local[n++] = r->subs[i].value;
	}
	if (n == 0)
		return 0;
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, n + 3, e->nr);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(r->arg));
	for (i = 0; i < n; i++)
		filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, n - i, 0, local[i]);
	filter_ret(p, SECCOMP_RET_USER_NOTIF);
	filter_ret(p, SECCOMP_RET_ALLOW);
	return 0;
}

/*
 * The guest's clock stub in R reads R's own CPU clocks with the high half
 * of the id set to RMT_CLOCK_MAGIC (request_clock_stub), and its thread's
 * id with the same first argument, which gettid ignores: let those run,
 * and fall through with the number loaded again for anything else.
 */
static void
filter_clock_stub(struct prog *p)
{
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 7, SYS_clock_gettime);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0) + 4);
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 4, RMT_CLOCK_MAGIC);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0));
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0,
	    CLOCK_PROCESS_CPUTIME_ID);
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1,
	    CLOCK_THREAD_CPUTIME_ID);
	filter_ret(p, SECCOMP_RET_ALLOW);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, nr));
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 4, SYS_gettid);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0) + 4);
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, RMT_CLOCK_MAGIC);
	filter_ret(p, SECCOMP_RET_ALLOW);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, nr));
}

/*
 * The usage stub in R (agent/ustub.c) reads R's own usage with
 * getrusage(RUSAGE_SELF or RUSAGE_THREAD) and RMT_CLOCK_MAGIC in the high
 * half of who (request_rusage_stub), and the node's ticks with
 * times(NULL), both halves 0 (request_times_class): let those run, and
 * fall through with the number loaded again for anything else. Emitted
 * beside the clock stub's, early, rather than at times' place in the
 * table: a program polling them pays every compare before (a getrusage
 * under the filter, 2026-12-02: 1.1 us here, 1.2 there, 0.95 bare); any
 * later call pays two more.
 */
static void
filter_usage_stub(struct prog *p)
{
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 6, SYS_times);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0));
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 0);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0) + 4);
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
	filter_ret(p, SECCOMP_RET_ALLOW);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, nr));
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 7, SYS_getrusage);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0) + 4);
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 4, RMT_CLOCK_MAGIC);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0));
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, RUSAGE_SELF);
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, RUSAGE_THREAD);
	filter_ret(p, SECCOMP_RET_ALLOW);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, nr));
}

/*
 * The stub in R makes the calls on files opened here itself, the
 * descriptor marked with RMT_CLOCK_MAGIC in its high half (struct
 * rstub_shm; request_fd_stub_class): let those run, and fall through
 * with the number loaded again for anything else. The mark reaches only
 * R's own table, which holds nothing but files opened for it with its
 * owner's rights, stand-ins of its mappings and /dev/null: a program
 * that forges it misleads itself alone. First in the program: any other
 * call pays these compares, some nanoseconds.
 */
static const int filter_fd_stub_nrs[] = {
	SYS_read, SYS_write, SYS_pread64, SYS_pwrite64, SYS_lseek, SYS_fsync,
	SYS_fdatasync, SYS_flock, SYS_fstat, SYS_close
};

static void
filter_fd_stub(struct prog *p)
{
	size_t	n = nitems(filter_fd_stub_nrs), i;

	for (i = 0; i < n; i++)
		filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, n - i, 0,
		    filter_fd_stub_nrs[i]);
	filter_emit(p, BPF_JMP | BPF_JA, 0, 0, 4);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0) + 4);
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, RMT_CLOCK_MAGIC);
	filter_ret(p, SECCOMP_RET_ALLOW);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, nr));
}

/*
 * And fcntl's lock commands, marked so (F_GETLK, F_SETLK, F_SETLKW and
 * their OFD kind): no other command, which could make a descriptor R's
 * table has and P's not (F_DUPFD) or change what the guest knows of one.
 */
static const uint32_t filter_lock_cmds[] = {
	F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW
};

static void
filter_fd_lock_stub(struct prog *p)
{
	size_t	n = nitems(filter_lock_cmds), i;

	/* past all of it, the number still loaded */
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, n + 5, SYS_fcntl);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(1));
	for (i = 0; i < n; i++)
		filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, n - 1 - i,
		    i == n - 1 ? 3 : 0, filter_lock_cmds[i]);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LOW(0) + 4);
	filter_emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, RMT_CLOCK_MAGIC);
	filter_ret(p, SECCOMP_RET_ALLOW);
	filter_emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, nr));
}

/* Build the program; free it with filter_free. */
int
filter_build(struct sock_fprog *fprog, char **cause)
{
	struct prog			 p = { 0 };
	const struct table_entry	*tab, *e;
	size_t				 n, i;

	if (table_check(cause) != 0)
		return -1;
	tab = table_entries(&n);

	filter_emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, arch));
	filter_emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, AUDIT_ARCH_X86_64);
	filter_ret(&p, SECCOMP_RET_USER_NOTIF);
	filter_emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, nr));
	filter_fd_stub(&p);
	filter_fd_lock_stub(&p);
	for (i = 0; i < n; i++) {
		e = &tab[i];
		if (e->nr == SYS_clock_gettime) {
			filter_clock_stub(&p);
			filter_usage_stub(&p);
		}
		if (e->rule != NULL) {
			if (filter_rule(&p, e, cause) != 0)
				goto fail;
		} else if (e->class == RMT_LOCAL) {
			filter_emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, e->nr);
			filter_ret(&p, SECCOMP_RET_ALLOW);
		}
	}
	filter_ret(&p, SECCOMP_RET_USER_NOTIF);

	if (p.n > BPF_MAXINSNS) {
		xasprintf(cause, "filter of %zu instructions is over the "
		    "kernel's limit", p.n);
		goto fail;
	}
	fprog->len = p.n;
	fprog->filter = p.insns;
	return 0;

fail:
	free(p.insns);
	return -1;
}

void
filter_free(struct sock_fprog *fprog)
{
	free(fprog->filter);
	fprog->filter = NULL;
	fprog->len = 0;
}

/*
 * Put the filter on the calling process and return the listener. The
 * guest agent does the same in R by injection; this is for tests and for
 * a process that confines itself.
 */
int
filter_install_self(char **cause)
{
	struct sock_fprog	prog;
	int			fd;

	if (filter_build(&prog, cause) != 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		xasprintf(cause, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
		filter_free(&prog);
		return -1;
	}
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd == -1)
		xasprintf(cause, "seccomp: %s", strerror(errno));
	filter_free(&prog);
	return fd;
}
