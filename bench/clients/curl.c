/* libcurl (either flavour, by what it is linked with), set up as flowbridge sets it up.
 * usage: curl URL [CA_FILE]; with FLOWBRIDGE_OPENSSL_INIT set, OpenSSL is first initialized as
 * Sources/CCurl/shim.h does (without libcrypto's error texts and openssl.cnf). */
#include "probe.h"
#include <curl/curl.h>
#include <openssl/ssl.h>

static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data; (void)context;
    return size * count;
}

int main(int argc, char **argv) {
    if (argc < 2) return probe_fail("usage: curl URL [CA_FILE]");
    mosquitto_lib_init();
    if (getenv("FLOWBRIDGE_OPENSSL_INIT"))
        OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS | OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) return probe_fail("curl_global_init");
    CURL *handle = curl_easy_init();
    struct curl_slist *headers = curl_slist_append(NULL, "Authorization: Bearer probe");
    headers = curl_slist_append(headers, "Content-Type: application/merge-patch+json");
    curl_easy_setopt(handle, CURLOPT_URL, argv[1]);
    if (argc > 2) curl_easy_setopt(handle, CURLOPT_CAINFO, argv[2]);
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, PROBE_BODY);
    for (int i = 0; i < 2; i++) {
        curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, probe_methods[i]);
        long status = 0;
        CURLcode code = curl_easy_perform(handle);
        curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
        if (code != CURLE_OK || status != 200) return probe_fail(curl_easy_strerror(code));
    }
    return probe_report();
}
