#include <curl/curl.h>
#include <dlfcn.h>
#include <openssl/crypto.h>
#include <stdlib.h>

/* libcurl is loaded when the first widget API sink starts, not with the program: libcurl and the
   thirty libraries it pulls in (GnuTLS, Kerberos, LDAP, libssh2, ...) take about 4 MB of memory
   at load, which a daemon without a widget API sink (and `check`, `replay`) does not pay. */
struct flowbridge_curl {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    CURLcode (*easy_perform)(CURL *handle);
    void (*easy_cleanup)(CURL *handle);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *line);
    void (*slist_free_all)(struct curl_slist *list);
};

/* Initializes OpenSSL (which libcurl brings, and libmosquitto too) before curl_global_init does,
   without two things this daemon does not use, which take 1 MB of libcrypto's pages for a push over
   HTTP (0.2 MB over HTTPS, whose handshake touches most of those pages anyway; bench/NOTES.md):
   - the error texts of libcrypto's modules: libcurl words the TLS failures a user meets itself
     (certificate problems, a CA file it cannot read), and libssl's own texts ("wrong version
     number") are still loaded;
   - the system's openssl.cnf, which sets nothing on Debian; OPENSSL_CONF, when set, is read.
   Whatever initializes OpenSSL first in the process decides: a TLS connection to the broker made
   before the first widget API sink starts reads openssl.cnf. Nothing happens with a libcurl built
   on another TLS library. */
static inline void flowbridge_openssl_init(void *curl) {
    int (*init_ssl)(uint64_t options, const void *settings);
    if (!(*(void **)&init_ssl = dlsym(curl, "OPENSSL_init_ssl"))) return;
    uint64_t config = getenv("OPENSSL_CONF") ? OPENSSL_INIT_LOAD_CONFIG : OPENSSL_INIT_NO_LOAD_CONFIG;
    init_ssl(OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS | config, NULL);
}

/* Loads libcurl (the OpenSSL flavour, which shares libmosquitto's OpenSSL) into `lib`. Returns
   NULL, or why it failed.
   GnuTLS comes along only for protocols flowbridge never uses (RTMP, LDAP), so its load-time
   initialization (about 0.7 MB) is switched off for the load, unless the user set the switch. */
static inline const char *flowbridge_curl_load(struct flowbridge_curl *lib) {
    int quiet_gnutls = getenv("GNUTLS_NO_IMPLICIT_INIT") == NULL;
    if (quiet_gnutls) setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 0);
    void *handle = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (quiet_gnutls) unsetenv("GNUTLS_NO_IMPLICIT_INIT");
    if (!handle) return dlerror();
    flowbridge_openssl_init(handle);
#define FLOWBRIDGE_CURL_SYMBOL(field, name) \
    if (!(*(void **)&lib->field = dlsym(handle, name))) return dlerror();
    FLOWBRIDGE_CURL_SYMBOL(global_init, "curl_global_init")
    FLOWBRIDGE_CURL_SYMBOL(easy_init, "curl_easy_init")
    FLOWBRIDGE_CURL_SYMBOL(easy_setopt, "curl_easy_setopt")
    FLOWBRIDGE_CURL_SYMBOL(easy_getinfo, "curl_easy_getinfo")
    FLOWBRIDGE_CURL_SYMBOL(easy_perform, "curl_easy_perform")
    FLOWBRIDGE_CURL_SYMBOL(easy_cleanup, "curl_easy_cleanup")
    FLOWBRIDGE_CURL_SYMBOL(easy_strerror, "curl_easy_strerror")
    FLOWBRIDGE_CURL_SYMBOL(slist_append, "curl_slist_append")
    FLOWBRIDGE_CURL_SYMBOL(slist_free_all, "curl_slist_free_all")
#undef FLOWBRIDGE_CURL_SYMBOL
    return NULL;
}

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed wrapper
   per kind of argument. */
static inline CURLcode flowbridge_curl_set_long(const struct flowbridge_curl *lib, CURL *handle, CURLoption option, long value) {
    return lib->easy_setopt(handle, option, value);
}
static inline CURLcode flowbridge_curl_set_string(const struct flowbridge_curl *lib, CURL *handle, CURLoption option, const char *value) {
    return lib->easy_setopt(handle, option, value);
}
static inline CURLcode flowbridge_curl_set_pointer(const struct flowbridge_curl *lib, CURL *handle, CURLoption option, void *value) {
    return lib->easy_setopt(handle, option, value);
}
static inline CURLcode flowbridge_curl_set_write(const struct flowbridge_curl *lib, CURL *handle, curl_write_callback callback) {
    return lib->easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode flowbridge_curl_set_progress(const struct flowbridge_curl *lib, CURL *handle, curl_xferinfo_callback callback) {
    return lib->easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}
static inline CURLcode flowbridge_curl_get_long(const struct flowbridge_curl *lib, CURL *handle, CURLINFO info, long *value) {
    return lib->easy_getinfo(handle, info, value);
}
static inline CURLcode flowbridge_curl_get_off(const struct flowbridge_curl *lib, CURL *handle, CURLINFO info, curl_off_t *value) {
    return lib->easy_getinfo(handle, info, value);
}
