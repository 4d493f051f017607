/* What the files of the check_remote binary share. */
#ifndef CHECK_REMOTE_H
#define CHECK_REMOTE_H

#include <check.h>
#include <stdint.h>
#include <sys/types.h>

/* check_remote-hostile.c: its test case, added to s */
void	 check_remote_hostile(Suite *s);
/* check_remote-fileio.c: libremote/fileio.c's */
void	 check_remote_fileio(Suite *s);
/* check_remote-behind.c: calls whose answer is known (fiobehind.c) */
void	 check_remote_behind(Suite *s);
struct fio;
struct Osm__RemoteReadData;
int	 check_fio_data(struct fio *f, const struct Osm__RemoteReadData *m,
	    int valid, uint64_t *seq, long *rv);
size_t	 check_fio_kinds(struct fio *f, int *kinds, size_t max,
	    uint64_t *lseek_by);
/* check_remote-ahead.c: the window after one (libremote/window.c) */
void	 check_remote_ahead(Suite *s);
struct Osm__RemoteRead;
size_t	 check_fio_drain(struct fio *f, struct Osm__RemoteRead *r);
/* check_remote-stream.c: a read larger than a window (fioread.c) */
void	 check_remote_stream(Suite *s);
/* check_remote.c: call c packed and checked at home, P's pid self */
struct Osm__RemoteCall;
struct home_call *check_home_call(const struct Osm__RemoteCall *c,
	    pid_t self, char **cause);
/* check_remote-pipes.c: a batch of writes to a pipe (libremote/pipes.c) */
void	 check_remote_pipes(Suite *s);
/* check_remote-rstub.c: the guest's side of the read stub */
void	 check_remote_rstub(Suite *s);
/* check_remote-here.c: opens made where R runs (ptable.c, open_at) */
void	 check_remote_here(Suite *s);
/* check_remote-statc.c: stats answered again (libremote/statc.c) */
void	 check_remote_statc(Suite *s);

#endif
