/*
 * lab test equipment (lab/hwsim/README.md "ibsim", "umad-timeout"): the kernel MAD layer's send timeout for a
 * process under umad2sim. Never on a real host: the kernel gives it there.
 *
 * With the kernel, umad_send(..., timeout_ms, retries) of a MAD that expects a response is completed either by the
 * response or, after timeout_ms (times retries + 1), by umad_recv() returning the sent MAD with status ETIMEDOUT
 * (linux drivers/infiniband/core/user_mad.c, mad.c). umad2sim (ibsim 0.10 umad2sim/umad2sim.c umad2sim_write())
 * writes the MAD to ibsim and forgets timeout_ms and retries; a MAD ibsim never answers is then never completed.
 * ibsim drops every TrapRepress (ibsim/sim_mad.c process_packet(): "got trap repress - dropping"), so the Trap 144
 * a standby OpenSM of higher priority sends its master (opensm/osm_sminfo_rcv.c, osm_req.c osm_send_trap144(),
 * resp_expected) stays outstanding for good: OpenSM's qp0_mads_outstanding never returns to 0 and, once that SM is
 * master, wait_for_pending_transactions() (opensm/osm_state_mgr.c) blocks every sweep.
 *
 * This library, preloaded before libumad2sim.so, wraps libibumad's umad_send() and umad_recv(): a send with
 * timeout_ms > 0 is remembered (fd, mgmt class, the low 32 bits of the TID: what OpenSM matches,
 * libvendor/osm_vendor_ibumad.c get_madw()); a response (R bit or TrapRepress) or a MAD returned with a status
 * forgets it; one still remembered timeout_ms * (retries + 1) ms after the send is returned by umad_recv() as the
 * kernel returns it: the sent MAD, status ETIMEDOUT. HWSIM_UMAD_TIMEOUT_MIN_MS (optional) raises that wait for a slow
 * simulator. Each such timeout is written to stderr (the unit's journal).
 *
 * Build: gcc -shared -fPIC -O2 -Wall -o umad-timeout.so umad-timeout.c -lpthread -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLICE_MS 50             /* longest real wait in umad_recv(), so a send made meanwhile times out on time */
#define METHOD_TRAP_REPRESS 0x07
#define METHOD_RESP_MASK 0x80

/* The start of struct ib_user_mad (kernel ABI, include/uapi/rdma/ib_user_mad.h; libibumad's ib_user_mad_t). */
struct umad_head {
	uint32_t agent_id;
	uint32_t status;
	uint32_t timeout_ms;
	uint32_t retries;
	uint32_t length;
};

struct pending {
	struct pending *next;
	int fd;
	uint8_t mgmt_class;
	uint32_t tid;           /* low 32 bits of the TransactionID, network order bytes 12-15 of the MAD */
	uint64_t deadline_ms;
	uint64_t wait_ms;       /* timeout_ms * (retries + 1), or the floor */
	size_t size;            /* bytes of the saved umad (header + MAD) */
	unsigned char umad[];
};

static int (*real_send)(int, int, void *, int, int, int);
static int (*real_recv)(int, void *, int *, int);
static size_t (*real_size)(void);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending *pendings;
static uint64_t min_wait_ms;

static void init(void)
{
	const char *floor;

	if (real_recv)
		return;
	real_send = dlsym(RTLD_NEXT, "umad_send");
	real_size = dlsym(RTLD_NEXT, "umad_size");
	floor = getenv("HWSIM_UMAD_TIMEOUT_MIN_MS");
	min_wait_ms = floor ? strtoull(floor, NULL, 10) : 0;
	real_recv = dlsym(RTLD_NEXT, "umad_recv");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint32_t mad_tid(const unsigned char *mad)
{
	return (uint32_t)mad[12] << 24 | (uint32_t)mad[13] << 16 | (uint32_t)mad[14] << 8 | mad[15];
}

/* Forget the send a received MAD completes: a response, a TrapRepress, or the sent MAD returned with a status. */
static void complete(int fd, const void *umad)
{
	const unsigned char *mad = (const unsigned char *)umad + real_size();
	const struct umad_head *head = umad;
	struct pending **link, *item;

	if (!head->status && !(mad[3] & METHOD_RESP_MASK) && mad[3] != METHOD_TRAP_REPRESS)
		return;         /* a request to us */
	pthread_mutex_lock(&lock);
	for (link = &pendings; (item = *link); link = &item->next)
		if (item->fd == fd && item->mgmt_class == mad[1] && item->tid == mad_tid(mad)) {
			*link = item->next;
			free(item);
			break;
		}
	pthread_mutex_unlock(&lock);
}

/* The earliest send of fd past its deadline, taken off the list, or NULL; *next_ms: the next deadline (or 0). */
static struct pending *take_expired(int fd, uint64_t now, uint64_t *next_ms)
{
	struct pending **link, *item, *found = NULL;

	*next_ms = 0;
	pthread_mutex_lock(&lock);
	for (link = &pendings; (item = *link); link = &item->next) {
		if (item->fd != fd)
			continue;
		if (item->deadline_ms <= now) {
			*link = item->next;
			found = item;
			break;
		}
		if (!*next_ms || item->deadline_ms < *next_ms)
			*next_ms = item->deadline_ms;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms, int retries)
{
	struct pending *item = NULL, **link;
	const unsigned char *mad;
	uint64_t wait;
	size_t size;
	int ret;

	init();
	if (timeout_ms > 0 && length > 0) {
		size = real_size() + (size_t)length;
		item = malloc(sizeof(*item) + size);
		if (item) {
			memcpy(item->umad, umad, size);
			mad = item->umad + real_size();
			item->fd = fd;
			item->mgmt_class = mad[1];
			item->tid = mad_tid(mad);
			item->size = size;
			wait = (uint64_t)timeout_ms * (uint64_t)(retries > 0 ? retries + 1 : 1);
			item->wait_ms = wait < min_wait_ms ? min_wait_ms : wait;
			item->deadline_ms = now_ms() + item->wait_ms;
			((struct umad_head *)item->umad)->agent_id = agentid;
			/* remembered before the send: the response may be read before umad_send() returns */
			pthread_mutex_lock(&lock);
			item->next = pendings;
			pendings = item;
			pthread_mutex_unlock(&lock);
		}
	}
	ret = real_send(fd, agentid, umad, length, timeout_ms, retries);
	if (ret < 0 && item) {
		pthread_mutex_lock(&lock);
		for (link = &pendings; *link; link = &(*link)->next)
			if (*link == item) {
				*link = item->next;
				free(item);
				break;
			}
		pthread_mutex_unlock(&lock);
	}
	return ret;
}

int umad_recv(int fd, void *umad, int *length, int timeout_ms)
{
	uint64_t start = now_ms(), now, next, wait;
	const unsigned char *mad;
	struct pending *item;
	int asked = *length, ret, slice;
	size_t size;

	init();
	for (;;) {
		now = now_ms();
		item = take_expired(fd, now, &next);
		if (item) {
			size = item->size;
			if (size > real_size() + (size_t)asked)
				size = real_size() + (size_t)asked;
			memcpy(umad, item->umad, size);
			((struct umad_head *)umad)->status = ETIMEDOUT;
			*length = (int)(size - real_size());
			mad = item->umad + real_size();
			fprintf(stderr, "umad-timeout: no response to class 0x%02x method 0x%02x attr 0x%02x%02x TID 0x%08x "
				"in %llu ms: returned with status ETIMEDOUT, as the kernel MAD layer does\n",
				mad[1], mad[3], mad[16], mad[17], item->tid,
				(unsigned long long)item->wait_ms);
			ret = (int)((struct umad_head *)item->umad)->agent_id;
			free(item);
			return ret;
		}
		wait = SLICE_MS;
		if (next && next - now < wait)
			wait = next - now;
		if (timeout_ms >= 0) {
			if (now - start >= (uint64_t)timeout_ms)
				wait = 0;
			else if ((uint64_t)timeout_ms - (now - start) < wait)
				wait = (uint64_t)timeout_ms - (now - start);
		}
		slice = wait ? (int)wait : (timeout_ms == 0 ? 0 : 1);
		*length = asked;
		ret = real_recv(fd, umad, length, slice);
		if (ret >= 0) {
			complete(fd, umad);
			return ret;
		}
		if (ret != -ETIMEDOUT)
			return ret;
		if (timeout_ms >= 0 && now_ms() - start >= (uint64_t)timeout_ms)
			return ret;
	}
}
