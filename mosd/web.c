/*
 * The web monitor's server: libmicrohttpd on mosd's own libev loop, with
 * no thread of its own. MHD keeps its sockets in one epoll descriptor of
 * its own (MHD_USE_EPOLL), which mosd watches with one ev_io; MHD's next
 * timeout (MHD_get_timeout) is one ev_timer. Either runs MHD_run, which
 * calls web_access for each request, and then the timer is set again.
 *
 * A request is read whole (a POST's body up to WEB_BODY_MAX), handed to
 * web-api.c, and answered at once or, when it needs mosd's control socket,
 * suspended until the answer comes and then resumed (web-api.c then
 * feeds the ev_io, MHD having no thread to wake it). Connections are limited in number,
 * per client address, in memory and in time; the address is loopback
 * unless cluster.conf says otherwise (`web ADDRESS PORT`).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosd.h"

#define WEB_CONNECTIONS	32		/* at once, in all */
#define WEB_PER_IP	8		/* at once, from one address */
#define WEB_TIMEOUT_S	15		/* idle connection */
#define WEB_MEMORY	(64 * 1024)	/* per connection, headers and all */
#define WEB_BODY_MAX	4096		/* of a POST */

static void	web_arm(struct mosd *m);

static void
web_log(void *arg, const char *fmt, va_list ap)
{
	char	*msg;

	xvasprintf(&msg, fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_warnx("web: %s", msg);
	free(msg);
}

/* Queue wr's answer, with the headers every answer has. */
static enum MHD_Result
web_answer(struct web_req *wr)
{
	struct MHD_Response	*resp;
	enum MHD_Result		 rc;

	resp = MHD_create_response_from_buffer(wr->answerlen, wr->answer,
	    wr->persistent ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_FREE);
	if (resp == NULL)
		return MHD_NO;
	wr->answer = NULL;	/* the response's now */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, wr->type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
	    "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	/* The page needs nothing from anywhere but its own inline parts. */
	MHD_add_response_header(resp, "Content-Security-Policy",
	    "default-src 'none'; style-src 'unsafe-inline'; "
	    "script-src 'unsafe-inline'; connect-src 'self'; "
	    "frame-ancestors 'none'");
	if (wr->allow != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
		    wr->allow);
	rc = MHD_queue_response(wr->conn, wr->status, resp);
	MHD_destroy_response(resp);
	return rc;
}

/*
 * MHD's call for each request: first with no context (make one), then
 * once per piece of body, then once with none left (handle it), and once
 * more after a suspended request is resumed (answer it).
 */
static enum MHD_Result
web_access(void *arg, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *data, size_t *size,
    void **ctx)
{
	struct mosd	*m = arg;
	struct web_req	*wr = *ctx;

	if (wr == NULL) {
		*ctx = webapi_new(m, conn);
		return MHD_YES;
	}
	if (*size != 0) {
		/* Too much is read and dropped: MHD answers only at the end. */
		if (wr->status != 0) {
			*size = 0;
			return MHD_YES;
		}
		if (*size > WEB_BODY_MAX - wr->bodylen) {
			*size = 0;
			wr->handled = 1;
			webapi_error(wr, MHD_HTTP_CONTENT_TOO_LARGE,
			    "a request body has at most %d bytes",
			    WEB_BODY_MAX);
			return MHD_YES;
		}
		wr->body = xreallocarray(wr->body, wr->bodylen + *size + 1, 1);
		memcpy(wr->body + wr->bodylen, data, *size);
		wr->bodylen += *size;
		wr->body[wr->bodylen] = '\0';
		*size = 0;
		return MHD_YES;
	}
	if (!wr->handled) {
		wr->handled = 1;
		if (webapi_handle(wr, method, url) == 1)
			return MHD_YES;		/* suspended until mosd answers */
	}
	if (wr->status == 0)
		webapi_error(wr, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    "no answer came");
	return web_answer(wr);
}

/* The connection is done with, answered or not: drop MHD's reference. */
static void
web_completed(void *arg, struct MHD_Connection *conn, void **ctx,
    enum MHD_RequestTerminationCode why)
{
	struct web_req	*wr = *ctx;

	if (wr == NULL)
		return;
	wr->conn = NULL;
	webapi_unref(wr);
	*ctx = NULL;
}

static void
web_run(struct mosd *m)
{
	if (MHD_run(m->web->daemon) != MHD_YES)
		log_warnx("web: MHD_run failed");
	web_arm(m);
}

static void
web_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	looptime_mark(loop, "web");
	web_run(w->data);
}

static void
web_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	looptime_mark(loop, "web timer");
	web_run(w->data);
}

/* Set the timer to MHD's next timeout, if it has one. */
static void
web_arm(struct mosd *m)
{
	struct web		*w = m->web;
	MHD_UNSIGNED_LONG_LONG	 ms;

	ev_timer_stop(m->loop, &w->timer);
	if (MHD_get_timeout(w->daemon, &ms) != MHD_YES)
		return;
	ev_timer_set(&w->timer, ms / 1000.0, 0);
	ev_timer_start(m->loop, &w->timer);
}

/*
 * Listen where cluster.conf says, before mosd drops its privileges (a
 * port below 1024 needs them). Nothing if the monitor is off.
 */
int
web_listen(struct mosd *m, char **cause)
{
	const struct cluster_conf	*c = m->conf;
	struct MHD_Daemon		*d;
	unsigned			 flags;

	if (c->web_port == 0)
		return 0;
	flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (c->web_sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	d = MHD_start_daemon(flags, c->web_port, NULL, NULL, web_access, m,
	    MHD_OPTION_EXTERNAL_LOGGER, web_log, NULL,
	    MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&c->web_sa,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)WEB_CONNECTIONS,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)WEB_PER_IP,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WEB_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)WEB_MEMORY,
	    MHD_OPTION_NOTIFY_COMPLETED, web_completed, m,
	    MHD_OPTION_LISTENING_ADDRESS_REUSE, 1U,
	    MHD_OPTION_END);
	if (d == NULL) {
		xasprintf(cause, "web monitor: cannot listen on %s port %u: %s",
		    c->web_addr, c->web_port, errno != 0 ? strerror(errno) :
		    "libmicrohttpd refused");
		return -1;
	}
	m->web = xcalloc(1, sizeof *m->web);
	m->web->daemon = d;
	TAILQ_INIT(&m->web->pending);
	return 0;
}

/* Watch MHD's epoll descriptor and timeout on mosd's loop. */
void
web_start(struct mosd *m)
{
	const union MHD_DaemonInfo	*info;
	struct web			*w = m->web;

	if (w == NULL)
		return;
	info = MHD_get_daemon_info(w->daemon, MHD_DAEMON_INFO_EPOLL_FD);
	if (info == NULL)
		fatalx("web: MHD has no epoll descriptor");
	ev_io_init(&w->io, web_io_cb, info->epoll_fd, EV_READ);
	w->io.data = m;
	ev_io_start(m->loop, &w->io);
	ev_timer_init(&w->timer, web_timer_cb, 0, 0);
	w->timer.data = m;
	web_arm(m);
	log_info("web monitor on %s port %u", m->conf->web_addr,
	    m->conf->web_port);
}

/*
 * MHD stops only with no connection suspended: resume those still waiting
 * for mosd (they close unanswered; web-api drops the answer when it comes).
 */
void
web_stop(struct mosd *m)
{
	struct web	*w = m->web;
	struct web_req	*wr;

	if (w == NULL)
		return;
	while ((wr = TAILQ_FIRST(&w->pending)) != NULL) {
		TAILQ_REMOVE(&w->pending, wr, entry);
		MHD_resume_connection(wr->conn);
	}
	ev_io_stop(m->loop, &w->io);
	ev_timer_stop(m->loop, &w->timer);
	MHD_stop_daemon(w->daemon);
	free(w);
	m->web = NULL;
}
