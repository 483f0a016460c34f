/* libevent's HTTP client over its OpenSSL bufferevents (libevent-2.1-7, libevent-openssl-2.1-7).
 * The TLS verification is the caller's to set up: the CA, the host name, SNI.
 * usage: event HOST PORT [CA_FILE] (HTTPS with CA_FILE) */
#include "probe.h"
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/ssl.h>

static struct event_base *base;
static int status;

static void answered(struct evhttp_request *request, void *context) {
    (void)context;
    status = request ? evhttp_request_get_response_code(request) : -1;
    event_base_loopbreak(base);
}

int main(int argc, char **argv) {
    if (argc < 3) return probe_fail("usage: event HOST PORT [CA_FILE]");
    mosquitto_lib_init();
    base = event_base_new();
    struct bufferevent *connection = NULL;
    if (argc > 3) {
        SSL_CTX *context = SSL_CTX_new(TLS_client_method());
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
        if (!SSL_CTX_load_verify_locations(context, argv[3], NULL)) return probe_fail("CA_FILE");
        SSL *ssl = SSL_new(context);
        SSL_set_tlsext_host_name(ssl, argv[1]);
        SSL_set1_host(ssl, argv[1]);
        connection = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
    }
    struct evhttp_connection *http = evhttp_connection_base_bufferevent_new(base, NULL, connection, argv[1], atoi(argv[2]));
    evhttp_connection_set_timeout(http, 10);
    const enum evhttp_cmd_type methods[] = {EVHTTP_REQ_PUT, EVHTTP_REQ_PATCH};
    for (int i = 0; i < 2; i++) {
        struct evhttp_request *request = evhttp_request_new(answered, NULL);
        struct evkeyvalq *headers = evhttp_request_get_output_headers(request);
        evhttp_add_header(headers, "Host", argv[1]);
        evhttp_add_header(headers, "Authorization", "Bearer probe");
        evhttp_add_header(headers, "Content-Type", "application/merge-patch+json");
        evbuffer_add(evhttp_request_get_output_buffer(request), PROBE_BODY, strlen(PROBE_BODY));
        evhttp_make_request(http, request, methods[i], PROBE_PATH);
        event_base_dispatch(base);
        if (status != 200) return probe_fail(probe_methods[i]);
    }
    return probe_report();
}
