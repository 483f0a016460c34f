/* meterpub: the publishing side of flowbridge's ingest benchmark.
 *
 * Publishes N readings {"power": W} round-robin on PREFIX/solar, PREFIX/battery and PREFIX/grid at
 * QoS 1 (nothing is dropped), as fast as the broker takes them, then the sentinel {"power": 424242}
 * on PREFIX/grid, and waits until the broker has acknowledged every message. With WATCH (a file the
 * consumer writes its output to), it then waits until the sentinel appears there.
 *
 * With -r RATE, the readings go out one at a time, RATE a second on a fixed schedule (each at its
 * own deadline, so a late one does not shift the rest), as a home's meters send them: each reaches
 * a consumer alone, never in a backlog.
 *
 * With -s STAMPS, each reading's value is distinct, 1000 + its index in whole watts (a slot's
 * readings 3 W apart: each one a push under bench/bench.yaml's policy), and a line per reading,
 * the sentinel included, goes to the file STAMPS as it is handed to the broker:
 * "<CLOCK_MONOTONIC seconds> <slot> <watts>", so that a reader of the consumer's output on the
 * same clock finds each reading again by its value and knows how long it took (bench/hostile.sh).
 *
 * Prints one line: "publish <seconds> lag <milliseconds>", the lag measured from the last
 * acknowledgement to the sentinel showing up in WATCH (-1 without WATCH).
 *
 * usage: meterpub [-r RATE] [-s STAMPS] PORT N PREFIX [WATCH]
 */
#include <mosquitto.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile long acknowledged = 0;

static void on_publish(struct mosquitto *client, void *context, int mid) {
    (void)client; (void)context; (void)mid;
    __atomic_add_fetch(&acknowledged, 1, __ATOMIC_RELAXED);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Sleeps until `deadline` on the monotonic clock. */
static void pause_until(double deadline) {
    struct timespec t = {(time_t)deadline, (long)((deadline - (time_t)deadline) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {}
}

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* True once the sentinel is in the file: only the bytes added since the last look are read. */
static int sentinel_seen(const char *path, long *offset, char *tail) {
    FILE *file = fopen(path, "r");
    if (!file) return 0;
    fseek(file, *offset, SEEK_SET);
    char chunk[65536 + 8];
    size_t kept = strlen(tail), count;
    int found = 0;
    memcpy(chunk, tail, kept);
    while (!found && (count = fread(chunk + kept, 1, 65536, file)) > 0) {
        *offset += count;
        chunk[kept + count] = 0;
        found = strstr(chunk, "424242") != NULL;
        size_t total = kept + count, keep = total < 6 ? total : 6;  /* a sentinel split across reads */
        memmove(chunk, chunk + total - keep, keep);
        kept = keep;
    }
    memcpy(tail, chunk, kept);
    tail[kept] = 0;
    fclose(file);
    return found;
}

int main(int argc, char **argv) {
    static const char *usage = "usage: meterpub [-r RATE] [-s STAMPS] PORT N PREFIX [WATCH]\n";
    double rate = 0;
    FILE *stamps = NULL;
    for (int option; (option = getopt(argc, argv, "r:s:")) != -1;) {
        if (option == 'r' && (rate = atof(optarg)) > 0) continue;
        if (option == 's' && (stamps = fopen(optarg, "w")) != NULL) continue;
        fputs(usage, stderr);
        return 64;
    }
    argc -= optind - 1;
    argv += optind - 1;
    if (argc < 4) { fputs(usage, stderr); return 64; }
    int port = atoi(argv[1]);
    long n = atol(argv[2]);
    const char *prefix = argv[3], *watch = argc > 4 ? argv[4] : NULL;
    mosquitto_lib_init();
    struct mosquitto *client = mosquitto_new(NULL, true, NULL);
    mosquitto_publish_callback_set(client, on_publish);
    mosquitto_int_option(client, MOSQ_OPT_SEND_MAXIMUM, 1000);
    if (mosquitto_connect(client, "127.0.0.1", port, 60) != MOSQ_ERR_SUCCESS) { fprintf(stderr, "meterpub: cannot connect\n"); return 1; }
    mosquitto_loop_start(client);
    static const char *slots[3] = {"solar", "battery", "grid"};
    char topic[256], payload[64];
    double start = now();
    for (long i = 0; i <= n; i++) {
        if (rate > 0) pause_until(start + i / rate);
        int length;
        if (i == n) {
            snprintf(topic, sizeof topic, "%s/grid", prefix);
            length = snprintf(payload, sizeof payload, "{\"power\": 424242}");
        } else {
            snprintf(topic, sizeof topic, "%s/%s", prefix, slots[i % 3]);
            length = stamps ? snprintf(payload, sizeof payload, "{\"power\": %ld}", 1000 + i)
                            : snprintf(payload, sizeof payload, "{\"power\": %.1f}", 1000 + 800 * sin(i / 50.0) + (i % 7));
        }
        if (stamps) fprintf(stamps, "%.6f %s %ld\n", now(), i == n ? "grid" : slots[i % 3], i == n ? 424242L : 1000 + i);
        int rc;
        while ((rc = mosquitto_publish(client, NULL, topic, length, payload, 1, false)) == MOSQ_ERR_NOMEM) pause_ms(1);
        if (rc != MOSQ_ERR_SUCCESS) { fprintf(stderr, "meterpub: %s\n", mosquitto_strerror(rc)); return 1; }
    }
    while (__atomic_load_n(&acknowledged, __ATOMIC_RELAXED) < n + 1) pause_ms(1);
    double published = now();
    double lag = -1;
    if (watch) {
        long offset = 0;
        char tail[8] = "";
        while (!sentinel_seen(watch, &offset, tail)) {
            if (now() - published > 100) { fprintf(stderr, "meterpub: no sentinel within 100 s\n"); return 2; }
            pause_ms(1);
        }
        lag = (now() - published) * 1000;
    }
    if (stamps) fclose(stamps);
    printf("publish %.3f lag %.0f\n", published - start, lag);
    mosquitto_disconnect(client);
    mosquitto_loop_stop(client, false);
    return 0;
}
