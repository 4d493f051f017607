/*
 * Robust, error-checking mutexes held by a thread when dumped: their
 * words hold the owner's tid, and the kernel knows them from the thread's
 * robust list. After SIGUSR1: another thread cannot take or release them
 * (EBUSY, EPERM), the owner releases one (glibc checks its tid), then
 * ends holding the other, which the kernel marks as its owner's death
 * (only if tid and robust list are as they were): EOWNERDEAD.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "zdtm.h"

static pthread_mutex_t	 m1, m2;
static pthread_barrier_t go;

static void *
holder(void *arg)
{
	(void)arg;
	if (pthread_mutex_lock(&m1) != 0 || pthread_mutex_lock(&m2) != 0)
		zdtm_fail("lock");
	pthread_barrier_wait(&go);	/* held */
	pthread_barrier_wait(&go);	/* restored, tried by main */
	if (pthread_mutex_unlock(&m1) != 0)
		zdtm_fail("the owner cannot unlock: its tid changed");
	return NULL;			/* holding m2 */
}

int
main(void)
{
	pthread_mutexattr_t	a;
	struct timespec		ts;
	pthread_t		t;
	sigset_t		set;
	int			rc;

	zdtm_init();
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&m1, &a);
	pthread_mutex_init(&m2, &a);
	pthread_barrier_init(&go, NULL, 2);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_create(&t, NULL, holder, NULL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	pthread_barrier_wait(&go);
	zdtm_ready();
	zdtm_wait_go();

	if ((rc = pthread_mutex_trylock(&m1)) != EBUSY)
		zdtm_fail("trylock of a held mutex: %d", rc);
	if ((rc = pthread_mutex_unlock(&m1)) != EPERM)
		zdtm_fail("unlock by another thread: %d", rc);
	pthread_barrier_wait(&go);
	pthread_join(t, NULL);
	if ((rc = pthread_mutex_trylock(&m1)) != 0)
		zdtm_fail("lock after its owner's unlock: %d", rc);
	/* Timed: were the owner's death unseen, it would wait for ever. */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if ((rc = pthread_mutex_timedlock(&m2, &ts)) != EOWNERDEAD)
		zdtm_fail("lock of one its owner died holding: %s",
		    strerror(rc));
	pthread_mutex_consistent(&m2);
	zdtm_pass();
}
