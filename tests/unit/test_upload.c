// SPDX-License-Identifier: Apache-2.0
/*
 * Delivery: the spool's files, the uploader's queue (order, retries, backoff, drops, spill
 * and restart) against a scripted sender, and the Pyroscope request and response helpers.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/ship/http.h"
#include "../../agent/ship/pyroscope.h"
#include "../../agent/ship/spool.h"
#include "../../agent/profile/targets.h"
#include "../../agent/ship/uploader.h"
#include "push.pb-c.h"

/* ---- A target without the targets table ----------------------------------------------- */

struct fake_target {
	struct target t;
	struct target_label l[3];
	char key[64], service[32];
};

static const struct target *target(struct fake_target *ft, const char *service)
{
	snprintf(ft->service, sizeof(ft->service), "%s", service);
	snprintf(ft->key, sizeof(ft->key), "service_name=%s\n", service);
	ft->t.nr_labels = 3;
	ft->t.key = ft->key;
	ft->t.service_name = ft->service;
	ft->l[0] = (struct target_label){ "__name__", "process_cpu" };
	ft->l[1] = (struct target_label){ "service_name", ft->service };
	ft->l[2] = (struct target_label){ "hostname", "h1" };
	return &ft->t;
}

static uint8_t *blob(size_t len, uint8_t fill)
{
	uint8_t *b = malloc(len);

	assert_non_null(b);
	memset(b, fill, len);
	return b;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void wait_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- A scripted sender -------------------------------------------------------------------- */

#define MAX_SENT 256

struct sent {
	char service[32];
	uint64_t time_ns;
	uint8_t fill;
	double at; /* seconds since the fake began */
};

struct fake {
	pthread_mutex_t lock;
	const char *script; /* one char per attempt: 'o' ok, 'r' 500, 'R' 429 + Retry-After 0.3,
			     * 'b' 400; past the end: ok */
	size_t next;
	const char *reject; /* a service always answered 400 */
	bool hang;	    /* block until aborted */
	struct sent sent[MAX_SENT];
	size_t nr_sent, attempts;
	double t0;
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *fake_open(void *ctx)
{
	return ctx;
}

static void fake_close(void *s)
{
	(void)s;
}

static const char *service_of(const struct upload *u)
{
	uint32_t i;

	for (i = 0; i < u->nr_labels; i++)
		if (!strcmp(u->labels[i].name, "service_name"))
			return u->labels[i].value;
	return "";
}

static void fake_send(void *s, const struct upload *u, const atomic_bool *abort,
		      struct send_result *r)
{
	struct fake *f = s;
	char what;

	if (f->hang) {
		while (!atomic_load(abort))
			wait_ms(5);
		r->outcome = SEND_RETRY;
		r->code = UPLOAD_ERR_NETWORK;
		snprintf(r->message, sizeof(r->message), "aborted");
		return;
	}
	pthread_mutex_lock(&f->lock);
	f->attempts++;
	what = f->script && f->script[f->next] ? f->script[f->next++] : 'o';
	if (f->reject && !strcmp(service_of(u), f->reject))
		what = 'b';
	r->bytes = u->len;
	switch (what) {
	case 'o':
		r->outcome = SEND_OK;
		r->status = 200;
		if (f->nr_sent < MAX_SENT) {
			struct sent *x = &f->sent[f->nr_sent++];

			snprintf(x->service, sizeof(x->service), "%s", service_of(u));
			x->time_ns = u->time_ns;
			x->fill = u->len ? u->data[0] : 0;
			x->at = mono() - f->t0;
		}
		break;
	case 'r':
		pyroscope_classify(500, 0, "{\"code\":\"internal\"}", r);
		break;
	case 'R':
		pyroscope_classify(429, 0, "{\"code\":\"resource_exhausted\"}", r);
		r->retry_after_sec = 0.3;
		break;
	default:
		pyroscope_classify(400, 0, "{\"code\":\"invalid_argument\",\"message\":\"no\"}", r);
		break;
	}
	pthread_mutex_unlock(&f->lock);
}

static struct uploader *start(struct fake *f, unsigned int workers, uint64_t queue_max,
			      const char *spool_dir)
{
	struct uploader_opts o = {
		.workers = workers,
		.queue_max_bytes = queue_max,
		.spool_dir = spool_dir,
		.spool_max_bytes = 1 << 20,
		.max_age_ns = 3600 * 1000000000ULL,
		.backoff_min_ns = 100 * 1000000ULL,
		.backoff_max_ns = 1000 * 1000000ULL,
		.sender = { fake_open, fake_close, fake_send, f },
	};
	struct uploader *u = uploader__new(&o);

	assert_non_null(u);
	return u;
}

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->t0 = mono();
}

static size_t sent_count(struct fake *f)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->nr_sent;
	pthread_mutex_unlock(&f->lock);
	return n;
}

static bool wait_sent(struct fake *f, size_t n, unsigned int ms)
{
	unsigned int waited;

	for (waited = 0; waited < ms; waited += 10) {
		if (sent_count(f) >= n)
			return true;
		wait_ms(10);
	}
	return sent_count(f) >= n;
}

/* ---- Tests -------------------------------------------------------------------------------- */

static void test_order_per_target_and_retries(void **state)
{
	struct fake_target ta, tb;
	struct uploader_stats st;
	struct fake f;
	struct uploader *u;
	uint64_t t = now_ns();
	int i;

	(void)state;
	fake_init(&f);
	f.script = "rrRo"; /* two 500s, a 429 with Retry-After, then fine */
	u = start(&f, 1, 16 << 20, NULL);
	for (i = 0; i < 5; i++) {
		assert_int_equal(uploader__enqueue(u, target(&ta, "a"), t + (uint64_t)i, 1,
						   blob(100, (uint8_t)i), 100), 0);
		assert_int_equal(uploader__enqueue(u, target(&tb, "b"), t + (uint64_t)i, 1,
						   blob(100, (uint8_t)(10 + i)), 100), 0);
	}
	assert_true(wait_sent(&f, 10, 10000));
	uploader__stats(u, &st);
	assert_int_equal(st.sent, 10);
	assert_int_equal(st.retries, 3);
	assert_int_equal(st.errors[UPLOAD_ERR_5XX], 2);
	assert_int_equal(st.errors[UPLOAD_ERR_429], 1);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.queue_bytes, 0);
	/* Each target's profiles arrived in window order, none twice. */
	{
		int next_a = 0, next_b = 10;
		size_t k;

		for (k = 0; k < f.nr_sent; k++) {
			if (!strcmp(f.sent[k].service, "a"))
				assert_int_equal(f.sent[k].fill, next_a++);
			else
				assert_int_equal(f.sent[k].fill, next_b++);
		}
		assert_int_equal(next_a, 5);
		assert_int_equal(next_b, 15);
	}
	/* Backoff: 100 ms (50-100 % jittered), 200 ms, then the 300 ms Retry-After. */
	assert_true(f.sent[0].at >= 0.05 + 0.1 + 0.3 - 0.02);
	uploader__free(u, 0);
}

static void test_rejected_target_does_not_block_others(void **state)
{
	struct fake_target ta, tb;
	struct uploader_stats st;
	struct fake f;
	struct uploader *u;
	uint64_t t = now_ns();
	int i;

	(void)state;
	fake_init(&f);
	f.reject = "bad";
	u = start(&f, 2, 16 << 20, NULL);
	for (i = 0; i < 3; i++) {
		assert_int_equal(uploader__enqueue(u, target(&ta, "bad"), t, 1, blob(10, 1), 10), 0);
		assert_int_equal(uploader__enqueue(u, target(&tb, "good"), t, 1, blob(10, 2), 10),
				 0);
	}
	assert_true(wait_sent(&f, 3, 5000));
	wait_ms(100);
	uploader__stats(u, &st);
	assert_int_equal(st.sent, 3);
	assert_int_equal(st.dropped[DROP_REJECTED], 3);
	assert_int_equal(st.errors[UPLOAD_ERR_400], 3);
	assert_int_equal(st.retries, 0); /* not retried */
	assert_int_equal(f.attempts, 6);
	uploader__free(u, 0);
}

static void test_queue_bound_drops_oldest(void **state)
{
	struct fake_target ta;
	struct uploader_stats st;
	struct fake f;
	struct uploader *u;
	uint64_t t = now_ns();
	int i;

	(void)state;
	fake_init(&f);
	f.hang = true; /* a server that never answers */
	u = start(&f, 1, 1 << 20, NULL);
	for (i = 0; i < 40; i++)
		assert_int_equal(uploader__enqueue(u, target(&ta, "a"), t + (uint64_t)i, 1,
						   blob(100000, (uint8_t)i), 100000),
				 0);
	uploader__stats(u, &st);
	/* 1 MiB holds 10 of them; the oldest idle ones went (one is in flight). */
	assert_true(st.queue_bytes <= 1 << 20);
	assert_true(st.queued >= 9 && st.queued <= 11);
	assert_int_equal(st.dropped[DROP_QUEUE_FULL], 40 - st.queued);
	uploader__free(u, 0); /* aborts the hanging send */
}

static int count_spool_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".spool") && e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void test_spool_spill_restart_and_damage(void **state)
{
	char dir[] = "/tmp/ignis-spool-XXXXXX", path[256];
	struct fake_target ta, tb;
	struct uploader_stats st;
	struct fake f;
	struct uploader *u, *other;
	uint64_t t = now_ns();
	struct uploader_opts busy = { 0 };
	size_t k;
	int i, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fake_init(&f);
	f.hang = true;
	u = start(&f, 1, 1 << 20, dir);
	/* A second agent cannot share the spool. */
	busy.workers = 1;
	busy.spool_dir = dir;
	busy.spool_max_bytes = 1 << 20;
	busy.sender = (struct sender_ops){ fake_open, fake_close, fake_send, &f };
	other = uploader__new(&busy);
	assert_null(other);
	assert_int_equal(errno, EBUSY);

	for (i = 0; i < 20; i++)
		assert_int_equal(uploader__enqueue(u, target(i % 2 ? &ta : &tb, i % 2 ? "a" : "b"),
						   t + (uint64_t)i, 1, blob(200000, (uint8_t)i),
						   200000),
				 0);
	uploader__stats(u, &st);
	assert_true(st.queue_bytes <= 1 << 20);
	assert_true(st.spooled > 0);
	assert_true(st.spool_bytes > 0 && st.spool_bytes <= 1 << 20);
	/* Memory and spool (1 MiB each) hold about 10 profiles: the oldest went. */
	assert_true(st.dropped[DROP_QUEUE_FULL] > 0);
	assert_int_equal(st.dropped[DROP_QUEUE_FULL] + st.queued, 20);
	uploader__free(u, 0); /* SIGTERM during the outage: memory goes to the spool */
	assert_true(count_spool_files(dir) > 0);
	assert_int_equal((uint64_t)count_spool_files(dir), st.queued);

	/* A damaged file and a torn temporary one are dropped at load, never sent. */
	snprintf(path, sizeof(path), "%s/0000000000000001-0000000000000000.spool", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "IGNSPOOLgarbage", 15), 15);
	close(fd);
	snprintf(path, sizeof(path), "%s/.tmp-x.spool", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	close(fd);

	/* Restart with the server back: everything spooled arrives, in order per target. */
	fake_init(&f);
	u = start(&f, 2, 1 << 20, dir);
	uploader__stats(u, &st);
	assert_int_equal(st.dropped[DROP_SPOOL_ERROR], 1);
	assert_true(wait_sent(&f, st.loaded, 10000));
	wait_ms(50);
	assert_int_equal(f.nr_sent, st.loaded);
	{
		int last_a = -1, last_b = -1;

		for (k = 0; k < f.nr_sent; k++) {
			int *last = !strcmp(f.sent[k].service, "a") ? &last_a : &last_b;

			assert_true(f.sent[k].fill > *last);
			*last = f.sent[k].fill;
		}
		assert_int_equal(last_a, 19);
		assert_int_equal(last_b, 18);
	}
	uploader__free(u, 0);
	assert_int_equal(count_spool_files(dir), 0);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

static void test_too_old_dropped(void **state)
{
	struct fake_target ta;
	struct uploader_stats st;
	struct fake f;
	struct uploader *u;

	(void)state;
	fake_init(&f);
	u = start(&f, 1, 1 << 20, NULL);
	/* Two hours old: the server would refuse it. */
	assert_int_equal(uploader__enqueue(u, target(&ta, "a"), now_ns() - 7200000000000ULL, 1,
					   blob(10, 1), 10),
			 0);
	assert_int_equal(uploader__enqueue(u, target(&ta, "a"), now_ns(), 1, blob(10, 2), 10), 0);
	assert_true(wait_sent(&f, 1, 5000));
	wait_ms(100);
	uploader__stats(u, &st);
	assert_int_equal(st.sent, 1);
	assert_int_equal(f.sent[0].fill, 2);
	assert_int_equal(st.dropped[DROP_TOO_OLD], 1);
	uploader__free(u, 0);
}

/* ---- Pyroscope and HTTP helpers ---------------------------------------------------------- */

static void test_push_body(void **state)
{
	struct target_label labels[2] = { { "__name__", "process_cpu" },
					  { "service_name", "shop/cart" } };
	uint8_t pprof[] = { 0x1f, 0x8b, 8, 0, 1, 2, 3 };
	struct upload u = { .labels = labels, .nr_labels = 2, .data = pprof,
			    .len = sizeof(pprof) };
	Push__V1__PushRequest *req;
	uint8_t *body = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(pyroscope_push_body(&u, &body, &len), 0);
	/* PROTOCOLS.md 2.3: 0A <len> RawProfileSeries, whose first label is __name__. */
	assert_int_equal(body[0], 0x0a);
	req = push__v1__push_request__unpack(NULL, len, body);
	assert_non_null(req);
	assert_int_equal(req->n_series, 1);
	assert_int_equal(req->series[0]->n_labels, 2);
	assert_string_equal(req->series[0]->labels[0]->name, "__name__");
	assert_string_equal(req->series[0]->labels[1]->value, "shop/cart");
	assert_int_equal(req->series[0]->n_samples, 1);
	assert_int_equal(req->series[0]->samples[0]->raw_profile.len, sizeof(pprof));
	assert_memory_equal(req->series[0]->samples[0]->raw_profile.data, pprof, sizeof(pprof));
	assert_string_equal(req->series[0]->samples[0]->id, "");
	push__v1__push_request__free_unpacked(req, NULL);
	free(body);
}

static void test_ingest_url(void **state)
{
	struct target_label labels[4] = { { "__name__", "process_cpu" },
					  { "service_name", "getty_tty1" },
					  { "hostname", "web-1" },
					  { "team", "a,b}c" } };
	struct upload u = { .labels = labels, .nr_labels = 4,
			    .time_ns = 1764441290123456789ULL, .duration_ns = 10000000000ULL };
	char *url = pyroscope_ingest_url("http://p:4040", &u);

	(void)state;
	assert_non_null(url);
	/* name=getty_tty1{hostname=web-1,team=a_b_c}, URL-encoded; whole seconds. */
	assert_string_equal(url, "http://p:4040/ingest?name=getty_tty1%7Bhostname%3Dweb-1%2C"
				 "team%3Da_b_c%7D&from=1764441290&until=1764441300&spyName=ebpfspy"
				 "&format=pprof");
	free(url);
}

static void test_classify(void **state)
{
	struct send_result r;

	(void)state;
	pyroscope_classify(200, 0, "", &r);
	assert_int_equal(r.outcome, SEND_OK);
	pyroscope_classify(0, -ECONNREFUSED, NULL, &r);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_NETWORK);
	pyroscope_classify(503, 0, "", &r);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_5XX);
	pyroscope_classify(408, 0, "", &r);
	assert_int_equal(r.outcome, SEND_RETRY);
	pyroscope_classify(429, 0, "", &r);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_429);
	pyroscope_classify(400, 0, "{\"code\":\"invalid_argument\",\"message\":\"bad\"}", &r);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_non_null(strstr(r.message, "bad"));
	pyroscope_classify(401, 0, "", &r);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_int_equal(r.code, UPLOAD_ERR_401);
	pyroscope_classify(413, 0, "", &r);
	assert_int_equal(r.outcome, SEND_DROP);
	pyroscope_classify(422, 0, "outside of ingestion window", &r);
	assert_int_equal(r.outcome, SEND_DROP);
	/* An older server's rate limit on /ingest. */
	pyroscope_classify(422, 0, "resource_exhausted: push rate limit", &r);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_429);
}

static void test_http_helpers(void **state)
{
	char *e;

	(void)state;
	assert_true(http_parse_retry_after("120", 0) == 120);
	assert_true(http_parse_retry_after(" 2\r\n", 0) == 2);
	assert_true(http_parse_retry_after("-1", 0) < 0);
	assert_true(http_parse_retry_after("soon", 0) < 0);
	/* RFC 9110's example date, 5 s after "now". */
	assert_true(http_parse_retry_after("Fri, 31 Dec 1999 23:59:59 GMT\r\n", 946684794) == 5);
	assert_true(http_parse_retry_after("Fri, 31 Dec 1999 23:59:59 GMT", 946684800) == 0);
	e = http_escape("a b{c=d,e}+~");
	assert_string_equal(e, "a%20b%7Bc%3Dd%2Ce%7D%2B~");
	free(e);
}

UNIT_MAIN("upload", cmocka_unit_test(test_order_per_target_and_retries),
	  cmocka_unit_test(test_rejected_target_does_not_block_others),
	  cmocka_unit_test(test_queue_bound_drops_oldest),
	  cmocka_unit_test(test_spool_spill_restart_and_damage),
	  cmocka_unit_test(test_too_old_dropped), cmocka_unit_test(test_push_body),
	  cmocka_unit_test(test_ingest_url), cmocka_unit_test(test_classify),
	  cmocka_unit_test(test_http_helpers))
