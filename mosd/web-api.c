/*
 * What the web monitor answers (web.c is the server):
 *
 *	GET  /			the page (web-page.html)
 *	GET  /api/v1/nodes	mosctl status --json's document
 *	GET  /api/v1/procs	mosps -a --json's
 *	GET  /api/v1/stats	mosctl stats --json's
 *	POST /api/v1/migrate	{"pid": P, "node": N}: move P (0: home)
 *	POST /api/v1/block, /noblock, /expel, /bring
 *
 * Every one of them is a request to this mosd's own control socket, made
 * as root (control_loopback, control_order_fd), so that the web gets
 * exactly what the tools get, checked exactly as theirs, and the JSON
 * comes from the same lib/ctl-json.c. An action is refused (403) unless it
 * carries "Authorization: Bearer TOKEN" with the token of the root-only
 * file cluster.conf names (web-token), which the privileged parent reads
 * and compares (parent.c); a GET of an action is refused (405).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

#define WEBAPI_TOKEN_MIN	16
#define WEBAPI_TOKEN_MAX	256
#define WEBAPI_JSON		"application/json"

enum webapi_kind {
	WEBAPI_PAGE,
	WEBAPI_QUERY,		/* GET: a document */
	WEBAPI_ACTION		/* POST, with the token */
};

struct web_route {
	const char	*path;
	enum webapi_kind kind;
	int		 type;			/* Osm__CtlType */
	uint32_t	 set_flags, clear_flags;
	json_t		*(*json)(const Osm__CtlReply *);
};

static json_t	*webapi_ps(const Osm__CtlReply *);

static const struct web_route webapi_routes[] = {
	{ "/", WEBAPI_PAGE, 0, 0, 0, NULL },
	{ "/api/v1/nodes", WEBAPI_QUERY, OSM__CTL_TYPE__CTL_STATUS, 0, 0,
	    ctl_json_status },
	{ "/api/v1/procs", WEBAPI_QUERY, OSM__CTL_TYPE__CTL_PS, 0, 0,
	    webapi_ps },
	{ "/api/v1/stats", WEBAPI_QUERY, OSM__CTL_TYPE__CTL_STATS, 0, 0,
	    ctl_json_stats },
	{ "/api/v1/migrate", WEBAPI_ACTION, OSM__CTL_TYPE__CTL_MIGRATE, 0, 0,
	    ctl_json_reply },
	{ "/api/v1/block", WEBAPI_ACTION, OSM__CTL_TYPE__CTL_FLAGS,
	    OSM__NODE_FLAG__NODE_BLOCK, 0, ctl_json_reply },
	{ "/api/v1/noblock", WEBAPI_ACTION, OSM__CTL_TYPE__CTL_FLAGS,
	    0, OSM__NODE_FLAG__NODE_BLOCK, ctl_json_reply },
	{ "/api/v1/expel", WEBAPI_ACTION, OSM__CTL_TYPE__CTL_EXPEL, 0, 0,
	    ctl_json_reply },
	{ "/api/v1/bring", WEBAPI_ACTION, OSM__CTL_TYPE__CTL_BRING, 0, 0,
	    ctl_json_reply },
};

static json_t *
webapi_ps(const Osm__CtlReply *r)
{
	return ctl_json_ps(r, 0);
}

struct web_req *
webapi_new(struct mosd *m, struct MHD_Connection *conn)
{
	struct web_req	*wr;

	wr = xcalloc(1, sizeof *wr);
	wr->mosd = m;
	wr->conn = conn;
	wr->refs = 1;
	wr->type = WEBAPI_JSON;
	return wr;
}

void
webapi_unref(struct web_req *wr)
{
	if (--wr->refs > 0)
		return;
	if (!wr->persistent)
		free(wr->answer);
	free(wr->body);
	free(wr);
}

/* The answer: a document, which this frees. */
static void
webapi_json(struct web_req *wr, unsigned status, json_t *doc)
{
	if (!wr->persistent)
		free(wr->answer);
	wr->persistent = 0;
	wr->answer = ctl_json_text(doc);
	wr->answerlen = strlen(wr->answer);
	wr->type = WEBAPI_JSON;
	wr->status = status;
}

/* The answer: {"ok": false, "error": "..."}. */
void
webapi_error(struct web_req *wr, unsigned status, const char *fmt, ...)
{
	json_t	*doc, *text;
	va_list	 ap;
	char	*msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if ((text = json_string(msg)) == NULL)
		text = json_string("(a message that is not UTF-8)");
	free(msg);
	doc = json_object();
	json_object_set_new(doc, "ok", json_false());
	json_object_set_new(doc, "error", text);
	webapi_json(wr, status, doc);
}

/* Who asked, for the log. */
static const char *
webapi_client(struct web_req *wr, char *buf, size_t size)
{
	const union MHD_ConnectionInfo	*ci;

	ci = MHD_get_connection_info(wr->conn,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || ci->client_addr == NULL ||
	    getnameinfo(ci->client_addr, ci->client_addr->sa_family ==
	    AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
	    buf, size, NULL, 0, NI_NUMERICHOST) != 0)
		snprintf(buf, size, "?");
	return buf;
}

/*
 * The token the request carries, for the privileged parent to check
 * (parent.c: it reads root's token file, which this process may not):
 * 0 with it in *t, or -1 and why, for the client.
 */
static int
webapi_token(struct web_req *wr, struct privmsg_token *t, char **why)
{
	const char	*h;
	size_t		 len;

	h = MHD_lookup_connection_value(wr->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	if (h == NULL || strncmp(h, "Bearer ", 7) != 0) {
		xasprintf(why, "an action needs the token: 'Authorization: "
		    "Bearer TOKEN'");
		return -1;
	}
	h += 7;
	if ((len = strlen(h)) == 0 || len > sizeof t->token) {
		xasprintf(why, "wrong token");
		return -1;
	}
	memset(t, 0, sizeof *t);
	t->len = len;
	memcpy(t->token, h, len);
	return 0;
}

/* {"pid": P, "node": N} into req; -1 and why if it is not that. */
static int
webapi_migrate_args(struct web_req *wr, Osm__CtlRequest *req, char **why)
{
	json_t		*doc;
	json_error_t	 err;
	json_int_t	 pid, node;

	if (wr->body == NULL) {
		xasprintf(why, "migrate needs {\"pid\": P, \"node\": N}");
		return -1;
	}
	if ((doc = json_loadb(wr->body, wr->bodylen, JSON_REJECT_DUPLICATES,
	    &err)) == NULL) {
		xasprintf(why, "not JSON: %s", err.text);
		return -1;
	}
	if (json_unpack_ex(doc, &err, JSON_STRICT, "{s:I, s:I}", "pid", &pid,
	    "node", &node) == -1 || pid < 1 || pid > INT_MAX || node < 0 ||
	    node > OSM_MAX_NODES) {
		json_decref(doc);
		xasprintf(why, "migrate needs {\"pid\": P, \"node\": N} with P "
		    "a process id and N a node number (0: home)");
		return -1;
	}
	json_decref(doc);
	req->has_pid = req->has_node = 1;
	req->pid = pid;
	req->node = node;
	return 0;
}

/* Resume a request suspended for the parent or for mosd's answer. */
static void
webapi_resume(struct web_req *wr)
{
	struct mosd	*m = wr->mosd;

	if (m->web == NULL)
		return;
	TAILQ_REMOVE(&m->web->pending, wr, entry);
	MHD_resume_connection(wr->conn);
	/*
	 * Without a thread of its own MHD has no channel to wake its epoll
	 * descriptor: have the loop run it as if it were ready.
	 */
	ev_feed_event(m->loop, &m->web->io, EV_READ);
}

/* mosd's answer to our request: the document, or why there is none. */
static void
webapi_done(struct mosd *m, void *arg, Osm__CtlReply *r, const char *why)
{
	struct web_req	*wr = arg;

	if (wr->conn == NULL) {		/* gone meanwhile: nobody to tell */
		webapi_unref(wr);
		return;
	}
	if (r == NULL)
		webapi_error(wr, MHD_HTTP_SERVICE_UNAVAILABLE, "mosd: %s", why);
	else if (!r->ok)
		webapi_json(wr, wr->route->kind == WEBAPI_ACTION ?
		    MHD_HTTP_CONFLICT : MHD_HTTP_SERVICE_UNAVAILABLE,
		    ctl_json_reply(r));
	else
		webapi_json(wr, MHD_HTTP_OK, wr->route->json(r));
	webapi_resume(wr);
	webapi_unref(wr);
}

/* Send this mosd the route's request: 1, or 0 with wr's answer. */
static int
webapi_send(struct web_req *wr, Osm__CtlRequest *req)
{
	char	*cause = NULL;
	int	 fd;

	req->type = wr->route->type;
	if ((fd = control_loopback(wr->mosd, &cause)) == -1 ||
	    control_order_fd(wr->mosd, fd, req, webapi_done, wr,
	    &cause) == -1) {
		webapi_error(wr, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", cause);
		free(cause);
		return 0;
	}
	wr->refs++;
	return 1;
}

/* Suspend wr until an answer comes (webapi_resume). */
static void
webapi_suspend(struct web_req *wr)
{
	TAILQ_INSERT_TAIL(&wr->mosd->web->pending, wr, entry);
	MHD_suspend_connection(wr->conn);
}

/* Ask this mosd for the route's request; suspend until it answers. */
static int
webapi_ask(struct web_req *wr, Osm__CtlRequest *req)
{
	if (webapi_send(wr, req) == 0)
		return 0;
	webapi_suspend(wr);
	return 1;
}

/*
 * The action, its token checked: its arguments, then mosd's request; 1
 * if sent (wr waits, suspended, for the answer), 0 with wr's answer.
 */
static int
webapi_act(struct web_req *wr)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	char		*why = NULL, client[64];

	if (wr->route->type == OSM__CTL_TYPE__CTL_MIGRATE &&
	    webapi_migrate_args(wr, &req, &why) == -1) {
		webapi_error(wr, MHD_HTTP_BAD_REQUEST, "%s", why);
		free(why);
		return 0;
	}
	if (wr->route->set_flags != 0 || wr->route->clear_flags != 0) {
		req.has_set_flags = req.has_clear_flags = 1;
		req.set_flags = wr->route->set_flags;
		req.clear_flags = wr->route->clear_flags;
	}
	log_info("web: %s from %s", wr->route->path,
	    webapi_client(wr, client, sizeof client));
	return webapi_send(wr, &req);
}

/* The parent's word on the token: on to the action, or 403. */
static void
webapi_token_done(struct mosd *m, void *arg, const struct privmsg_answer *a)
{
	struct web_req	*wr = arg;
	char		 client[64];

	if (wr->conn == NULL) {		/* gone meanwhile: nobody to tell */
		webapi_unref(wr);
		return;
	}
	if (a == NULL)
		webapi_error(wr, MHD_HTTP_SERVICE_UNAVAILABLE, "mosd is "
		    "stopping");
	else if (!a->ok) {
		log_warnx("web: %s from %s refused: %s", wr->route->path,
		    webapi_client(wr, client, sizeof client), a->why);
		webapi_error(wr, MHD_HTTP_FORBIDDEN, "%s", a->why);
	} else if (webapi_act(wr) == 1) {
		/* Still suspended, now for mosd's answer (webapi_done). */
		webapi_unref(wr);
		return;
	}
	webapi_resume(wr);
	webapi_unref(wr);
}

static int
webapi_action(struct web_req *wr)
{
	struct privmsg_token	 t;
	char			*why = NULL, client[64];
	uint32_t		 id;

	if (webapi_token(wr, &t, &why) == -1 ||
	    privsep_ask(wr->mosd, PRIVMSG_TOKEN, &t, sizeof t, -1,
	    webapi_token_done, wr, &id, &why) == -1) {
		log_warnx("web: %s from %s refused: %s", wr->route->path,
		    webapi_client(wr, client, sizeof client), why);
		webapi_error(wr, MHD_HTTP_FORBIDDEN, "%s", why);
		free(why);
		explicit_bzero(&t, sizeof t);
		return 0;
	}
	explicit_bzero(&t, sizeof t);
	wr->refs++;
	webapi_suspend(wr);
	return 1;
}

/*
 * Handle a whole request: 0 when wr has its answer, 1 when the
 * connection is suspended until mosd answers (webapi_done).
 */
int
webapi_handle(struct web_req *wr, const char *method, const char *url)
{
	Osm__CtlRequest		 req = OSM__CTL_REQUEST__INIT;
	const struct web_route	*rt = NULL;
	const char		*want;
	size_t			 i;

	for (i = 0; i < nitems(webapi_routes); i++)
		if (strcmp(url, webapi_routes[i].path) == 0)
			rt = &webapi_routes[i];
	if (rt == NULL) {
		webapi_error(wr, MHD_HTTP_NOT_FOUND, "no such page: %s", url);
		return 0;
	}
	wr->route = rt;
	want = rt->kind == WEBAPI_ACTION ? MHD_HTTP_METHOD_POST :
	    MHD_HTTP_METHOD_GET;
	if (strcmp(method, want) != 0) {
		wr->allow = want;
		webapi_error(wr, MHD_HTTP_METHOD_NOT_ALLOWED, "%s takes %s "
		    "only", url, want);
		return 0;
	}
	switch (rt->kind) {
	case WEBAPI_PAGE:
		wr->answer = (char *)web_page;
		wr->answerlen = web_page_len;
		wr->persistent = 1;
		wr->type = "text/html; charset=utf-8";
		wr->status = MHD_HTTP_OK;
		return 0;
	case WEBAPI_QUERY:
		if (rt->type == OSM__CTL_TYPE__CTL_PS)
			req.has_all = req.all = 1;
		return webapi_ask(wr, &req);
	case WEBAPI_ACTION:
		return webapi_action(wr);
	}
	return 0;
}
