/*
 * A process's image straight through the agents' session, the same for
 * the deputy and the guest agent, either way: no pipe, no pump thread,
 * the frames sealed from the dump's own buffers and read into the process
 * from the decrypted frames (lib/session.c's session_image_*), then the
 * image's end frame.
 */
#include "internal.h"
#include "proto/migrate.pb-c.h"

/* The reason a SesError body gives (the caller frees it), or none. */
char *
ses_error_reason(const uint8_t *body, size_t len, const char *none)
{
	Osm__SesError	*e;
	char		*why;

	e = osm__ses_error__unpack(NULL, len, body);
	why = xstrdup(e != NULL ? e->reason : none);
	if (e != NULL)
		osm__ses_error__free_unpacked(e, NULL);
	return why;
}

/* lv's process, dumped (live if lv->track) into s with flags. */
int
image_send(struct session *s, struct mig_live *lv, int flags,
    struct mig_stats *st, char **cause)
{
	struct session_image	si = { .s = s,
				    .kind = OSM__SES_KIND__SES_IMAGE,
				    .end = OSM__SES_KIND__SES_IMAGE_END };
	struct mig_io		io = { .write = session_image_write,
				    .arg = &si };
	int			rc;

	lv->io = &io;
	rc = mig_dump_live(lv, -1, flags, st, cause);
	lv->io = NULL;			/* io is ours, on this stack */
	if (rc == -1)
		return -1;
	return session_image_end(&si, 1, cause);
}

/*
 * t made the process of the image that comes on s, its context too; a
 * message of another kind between its frames goes to aside (if not NULL).
 */
int
image_recv(struct session *s, struct mig_task *t,
    struct mig_restore_opts *opts, session_aside_fn aside, void *aside_arg,
    struct mig_stats *st, char **cause)
{
	struct session_image	si = { .s = s,
				    .kind = OSM__SES_KIND__SES_IMAGE,
				    .end = OSM__SES_KIND__SES_IMAGE_END,
				    .aside = aside, .aside_arg = aside_arg };
	struct mig_io		io = { .read = session_image_read,
				    .view = session_image_view,
				    .arg = &si };
	int			rc;

	opts->flags |= MIG_CONTEXT;
	opts->io = &io;
	rc = mig_restore(t, -1, opts, st, cause);
	opts->io = NULL;		/* io is ours, on this stack */
	if (rc == -1)
		return -1;
	return session_image_end(&si, 0, cause);
}
