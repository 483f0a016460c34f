/* What the HTTP client probes share (bench/clients/run.sh): the memory report and the request.
 * Each probe links libmosquitto, as flowbridge does (so OpenSSL is loaded before the client),
 * initializes one HTTP client library, sends a PUT and a PATCH with headers over one kept-alive
 * connection (HTTPS: the server's certificate verified against CA_FILE) and prints one line:
 *   RSS <kB> PSS <kB> USS <kB>
 * from /proc/self/smaps_rollup. */
#define _GNU_SOURCE
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_BODY "{\"exchange\":{\"rate\":1234}}"
#define PROBE_PATH "/widgets/probe"

static const char *const probe_methods[] = {"PUT", "PATCH"};

static int probe_report(void) {
    FILE *file = fopen("/proc/self/smaps_rollup", "r");
    if (!file) return 1;
    char line[256];
    long rss = 0, pss = 0, clean = 0, dirty = 0;
    while (fgets(line, sizeof line, file)) {
        sscanf(line, "Rss: %ld", &rss);
        sscanf(line, "Pss: %ld", &pss);
        sscanf(line, "Private_Clean: %ld", &clean);
        sscanf(line, "Private_Dirty: %ld", &dirty);
    }
    fclose(file);
    printf("RSS %ld PSS %ld USS %ld\n", rss, pss, clean + dirty);
    return 0;
}

static int probe_fail(const char *what) {
    fprintf(stderr, "probe failed: %s\n", what);
    return 1;
}
