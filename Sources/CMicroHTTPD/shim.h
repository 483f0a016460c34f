// libmicrohttpd (Debian: libmicrohttpd-dev), the embedded HTTP server of the window. Its start and
// its queries are variadic, which Swift cannot call: the few calls the window makes are spelled
// out here, with their options fixed.
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// What one listener allows: connections at once, from one address, the idle time before a
/// connection is closed, and the memory one connection may hold (its request line and headers).
struct flowbridge_mhd_limits {
    unsigned int connections;
    unsigned int per_address;
    unsigned int idle_timeout_seconds;
    size_t memory_per_connection;
};

/// Starts a listener on `address` (IPv4 or IPv6) with its own thread polling with epoll; every
/// request goes to `handler` with `context`, and each connection's start and close to `notify`
/// (the listener's deadline for slow clients keeps its table of connections with it). NULL when
/// it cannot start (the port is taken).
static inline struct MHD_Daemon *flowbridge_mhd_start(
    const struct sockaddr *address, struct flowbridge_mhd_limits limits, MHD_AccessHandlerCallback handler,
    MHD_NotifyConnectionCallback notify, void *context) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (address->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, context,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_CONNECTION_LIMIT, limits.connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.per_address,
        MHD_OPTION_CONNECTION_TIMEOUT, limits.idle_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits.memory_per_connection,
        MHD_OPTION_NOTIFY_CONNECTION, notify, context,
        MHD_OPTION_END);
}

/// The port the listener took (the one asked for, or the one the system gave for port 0); 0 when unknown.
static inline uint16_t flowbridge_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The address of the client of `connection`; NULL when unknown.
static inline const struct sockaddr *flowbridge_mhd_client(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// The socket of `connection`; -1 when unknown.
static inline int flowbridge_mhd_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}
