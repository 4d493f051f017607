/*
 * The process's identity, answered where it runs: getpid, gettid,
 * getppid, the uids and gids, the supplementary groups, its process group
 * and session. They are the home process's; the home sends them before
 * its answer to any call about them (the first getpid, a setuid) and
 * again when they change at home (P's parent dies), and the guest answers
 * from the last it had, with no round trip. A call that may change them
 * (the set*id family, setgroups, setpgid, setsid) clears them first and
 * goes home; the home's answer brings them back (docs/REMOTE.md,
 * "Identity").
 *
 * Only R's main thread is answered here: its tid is the home pid. Another
 * thread's gettid would be its own thread's at home.
 */
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void
ident_clear(struct ident *c)
{
	free(c->id.groups);
	memset(c, 0, sizeof *c);
}

void
ident_set(struct ident *c, const struct remote_ident *id)
{
	ident_clear(c);
	c->id = *id;
	c->id.groups = NULL;
	if (id->ngroups > 0) {
		c->id.groups = xreallocarray(NULL, id->ngroups,
		    sizeof *c->id.groups);
		memcpy(c->id.groups, id->groups,
		    id->ngroups * sizeof *c->id.groups);
	}
	c->valid = 1;
}

/* Write len bytes into R's thread tid at addr: 0, or -EFAULT. */
static long
ident_write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec	local = { (void *)buf, len };
	struct iovec	remote = { (void *)(uintptr_t)addr, len };

	if (process_vm_writev(tid, &local, 1, &remote, 1, 0) != (ssize_t)len)
		return -EFAULT;
	return 0;
}

/* getresuid and getresgid: three u32s, each at its own pointer. */
static long
ident_res(pid_t tid, const uint64_t *args, const uint32_t *v)
{
	int	i;

	for (i = 0; i < 3; i++) {
		if (ident_write(tid, args[i], &v[i], 4) != 0)
			return -EFAULT;
	}
	return 0;
}

static int
ident_self(const struct ident *c, uint64_t arg)
{
	pid_t	pid = (pid_t)(uint32_t)arg;

	return pid == 0 || pid == c->id.pid;
}

/*
 * Answer R's call nr from c, made by R's thread tid: 1 with *rv, or 0 if
 * it must go home (nothing known, another thread, another process's
 * group or session). main_tid is R's main thread.
 */
int
ident_answer(const struct ident *c, pid_t tid, pid_t main_tid, int nr,
    const uint64_t *args, long *rv)
{
	const struct remote_ident	*id = &c->id;
	int				 size;

	if (!c->valid || tid != main_tid)
		return 0;
	switch (nr) {
	case SYS_getpid:
	case SYS_gettid:
		*rv = id->pid;
		return 1;
	case SYS_getppid:
		*rv = id->ppid;
		return 1;
	case SYS_getuid:
		*rv = id->uid[0];
		return 1;
	case SYS_geteuid:
		*rv = id->uid[1];
		return 1;
	case SYS_getgid:
		*rv = id->gid[0];
		return 1;
	case SYS_getegid:
		*rv = id->gid[1];
		return 1;
	case SYS_getresuid:
		*rv = ident_res(tid, args, id->uid);
		return 1;
	case SYS_getresgid:
		*rv = ident_res(tid, args, id->gid);
		return 1;
	case SYS_getgroups:
		size = (int)args[0];
		if (size < 0)
			*rv = -EINVAL;
		else if (size == 0)
			*rv = id->ngroups;
		else if ((size_t)size < id->ngroups)
			*rv = -EINVAL;
		else if ((*rv = ident_write(tid, args[1], id->groups,
		    id->ngroups * sizeof *id->groups)) == 0)
			*rv = id->ngroups;
		return 1;
	case SYS_getpgrp:
		*rv = id->pgrp;
		return 1;
	case SYS_getpgid:
		if (!ident_self(c, args[0]))
			return 0;
		*rv = id->pgrp;
		return 1;
	case SYS_getsid:
		if (!ident_self(c, args[0]))
			return 0;
		*rv = id->sid;
		return 1;
	}
	return 0;
}
