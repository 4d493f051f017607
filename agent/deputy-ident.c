/*
 * P's identity told to its guest, which answers getpid, getuid, getgroups
 * and the like from it with no round trip (libremote/ident.c). The deputy
 * sends it before its reply to any call about it — the first getpid, and
 * every call that may change it (a setuid, a setsid) — and again when it
 * changes at home without a call of R's: P's parent dies, and P's parent
 * becomes its reaper. P's parent is watched with a pidfd for that. Nothing
 * else about P's identity changes from outside once P runs its program
 * (setpgid of a child after its execve fails with EACCES).
 */
#include <sys/syscall.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define IDENT_GROUPS_MAX	65536	/* NGROUPS_MAX */

/* The numbers after "Key:" in line, up to max: how many, or -1. */
static int
ident_numbers(const char *line, uint32_t *v, size_t max, size_t *n)
{
	const char		*p = strchr(line, ':');
	char			*end;
	unsigned long long	 x;

	*n = 0;
	if (p == NULL)
		return -1;
	for (p++;;) {
		p += strspn(p, " \t");
		if (*p == '\n' || *p == '\0')
			return 0;
		errno = 0;
		x = strtoull(p, &end, 10);
		if (end == p || errno != 0 || x > UINT32_MAX || *n == max)
			return -1;
		v[(*n)++] = x;
		p = end;
	}
}

/*
 * P's identity, from /proc/P/status: the ids as P's own calls would
 * return them (P and the deputy share their pid namespace; the group and
 * session are the last of NSpgid and NSsid, P's namespace's).
 */
static int
ident_read(pid_t pid, struct remote_ident *id, char **cause)
{
	char		 path[64], *line = NULL;
	size_t		 cap = 0, n;
	uint32_t	 v[8];
	FILE		*f;
	int		 rc = -1, seen = 0;

	memset(id, 0, sizeof *id);
	id->groups = xreallocarray(NULL, IDENT_GROUPS_MAX, sizeof *id->groups);
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) != -1) {
		if (strncmp(line, "Groups:", 7) == 0) {
			if (ident_numbers(line, id->groups, IDENT_GROUPS_MAX,
			    &id->ngroups) == -1)
				goto bad;
			seen |= 1;
			continue;
		}
		if (strncmp(line, "Pid:", 4) != 0 &&
		    strncmp(line, "PPid:", 5) != 0 &&
		    strncmp(line, "Uid:", 4) != 0 &&
		    strncmp(line, "Gid:", 4) != 0 &&
		    strncmp(line, "NSpgid:", 7) != 0 &&
		    strncmp(line, "NSsid:", 6) != 0)
			continue;
		if (ident_numbers(line, v, nitems(v), &n) == -1 || n == 0)
			goto bad;
		switch (line[0]) {
		case 'P':
			if (line[1] == 'i')
				id->pid = v[0];
			else
				id->ppid = v[0];
			seen |= line[1] == 'i' ? 2 : 4;
			break;
		case 'U':
		case 'G':
			if (n != 4)
				goto bad;
			memcpy(line[0] == 'U' ? id->uid : id->gid, v,
			    sizeof id->uid);
			seen |= line[0] == 'U' ? 8 : 16;
			break;
		case 'N':
			if (line[2] == 'p')
				id->pgrp = v[n - 1];
			else
				id->sid = v[n - 1];
			seen |= line[2] == 'p' ? 32 : 64;
			break;
		}
	}
	if (seen == 127) {
		rc = 0;
		goto out;
	}
bad:
	xasprintf(cause, "%s: cannot read the identity", path);
out:
	free(line);
	fclose(f);
	return rc;
}

static void
ident_unwatch(struct deputy *d)
{
	if (!ev_is_active(&d->ident_ev))
		return;
	ev_io_stop(d->loop, &d->ident_ev);
	close(d->ident_ev.fd);
}

static void ident_parent_cb(struct ev_loop *loop, ev_io *w, int revents);

/* Watch P's parent ppid: its death changes P's getppid. */
static void
ident_watch(struct deputy *d, pid_t ppid)
{
	int	fd;

	if (ev_is_active(&d->ident_ev) && d->ident_ppid == ppid)
		return;
	ident_unwatch(d);
	if (ppid <= 1 || (fd = syscall(SYS_pidfd_open, ppid, 0)) == -1)
		return;		/* init never dies; a parent gone already */
	d->ident_ppid = ppid;
	ev_io_init(&d->ident_ev, ident_parent_cb, fd, EV_READ);
	d->ident_ev.data = d;
	ev_io_start(d->loop, &d->ident_ev);
}

/* Send the guest P's identity as it is now (SES_IDENTITY). */
int
deputy_ident_send(struct deputy *d, char **cause)
{
	Osm__SesIdentity	 m = OSM__SES_IDENTITY__INIT;
	struct remote_ident	 id;
	int			 rc = -1;

	if (ident_read(d->pid, &id, cause) == -1)
		goto out;
	m.pid = id.pid;
	m.ppid = id.ppid;
	m.pgrp = id.pgrp;
	m.sid = id.sid;
	m.n_uid = m.n_gid = 4;
	m.uid = id.uid;
	m.gid = id.gid;
	m.n_groups = id.ngroups;
	m.groups = id.groups;
	if ((rc = session_send_msg(&d->ses, OSM__SES_KIND__SES_IDENTITY,
	    &m.base, cause)) == 0)
		ident_watch(d, id.ppid);
out:
	free(id.groups);
	return rc;
}

/*
 * P's parent died: P has a new one, which the guest must answer getppid
 * with. Once home, P's own calls say it: the watch ends.
 */
static void
ident_parent_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct deputy	*d = w->data;
	pid_t		 old = d->ident_ppid;
	char		*cause = NULL;

	ident_unwatch(d);
	if (d->state != DEPUTY_AWAY || d->ses.fd == -1)
		return;
	log_debug("process %d: its parent %d died", (int)d->pid, (int)old);
	/* a failed send is the session's end, which its reader sees */
	if (deputy_ident_send(d, &cause) == -1) {
		log_warnx("process %d: identity: %s", (int)d->pid, cause);
		free(cause);
	}
	if (d->ident_ppid == old)
		ident_unwatch(d);	/* not reparented yet: not again */
}
