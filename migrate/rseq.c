/*
 * The task's rseq registration. glibc registers an rseq area for every
 * thread, and the kernel writes into it at every preemption: a restore
 * unregisters the target's own before it replaces the memory, with the
 * length the kernel reports (glibc's __rseq_size says less), and registers
 * the image's area last of all; a dump notes it, and clears the area's
 * critical-section word while it injects calls (dump.c).
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
rseq_config(struct mig_task *t, struct ptrace_rseq_configuration *rc,
    char **cause)
{
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, t->pid, sizeof *rc,
	    rc) == -1) {
		xasprintf(cause, "PTRACE_GET_RSEQ_CONFIGURATION: %s",
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* The registration, into the image's task record. */
int
rseq_dump(struct mig_task *t, Osm__ImgTask *k, char **cause)
{
	struct ptrace_rseq_configuration rc;

	if (rseq_config(t, &rc, cause) == -1)
		return -1;
	if (rc.rseq_abi_pointer != 0) {
		k->has_rseq_addr = k->has_rseq_len = k->has_rseq_sig = 1;
		k->rseq_addr = rc.rseq_abi_pointer;
		k->rseq_len = rc.rseq_abi_size;
		k->rseq_sig = rc.signature;
	}
	return 0;
}

/* Before the task's memory goes: the kernel would write into it. */
int
rseq_unregister(struct mig_task *t, char **cause)
{
	struct ptrace_rseq_configuration rc;

	if (rseq_config(t, &rc, cause) == -1)
		return -1;
	if (rc.rseq_abi_pointer == 0)
		return 0;
	/* The length the kernel registered, not glibc's __rseq_size. */
	if (task_sys_ok(t, "rseq unregister", SYS_rseq,
	    (sysargs){ rc.rseq_abi_pointer, rc.rseq_abi_size,
	    RSEQ_FLAG_UNREGISTER, rc.signature }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return 0;
}

/* Last of all the injected calls, so the kernel sees the real ip next. */
int
rseq_restore(struct mig_task *t, const Osm__ImgTask *k, char **cause)
{
	if (!k->has_rseq_addr)
		return 0;
	if (task_sys_ok(t, "rseq register", SYS_rseq, (sysargs){ k->rseq_addr,
	    k->rseq_len, 0, k->rseq_sig }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return 0;
}

/* The rseq_cs word of the task's rseq area (0 without rseq). */
int
rseq_cs(struct mig_task *t, uint64_t *cs, char **cause)
{
	struct ptrace_rseq_configuration rc;

	*cs = 0;
	t->rseq_area = 0;
	if (rseq_config(t, &rc, cause) == -1)
		return -1;
	if (rc.rseq_abi_pointer == 0)
		return 0;
	t->rseq_area = rc.rseq_abi_pointer;
	return task_read(t, t->rseq_area + 8, cs, sizeof *cs, cause);
}

int
rseq_cs_put(struct mig_task *t, uint64_t cs, char **cause)
{
	char	*c = NULL;
	int	 rc;

	if (t->rseq_area == 0)
		return 0;
	rc = task_write(t, t->rseq_area + 8, &cs, sizeof cs, &c);
	if (cause != NULL)
		*cause = c;
	else
		free(c);
	return rc;
}
