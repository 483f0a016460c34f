/* serf (libserf-1-1, on APR): loaded and initialized only, a context and a bucket allocator; no
 * request (its API is asynchronous buckets, more than a probe needs to show what it costs at
 * least). usage: serf */
#include "probe.h"
#include <apr_general.h>
#include <apr_pools.h>
#include <serf.h>

int main(void) {
    mosquitto_lib_init();
    if (apr_initialize() != APR_SUCCESS) return probe_fail("apr_initialize");
    apr_pool_t *pool;
    apr_pool_create(&pool, NULL);
    if (!serf_context_create(pool) || !serf_bucket_allocator_create(pool, NULL, NULL)) return probe_fail("serf");
    return probe_report();
}
