/* neon (libneon27, the OpenSSL flavour). usage: neon HOST PORT [CA_FILE] (HTTPS with CA_FILE) */
#include "probe.h"
#include <neon/ne_request.h>
#include <neon/ne_session.h>
#include <neon/ne_socket.h>
#include <neon/ne_ssl.h>

int main(int argc, char **argv) {
    if (argc < 3) return probe_fail("usage: neon HOST PORT [CA_FILE]");
    mosquitto_lib_init();
    if (ne_sock_init()) return probe_fail("ne_sock_init");
    ne_session *session = ne_session_create(argc > 3 ? "https" : "http", argv[1], atoi(argv[2]));
    if (argc > 3) {
        ne_ssl_certificate *ca = ne_ssl_cert_read(argv[3]);
        if (!ca) return probe_fail("ne_ssl_cert_read");
        ne_ssl_trust_cert(session, ca);
    }
    ne_set_connect_timeout(session, 5);
    ne_set_read_timeout(session, 10);
    for (int i = 0; i < 2; i++) {
        ne_request *request = ne_request_create(session, probe_methods[i], PROBE_PATH);
        ne_add_request_header(request, "Authorization", "Bearer probe");
        ne_add_request_header(request, "Content-Type", "application/merge-patch+json");
        ne_set_request_body_buffer(request, PROBE_BODY, strlen(PROBE_BODY));
        if (ne_request_dispatch(request) || ne_get_status(request)->code != 200) return probe_fail(ne_get_error(session));
        ne_request_destroy(request);
    }
    return probe_report();
}
