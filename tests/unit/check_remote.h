/* What the files of the check_remote binary share. */
#ifndef CHECK_REMOTE_H
#define CHECK_REMOTE_H

#include <check.h>

/* check_remote-hostile.c: its test case, added to s */
void	 check_remote_hostile(Suite *s);
/* check_remote-fileio.c: libremote/fileio.c's */
void	 check_remote_fileio(Suite *s);
/* check_remote-ahead.c: the window after one (libremote/window.c) */
void	 check_remote_ahead(Suite *s);
/* check_remote-stream.c: a batch of writes to a pipe (libremote/stream.c) */
void	 check_remote_stream(Suite *s);

#endif
