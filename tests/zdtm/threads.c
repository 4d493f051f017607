/*
 * Threads, each blocked its own way when dumped: on a mutex, a condition
 * variable, a barrier, a futex word with a timeout, a semaphore with a
 * deadline (which the kernel restarts: no EINTR), a sleep, a read of
 * standard input (a pipe the driver feeds after the restore). After
 * SIGUSR1 each is let go and must come out right, with its tid, its TLS
 * value and its name as they were.
 */
#include <sys/syscall.h>

#include <linux/futex.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>

#include "zdtm.h"

enum { MUTEX, COND, BARRIER, FUTEX, TIMED, SLEEP, READ, NWORKERS };
static const char *names[NWORKERS] = {
	"w-mutex", "w-cond", "w-barrier", "w-futex", "w-timed", "w-sleep",
	"w-read",
};

static pthread_mutex_t	 mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t	 lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static uint32_t		 word;
static sem_t		 sem;
static int		 flag;
static pid_t		 tids[NWORKERS];
static volatile int	 started;
static __thread long	 tls = -1;

static void
check_self(int i)
{
	char	name[32];

	if (syscall(SYS_gettid) != tids[i])
		zdtm_fail("%s: tid %ld, was %d", names[i],
		    (long)syscall(SYS_gettid), tids[i]);
	if (tls != 1000 + i)
		zdtm_fail("%s: TLS value %ld, not %d", names[i], tls, 1000 + i);
	pthread_getname_np(pthread_self(), name, sizeof name);
	if (strcmp(name, names[i]) != 0)
		zdtm_fail("%s: named %s", names[i], name);
}

static void *
worker(void *arg)
{
	int		i = (int)(intptr_t)arg;
	struct timespec	ts, t0, t1;
	char		buf[64];
	ssize_t		n;

	tls = 1000 + i;
	tids[i] = syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), names[i]);
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	switch (i) {
	case MUTEX:
		pthread_mutex_lock(&mutex);
		pthread_mutex_unlock(&mutex);
		break;
	case COND:
		pthread_mutex_lock(&lock);
		while (!flag)
			pthread_cond_wait(&cond, &lock);
		pthread_mutex_unlock(&lock);
		break;
	case BARRIER:
		pthread_barrier_wait(&barrier);
		break;
	case FUTEX:
		/* A relative timeout: EINTR after a restore, as a signal. */
		ts.tv_sec = 120;
		ts.tv_nsec = 0;
		while (__atomic_load_n(&word, __ATOMIC_SEQ_CST) == 0) {
			if (syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0,
			    &ts, NULL, 0) == -1 && errno == ETIMEDOUT)
				zdtm_fail("futex wait timed out");
		}
		break;
	case TIMED:
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 120;
		if (sem_timedwait(&sem, &ts) == -1)
			zdtm_fail("sem_timedwait: %s", strerror(errno));
		break;
	case SLEEP:
		clock_gettime(CLOCK_REALTIME, &t0);
		ts.tv_sec = 4;
		ts.tv_nsec = 0;
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
		clock_gettime(CLOCK_REALTIME, &t1);
		if ((t1.tv_sec - t0.tv_sec) * 1000 +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000 < 4000)
			zdtm_fail("woke before its 4 s were up");
		break;
	case READ:
		if ((n = read(0, buf, sizeof buf - 1)) <= 0)
			zdtm_fail("read: %zd", n);
		buf[n] = '\0';
		if (strcmp(buf, "restored line\n") != 0)
			zdtm_fail("read %s", buf);
		break;
	}
	check_self(i);
	return NULL;
}

int
main(void)
{
	pthread_t	t[NWORKERS];
	sigset_t	set;
	int		i;

	zdtm_init();
	pthread_barrier_init(&barrier, NULL, 2);
	sem_init(&sem, 0, 0);
	pthread_mutex_lock(&mutex);
	/* The driver's SIGUSR1 is for main alone. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < NWORKERS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < NWORKERS)
		usleep(1000);
	usleep(200000);		/* each in its wait */
	zdtm_ready();
	zdtm_wait_go();

	pthread_mutex_unlock(&mutex);
	pthread_mutex_lock(&lock);
	flag = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	sem_post(&sem);
	pthread_barrier_wait(&barrier);
	__atomic_store_n(&word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	for (i = 0; i < NWORKERS; i++) {
		/* pthread_join waits on the tid glibc cached. */
		if (pthread_join(t[i], NULL) != 0)
			zdtm_fail("join %s", names[i]);
	}
	zdtm_pass();
}
