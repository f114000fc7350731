/*
 * daemon.c - a long-running program statically linked with omalloc.
 *
 * It shows the three things a daemon needs from its allocator:
 *
 *   1. Options compiled in.  A daemon started by an init system does not
 *      see the caller's environment, so its MALLOC_OPTIONS live in the
 *      binary as the global malloc_options below.  omalloc reads it after
 *      /etc/malloc.conf and the environment, so it wins.
 *   2. Statistics on demand.  The daemon never exits, so the dump at exit
 *      (option D) is not enough: SIGUSR1 asks for a dump now, written with
 *      malloc_gdump() to the file named on the command line.
 *   3. No allocator call in a signal handler.  malloc_gdump() takes each
 *      pool's lock in turn; a handler that interrupted this very thread
 *      inside malloc would wait for a lock it holds (or omalloc would abort
 *      with "recursive call").  So the handler only writes one byte into a
 *      pipe, and the main loop, which polls that pipe, does the work.
 *
 * Build it against an installed omalloc, fully static:
 *
 *     gcc -O2 -static -o daemon daemon.c \
 *         $(pkg-config --static --cflags --libs omalloc)
 *
 * Run it:
 *
 *     ./daemon /tmp/daemon.dump &
 *     kill -USR1 $!                   # appends a dump to /tmp/daemon.dump
 *     bench/omdump summary /tmp/daemon.dump
 *     kill -TERM $!                   # clean exit, dump at exit (D)
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <omalloc.h>

/*
 * C: chunk canaries, G: guard pages after page regions, J: junk level 2,
 * D: record callers for the leak report and dump at exit (to
 * MALLOC_DUMP_FILE, else ./malloc.out).
 */
const char *const malloc_options = "CGJD";

#define NWORKERS 2
#define NSLOTS 512

static int sigpipe[2] = {-1, -1};
static atomic_int stopping;

/*
 * Runs in signal context: only async-signal-safe calls, no allocation.
 * The byte says which signal came; a full pipe just drops it, which is
 * fine because one pending request of each kind is enough.
 */
static void
on_signal(int sig)
{
	int saved = errno;
	char c = sig == SIGUSR1 ? 'u' : 't';
	ssize_t unused;

	unused = write(sigpipe[1], &c, 1);
	(void)unused;
	errno = saved;
}

static uint64_t
next_random(uint64_t *state)
{
	/* xorshift64: good enough to vary sizes, and no libc state. */
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/*
 * A worker keeps a table of live blocks and keeps replacing them, like a
 * server holding sessions and buffers: mostly small chunks, a few page
 * regions.  Each thread's allocations go to the pool of its thread id.
 */
static void *
worker(void *arg)
{
	uint64_t state = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	void *slot[NSLOTS] = {0};
	struct timespec pause = {0, 2 * 1000 * 1000};
	unsigned long n;

	for (n = 0; !atomic_load(&stopping); n++) {
		uint64_t r = next_random(&state);
		size_t i = r % NSLOTS;
		size_t size = (r >> 16) % 8 == 0 ? 4096 + (r >> 32) % 65536
						 : 8 + (r >> 32) % 1024;

		free(slot[i]);
		slot[i] = malloc(size);
		if (slot[i] != NULL)
			memset(slot[i], (int)n, size);
		if (n % 256 == 0)
			nanosleep(&pause, NULL);
	}
	for (n = 0; n < NSLOTS; n++)
		free(slot[n]);
	return NULL;
}

static int
dump_to(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0) {
		fprintf(stderr, "daemon: %s: %s\n", path, strerror(errno));
		return -1;
	}
	malloc_gdump(fd);
	close(fd);
	return 0;
}

int
main(int argc, char *argv[])
{
	const char *dump_path = argc > 1 ? argv[1] : "daemon.dump";
	pthread_t tid[NWORKERS];
	struct sigaction sa;
	struct pollfd pfd;
	char *secret;
	int i, running = 1;

	if (pipe2(sigpipe, O_NONBLOCK | O_CLOEXEC) == -1) {
		perror("daemon: pipe2");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) == -1 ||
	    sigaction(SIGTERM, &sa, NULL) == -1 ||
	    sigaction(SIGINT, &sa, NULL) == -1) {
		perror("daemon: sigaction");
		return 1;
	}

	/*
	 * A secret lives in the conceal pool: left out of core dumps and
	 * cleared when freed.
	 */
	secret = malloc_conceal(64);
	if (secret == NULL) {
		perror("daemon: malloc_conceal");
		return 1;
	}
	snprintf(secret, 64, "session key of %ld", (long)getpid());

	for (i = 0; i < NWORKERS; i++) {
		if (pthread_create(&tid[i], NULL, worker,
				   (void *)(uintptr_t)(i + 1)) != 0) {
			fprintf(stderr, "daemon: cannot start worker\n");
			return 1;
		}
	}

	printf("daemon %ld ready, SIGUSR1 dumps to %s\n", (long)getpid(),
	       dump_path);
	fflush(stdout);

	pfd.fd = sigpipe[0];
	pfd.events = POLLIN;
	while (running) {
		char req[16];
		ssize_t got, k;

		if (poll(&pfd, 1, -1) == -1) {
			if (errno == EINTR)
				continue;
			perror("daemon: poll");
			break;
		}
		got = read(sigpipe[0], req, sizeof(req));
		for (k = 0; k < got; k++) {
			if (req[k] == 'u') {
				if (dump_to(dump_path) == 0)
					printf("dumped to %s\n", dump_path);
			} else {
				running = 0;
			}
		}
		fflush(stdout);
	}

	atomic_store(&stopping, 1);
	for (i = 0; i < NWORKERS; i++)
		pthread_join(tid[i], NULL);
	freezero(secret, 64);
	printf("daemon %ld exiting\n", (long)getpid());
	return 0;
}
