/*
 * The husk: what stays of a process at home while it runs on another node.
 * Its memory is released but for a scratch area its deputy lays forwarded
 * calls out in, and its vDSO, whose syscall instruction injected calls run
 * from; its identity, files and children are untouched. When it comes home
 * mig_restore fills it again; when it ends away, it ends here the same way.
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "migrate.h"

#define HUSK_AREAS_MAX	65536

static int
husk_special(const char *name)
{
	return strcmp(name, "[vdso]") == 0 || strcmp(name, "[vvar]") == 0 ||
	    strcmp(name, "[vvar_vclock]") == 0 ||
	    strcmp(name, "[vsyscall]") == 0;
}

/*
 * Release the task's memory and map a scratch area of len bytes; its
 * address goes to *scratch. rseq is unregistered first: the kernel writes
 * into the rseq area at every return to user space.
 */
int
mig_empty(struct mig_task *t, size_t len, uint64_t *scratch, char **cause)
{
	char		 path[64], line[512], name[256];
	uint64_t	*areas = NULL;
	unsigned long	 start, end;
	size_t		 n = 0, i;
	FILE		*f;
	int		 rc = -1;

	if (core_rseq_unregister(t, cause) == -1)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/maps", t->pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f) != NULL && n < HUSK_AREAS_MAX) {
		name[0] = '\0';
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &start, &end,
		    name) < 2 || husk_special(name))
			continue;
		areas = xreallocarray(areas, n + 1, 2 * sizeof *areas);
		areas[2 * n] = start;
		areas[2 * n + 1] = end - start;
		n++;
	}
	fclose(f);
	for (i = 0; i < n; i++)
		if (task_sys_ok(t, "munmap", SYS_munmap, (sysargs){ areas[2 * i],
		    areas[2 * i + 1] }) == -1)
			goto inject;
	if (task_sys_ok(t, "mmap scratch", SYS_mmap, (sysargs){ 0, len,
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
	    0 }) == -1)
		goto inject;
	*scratch = t->last_rv;
	rc = 0;
	goto out;
inject:
	*cause = task_cause(t);
out:
	free(areas);
	return rc;
}

/* Replace the scratch area at *scratch (of len) by a larger one. */
int
mig_regrow(struct mig_task *t, uint64_t *scratch, size_t len, size_t want,
    char **cause)
{
	if (task_sys_ok(t, "munmap scratch", SYS_munmap, (sysargs){ *scratch,
	    len }) == -1 ||
	    task_sys_ok(t, "mmap scratch", SYS_mmap, (sysargs){ 0, want,
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
	    0 }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	*scratch = t->last_rv;
	return 0;
}

/*
 * End the task as its copy ended away: with exit code status (an
 * exit_group is started: the task is gone when the caller next sees it),
 * or, if signaled, ready to die of signal status: its default action
 * restored and every signal unblocked, for the caller to send the signal
 * and let it through.
 */
int
mig_end(struct mig_task *t, uint64_t scratch, int signaled, int status,
    char **cause)
{
	struct {
		uint64_t	handler, flags, restorer, mask;
	} sa = { 0 };	/* the kernel's sigaction: SIG_DFL */
	uint64_t	none = 0;

	if (!signaled)
		return mig_call_start(t, SYS_exit_group, (sysargs){ status },
		    cause);
	if (task_write(t, scratch, &sa, sizeof sa, cause) == -1 ||
	    task_write(t, scratch + sizeof sa, &none, sizeof none,
	    cause) == -1)
		return -1;
	if (task_sys_ok(t, "rt_sigaction", SYS_rt_sigaction, (sysargs){
	    status, scratch, 0, sizeof none }) == -1 ||
	    task_sys_ok(t, "rt_sigprocmask", SYS_rt_sigprocmask, (sysargs){
	    SIG_SETMASK, scratch + sizeof sa, 0, sizeof none }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return 0;
}

/* Write a message on the task's descriptor fd, best effort. */
int
mig_say(struct mig_task *t, uint64_t scratch, int fd, const char *msg,
    size_t len)
{
	char	*cause = NULL;
	long	 rv;
	int	 rc;

	rc = task_write(t, scratch, msg, len, &cause) == 0 &&
	    mig_call(t, &rv, SYS_write, (sysargs){ fd, scratch, len },
	    &cause) == 0 ? 0 : -1;
	free(cause);
	return rc;
}
