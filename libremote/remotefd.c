/*
 * The home's answers about R's descriptors (RemoteFdInfo), for the guest:
 * an open's under a shared path (shared.c), an open's asked with it
 * (fiobehind.c), and those fileio.c asked (a RemoteFdAsk), which may
 * bring a file under a shared path R had before it came to be opened here.
 */
#include <sys/syscall.h>

#include <stdint.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

/* The home's answer about one of R's descriptors (RemoteFdInfo). */
int
remote_fd_info(struct remote *g, const uint8_t *msg, size_t len,
    char **cause)
{
	Osm__RemoteFdInfo	*m;
	size_t			 i;
	int			 nr;

	if ((m = osm__remote_fd_info__unpack(NULL, len, msg)) == NULL) {
		xasprintf(cause, "malformed descriptor answer");
		return -1;
	}
	/* seq 0: what an open under a shared path gave, before its reply */
	if (m->seq == 0) {
		shared_info(&g->shared, m);
		return 0;
	}
	/* an open's, asked with it (RemoteCall.fd_info) */
	for (i = 0; i < g->npending; i++) {
		if (g->pending[i].call.seq == m->seq &&
		    g->pending[i].call.fd_info) {
			fio_opened(&g->fio, m);
			osm__remote_fd_info__free_unpacked(m, NULL);
			return 0;
		}
	}
	/*
	 * A file under a shared path, known to R before it came (or opened
	 * on an earlier node): opened here too, put into R while the call
	 * that asked waits at home.
	 */
	for (i = 0; i < g->npending; i++) {
		nr = g->pending[i].call.nr;
		/* the call that asked: one of those fio_call asks for */
		if ((nr != SYS_read && nr != SYS_write && nr != SYS_pread64 &&
		    nr != SYS_pwrite64 && nr != SYS_writev) ||
		    g->pending[i].call.args[0] != (uint64_t)m->fd ||
		    !shared_adopt(g, m, g->pending[i].id))
			continue;
		g->pending[i].adopted = 1;
		fio_drop_fd(&g->fio, m->fd);
		osm__remote_fd_info__free_unpacked(m, NULL);
		return 0;
	}
	fio_info(&g->fio, m, fio_on_fd(g->pending, g->npending,
	    (uint64_t)m->fd, 0) > 1);
	osm__remote_fd_info__free_unpacked(m, NULL);
	return 0;
}
