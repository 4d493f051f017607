/*
 * R's threads: the id each has in R's own PID namespace (what R knows it
 * by, and the home's thread of the same lane), and the CPU time each had
 * used before R came here.
 */
#include <sys/types.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Thread tid's id in its innermost PID namespace (NSpid's last), or -1. */
static pid_t
remote_nspid(pid_t tid)
{
	char	 path[64], line[256], *p;
	FILE	*f;
	pid_t	 v = -1;

	snprintf(path, sizeof path, "/proc/%ld/status", (long)tid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if ((p = strrchr(line, '\t')) == NULL)
			p = strrchr(line, ' ');
		if (p != NULL)
			v = (pid_t)strtol(p + 1, NULL, 10);
		break;
	}
	fclose(f);
	return v > 0 ? v : -1;
}

/*
 * R's thread tid (ours) as R knows it (gettid there), which names its
 * thread at home too when R keeps the home's ids (in a PID namespace of
 * its own); 0 for R's lead, which is the home's lead whatever its id.
 * Kept once read: an id is reused only by a thread R makes, which the
 * caller forgets first (remote_thread_forget).
 */
pid_t
remote_vtid(struct remote *g, pid_t tid)
{
	pid_t	v;
	size_t	i;

	if (tid == g->pid)
		return 0;
	for (i = 0; i < g->ntids; i++)
		if (g->tids[i].here == tid)
			return g->tids[i].v;
	if ((v = remote_nspid(tid)) == -1)
		return -1;
	g->tids = xreallocarray(g->tids, g->ntids + 1, sizeof *g->tids);
	g->tids[g->ntids].here = tid;
	g->tids[g->ntids++].v = v;
	return v;
}

/* R's thread vtid (as R knows it; 0 the lead) as we know it, or -1. */
pid_t
remote_tid_here(struct remote *g, pid_t vtid)
{
	char		 path[64];
	struct dirent	*e;
	DIR		*dir;
	pid_t		 tid, found = -1;
	size_t		 i;

	if (g->vpid == 0)
		g->vpid = remote_nspid(g->pid);
	if (vtid == 0 || vtid == g->vpid)
		return g->pid;
	for (i = 0; i < g->ntids; i++)
		if (g->tids[i].v == vtid)
			return g->tids[i].here;
	snprintf(path, sizeof path, "/proc/%ld/task", (long)g->pid);
	if ((dir = opendir(path)) == NULL)
		return -1;
	while (found == -1 && (e = readdir(dir)) != NULL) {
		if ((tid = (pid_t)strtol(e->d_name, NULL, 10)) > 0 &&
		    remote_vtid(g, tid) == vtid)
			found = tid;
	}
	closedir(dir);
	return found;
}

/*
 * Thread tid (ours) had used ns of CPU before R came here: its emulated
 * clocks go on from there (a thread not named starts at 0).
 */
void
remote_thread_cpu(struct remote *g, pid_t tid, uint64_t ns)
{
	emulate_thread_base(&g->emu, tid, ns);
}

/* Thread tid (ours) is gone, or its id is to be another's. */
void
remote_thread_forget(struct remote *g, pid_t tid)
{
	size_t	i;

	emulate_thread_base(&g->emu, tid, 0);
	for (i = 0; i < g->ntids; i++)
		if (g->tids[i].here == tid) {
			g->tids[i] = g->tids[--g->ntids];
			return;
		}
}
