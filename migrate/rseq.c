/*
 * Each thread's rseq registration. glibc registers an rseq area for every
 * thread, and the kernel writes into it at every preemption: a restore
 * unregisters each thread's own before it replaces the memory, with the
 * length the kernel reports (glibc's __rseq_size says less), and
 * registers the image's areas last of all; a dump notes them, and keeps
 * each area's critical-section word while it injects calls (dump.c).
 */
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include <linux/ptrace.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

#define RSEQ_FLAG_UNREGISTER	1

static int
rseq_config(struct mig_thread *th, struct ptrace_rseq_configuration *rc,
    char **cause)
{
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, th->tid, sizeof *rc,
	    rc) == -1) {
		xasprintf(cause, "PTRACE_GET_RSEQ_CONFIGURATION %d: %s",
		    th->tid, strerror(errno));
		return -1;
	}
	return 0;
}

/* The thread's registration, into its image record. */
int
rseq_dump(struct mig_thread *th, Osm__ImgThread *it, char **cause)
{
	struct ptrace_rseq_configuration rc;

	if (rseq_config(th, &rc, cause) == -1)
		return -1;
	if (rc.rseq_abi_pointer != 0) {
		it->has_rseq_addr = it->has_rseq_len = it->has_rseq_sig = 1;
		it->rseq_addr = rc.rseq_abi_pointer;
		it->rseq_len = rc.rseq_abi_size;
		it->rseq_sig = rc.signature;
	}
	return 0;
}

/*
 * The pages of the thread's rseq area, [*start, *end), or both 0 if it
 * has none. The kernel writes the area at every return to user space
 * once a restore has registered it: a post-copy move's target registers
 * it before its userfaultfd is there, so the kernel's write would make
 * a page it never had a page of zeros (postcopy.c sends them as hot).
 */
int
rseq_pages(struct mig_thread *th, uint64_t *start, uint64_t *end,
    char **cause)
{
	struct ptrace_rseq_configuration rc;

	*start = *end = 0;
	if (rseq_config(th, &rc, cause) == -1)
		return -1;
	if (rc.rseq_abi_pointer == 0)
		return 0;
	*start = rc.rseq_abi_pointer & ~(MIG_PAGE - 1);
	*end = (rc.rseq_abi_pointer + rc.rseq_abi_size + MIG_PAGE - 1) &
	    ~(MIG_PAGE - 1);
	return 0;
}

/* Before the task's memory goes: the kernel would write into it. */
int
rseq_unregister(struct mig_task *t, struct mig_thread *th, char **cause)
{
	struct ptrace_rseq_configuration rc;

	if (rseq_config(th, &rc, cause) == -1)
		return -1;
	if (rc.rseq_abi_pointer == 0)
		return 0;
	/* The length the kernel registered, not glibc's __rseq_size. */
	if (task_tsys_ok(t, th, "rseq unregister", SYS_rseq,
	    (sysargs){ rc.rseq_abi_pointer, rc.rseq_abi_size,
	    RSEQ_FLAG_UNREGISTER, rc.signature }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return 0;
}

/* Every thread's, for a task whose memory is to go. */
int
rseq_unregister_all(struct mig_task *t, char **cause)
{
	size_t	i;

	for (i = 0; i < t->nth; i++) {
		if (rseq_unregister(t, t->th[i], cause) == -1)
			return -1;
	}
	return 0;
}

/* Last of a thread's injected calls, so the kernel sees the real ip next. */
int
rseq_restore(struct mig_task *t, struct mig_thread *th,
    const Osm__ImgThread *it, char **cause)
{
	if (!it->has_rseq_addr)
		return 0;
	if (task_tsys_ok(t, th, "rseq register", SYS_rseq,
	    (sysargs){ it->rseq_addr, it->rseq_len, 0, it->rseq_sig }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return 0;
}

/*
 * Our calls return to user space, where the kernel clears an rseq
 * critical-section pointer that no longer matches the ip: note each
 * thread's rseq_cs word before the first of them.
 */
int
rseq_cs_keep(struct mig_task *t, char **cause)
{
	struct ptrace_rseq_configuration rc;
	struct mig_thread	*th;
	size_t			 i;

	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		th->rseq_area = th->rseq_cs = 0;
		if (rseq_config(th, &rc, cause) == -1)
			return -1;
		if (rc.rseq_abi_pointer == 0)
			continue;
		if (task_read(t, rc.rseq_abi_pointer + 8, &th->rseq_cs,
		    sizeof th->rseq_cs, cause) == -1)
			return -1;
		th->rseq_area = rc.rseq_abi_pointer;
	}
	return 0;
}

/* And put every one back; cause NULL: on the way out, quietly. */
int
rseq_cs_put(struct mig_task *t, char **cause)
{
	struct mig_thread	*th;
	char			*c = NULL, *why;
	size_t			 i;
	int			 rc = 0;

	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		if (th->rseq_area == 0)
			continue;
		why = NULL;
		if (task_write(t, th->rseq_area + 8, &th->rseq_cs,
		    sizeof th->rseq_cs, &why) == -1) {
			rc = -1;
			if (c == NULL)
				c = why;
			else
				free(why);
		} else
			th->rseq_area = 0;
	}
	if (cause != NULL)
		*cause = c;
	else
		free(c);
	return rc;
}
