/*
 * check_mosd's tests of mosd's privilege separation: the channel between
 * the privileged parent and the network process (mosd/privmsg.c), whose
 * every malformed record the parent must refuse with a cause naming what
 * is wrong, and the network process's sandbox (mosd/sandbox.c), entered
 * in a child: the calls it must refuse fail, the ones it needs work, and
 * /proc shows no root, no capability, no_new_privs and the filter.
 */
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <check.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd/mosd.h"

#define NET_UID	59999

static struct cluster_conf *
conf_of_three(void)
{
	struct cluster_conf	*c = xcalloc(1, sizeof *c);
	size_t			 i;

	c->nnodes = 3;
	c->nodes = xcalloc(3, sizeof *c->nodes);
	for (i = 0; i < 3; i++)
		c->nodes[i].id = i + 1;
	c->self = 1;
	c->net_uid = NET_UID;
	return c;
}

static void
pair(int sv[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, sv), 0);
}

static struct privmsg_guest
good_guest(void)
{
	struct privmsg_guest	g;

	memset(&g, 0, sizeof g);
	g.home = 2;
	g.pid = 4242;
	g.owner_uid = 1000;
	snprintf(g.user, sizeof g.user, "alice");
	snprintf(g.command, sizeof g.command, "gzip -9");
	return g;
}

/* Send g (len bytes) with descriptor fd (-1: none); the parent's verdict. */
static int
check_sent(const void *g, size_t len, int fd, char **why)
{
	struct cluster_conf	*c = conf_of_three();
	struct privmsg_guest	 out;
	struct privmsg		 msg;
	int			 sv[2], rc;

	pair(sv);
	ck_assert_int_eq(privmsg_send(sv[1], PRIVMSG_GUEST, 9, g, len, &fd,
	    fd == -1 ? 0 : 1), 0);
	ck_assert_int_eq(privmsg_recv(sv[0], &msg, why), PRIVMSG_OK);
	ck_assert_uint_eq(msg.hdr.type, PRIVMSG_GUEST);
	ck_assert_uint_eq(msg.hdr.id, 9);
	rc = privmsg_check_guest(&msg, c, &out, why);
	privmsg_close_fds(&msg);
	close(sv[0]);
	close(sv[1]);
	conf_free(c);
	return rc;
}

static void
refused(const struct privmsg_guest *g, size_t len, int fd, const char *want)
{
	char	*why = NULL;

	ck_assert_int_eq(check_sent(g, len, fd, &why), -1);
	ck_assert_msg(why != NULL && strstr(why, want) != NULL,
	    "expected '%s', got '%s'", want, why);
	free(why);
}

START_TEST(test_privmsg_guest)
{
	struct privmsg_guest	 g = good_guest();
	char			*why = NULL;
	int			 tcp, p[2], un[2];

	tcp = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(tcp, 0);
	ck_assert_int_eq(check_sent(&g, sizeof g, tcp, &why), 0);

	refused(&g, sizeof g - 1, tcp, "expected");
	refused(&g, sizeof g, -1, "0 descriptors, expected 1");
	ck_assert_int_eq(pipe(p), 0);
	refused(&g, sizeof g, p[0], "not a TCP socket");
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, un), 0);
	refused(&g, sizeof g, un[0], "not a TCP socket");
	g.home = 1;
	refused(&g, sizeof g, tcp, "home 1 is not another node");
	g.home = 9;
	refused(&g, sizeof g, tcp, "home 9 is not another node");
	g = good_guest();
	g.pid = 0;
	refused(&g, sizeof g, tcp, "pid 0 is out of range");
	g = good_guest();
	memset(g.user, 'u', sizeof g.user);
	refused(&g, sizeof g, tcp, "user name is not NUL-terminated");
	g.user[0] = '\0';
	refused(&g, sizeof g, tcp, "user name is empty");
	g = good_guest();
	memset(g.command, 'c', sizeof g.command);
	refused(&g, sizeof g, tcp, "command is not NUL-terminated");
	g = good_guest();
	g.strict_files = 2;
	refused(&g, sizeof g, tcp, "strict_files is 2, not 0 or 1");
	g.strict_files = 1;
	ck_assert_int_eq(check_sent(&g, sizeof g, tcp, &why), 0);
	close(tcp);
	close(p[0]);
	close(p[1]);
	close(un[0]);
	close(un[1]);
}
END_TEST

START_TEST(test_privmsg_token)
{
	struct privmsg_token	 t, out;
	struct privmsg		 msg;
	char			*why = NULL;
	int			 sv[2];

	pair(sv);
	memset(&t, 0, sizeof t);
	t.len = 20;
	ck_assert_int_eq(privmsg_send(sv[1], PRIVMSG_TOKEN, 1, &t, sizeof t,
	    NULL, 0), 0);
	ck_assert_int_eq(privmsg_recv(sv[0], &msg, &why), PRIVMSG_OK);
	ck_assert_int_eq(privmsg_check_token(&msg, &out, &why), 0);
	t.len = sizeof t.token + 1;
	ck_assert_int_eq(privmsg_send(sv[1], PRIVMSG_TOKEN, 1, &t, sizeof t,
	    NULL, 0), 0);
	ck_assert_int_eq(privmsg_recv(sv[0], &msg, &why), PRIVMSG_OK);
	ck_assert_int_eq(privmsg_check_token(&msg, &out, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "a length of 256"));
	free(why);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* Records refused before their type: short, too many descriptors; EOF. */
START_TEST(test_privmsg_records)
{
	struct privmsg	 msg;
	char		*why = NULL;
	int		 sv[2], fds[3], i;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(3 * sizeof(int))];
	} control;
	struct msghdr	 mh;
	struct cmsghdr	*cmsg;
	struct iovec	 iov;
	char		 bytes[16] = "0123456789abcde";

	pair(sv);
	ck_assert_int_eq(write(sv[1], "abc", 3), 3);
	ck_assert_int_eq(privmsg_recv(sv[0], &msg, &why), PRIVMSG_BAD);
	ck_assert_ptr_nonnull(strstr(why, "shorter than its header"));
	free(why);
	why = NULL;

	for (i = 0; i < 3; i++)
		fds[i] = open("/dev/null", O_RDONLY);
	memset(&mh, 0, sizeof mh);
	iov.iov_base = bytes;
	iov.iov_len = sizeof bytes;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = control.buf;
	mh.msg_controllen = CMSG_SPACE(3 * sizeof(int));
	cmsg = CMSG_FIRSTHDR(&mh);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(cmsg), fds, sizeof fds);
	ck_assert_int_eq(sendmsg(sv[1], &mh, 0), sizeof bytes);
	ck_assert_int_eq(privmsg_recv(sv[0], &msg, &why), PRIVMSG_BAD);
	ck_assert_ptr_nonnull(strstr(why, "more than 2 descriptors"));
	ck_assert_uint_eq(msg.nfds, 0);		/* all closed */
	free(why);
	for (i = 0; i < 3; i++)
		close(fds[i]);

	ck_assert_int_eq(privmsg_recv(sv[0], &msg, &why), PRIVMSG_NONE);
	close(sv[1]);
	ck_assert_int_eq(privmsg_recv(sv[0], &msg, &why), PRIVMSG_EOF);
	close(sv[0]);
}
END_TEST

/* A line of /proc/self/status, its value. */
static int
status_is(const char *key, const char *want)
{
	char	 line[256], *v;
	FILE	*f = fopen("/proc/self/status", "r");
	int	 ok = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, key, strlen(key)) != 0 ||
		    line[strlen(key)] != ':')
			continue;
		v = line + strlen(key) + 1;
		v += strspn(v, " \t");
		v[strcspn(v, "\n")] = '\0';
		ok = strcmp(v, want) == 0;
	}
	fclose(f);
	return ok;
}

static void *
sandboxed_thread(void *arg)
{
	return arg;
}

/* In the child: each step that fails is its exit status. */
static int
sandboxed(void)
{
	char		*argv[] = { "/bin/false", NULL };
	pthread_t	 t;
	void		*ret = NULL;
	int		 fd;

	/* Were it allowed, false would fail the test. */
	if (execv("/bin/false", argv) != -1 || errno != EPERM)
		return 10;
	if (open("/tmp/osm-sandbox-test", O_WRONLY | O_CREAT, 0600) != -1 ||
	    errno != EPERM)
		return 11;
	if (socket(AF_NETLINK, SOCK_RAW, 0) != -1 || errno != EPERM)
		return 12;
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != -1 || errno != EPERM)
		return 13;
	if (fork() != -1 || errno != EPERM)
		return 14;
	/* A thread, though: the probe's (mosd/probe-thread.c). */
	if (pthread_create(&t, NULL, sandboxed_thread, argv) != 0 ||
	    pthread_join(t, &ret) != 0 || ret != argv)
		return 16;
	if (setuid(0) != -1)
		return 15;
	/* What the loop needs still works. */
	if ((fd = open("/etc/passwd", O_RDONLY)) == -1)
		return 20;
	close(fd);
	if ((fd = socket(AF_INET, SOCK_DGRAM, 0)) == -1)
		return 21;
	close(fd);
	if (!status_is("Uid", "59999\t59999\t59999\t59999"))
		return 30;
	if (!status_is("CapEff", "0000000000000000") ||
	    !status_is("CapPrm", "0000000000000000") ||
	    !status_is("CapBnd", "0000000000000000"))
		return 31;
	if (!status_is("NoNewPrivs", "1") || !status_is("Seccomp", "2"))
		return 32;
	return 0;
}

START_TEST(test_sandbox)
{
	struct mosd	 m;
	pid_t		 pid, self = getpid();
	char		*cause = NULL;
	int		 st;

	if (geteuid() != 0)
		return;		/* only root can give a uid away */
	memset(&m, 0, sizeof m);
	m.conf = conf_of_three();
	/* As mosd's parent leaves it: the three capabilities, then fork. */
	if ((pid = fork()) == 0) {
		log_init(LOG_QUIET, "check");
		if (sandbox_enter(&m, self, &cause) == -1) {
			fprintf(stderr, "sandbox_enter: %s\n", cause);
			_exit(2);
		}
		_exit(sandboxed());
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "the sandboxed child: status %#x", st);
	conf_free(m.conf);
}
END_TEST

void	 check_mosd_privmsg(Suite *s);

void
check_mosd_privmsg(Suite *s)
{
	TCase	*tc = tcase_create("privsep");

	tcase_add_test(tc, test_privmsg_guest);
	tcase_add_test(tc, test_privmsg_token);
	tcase_add_test(tc, test_privmsg_records);
	tcase_add_test(tc, test_sandbox);
	suite_add_tcase(s, tc);
}
