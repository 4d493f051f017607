/* What the files of the check_migrate binary share. */
#ifndef CHECK_MIGRATE_H
#define CHECK_MIGRATE_H

#include <check.h>

/* check_migrate-track.c: migrate/track.c's test case, added to s */
void	 check_migrate_track(Suite *s);
/* check_migrate-post.c: migrate/postcopy.c's source side, added to s */
void	 check_migrate_post(Suite *s);

#endif
