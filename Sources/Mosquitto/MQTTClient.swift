import CMosquitto
import FlowCore
import Threads
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An MQTT connection that stays up: it connects in the background, reconnects with backoff after
/// any loss, re-subscribes after every (re)connect (all topics in one SUBSCRIBE), and reports what
/// happens as `events`.
///
/// ```swift
/// let client = try MQTTClient(options: options, subscriptions: ["opendtu/+/status/#"])
/// try client.start()
/// for await event in client.events { ... }
/// client.stop(finalMessage: (topic: "flowbridge/status", payload: Array("offline".utf8), retain: true))
/// ```
///
/// One network thread (ours, running `mosquitto_loop`) owns the connection; libmosquitto's callbacks
/// copy what they need and push it into `events`, a bounded buffer that blocks that thread when the
/// consumer falls behind (by count or by bytes), so no message is dropped and memory stays bounded.
/// A consumer whose work never waits can take the events on the network thread itself instead
/// (`start(handler:)`): no thread hop per message, and the connection waits while it works.
///
/// Why not `mosquitto_loop_start`: libmosquitto 2.0.11's own thread stops retrying for good when the
/// first connect fails (broker down at boot), after a TLS failure, and after an MQTT 5 CONNACK
/// refusal (its loop treats those as fatal). A daemon must keep trying, so the retry loop is ours.
public final class MQTTClient: Sendable {
    public let options: MQTTOptions
    /// The topic filters subscribed on every connect (see `updateSubscriptions`).
    public var subscriptions: [String] { connection.subscriptions }
    /// The QoS every subscription asks for.
    public let subscriptionQoS: QoS
    private let connection: Connection

    /// Validates everything (options, topic filters) and prepares the libmosquitto handle; no
    /// network I/O yet. Throws `MQTTError.invalidOptions` naming what is wrong.
    /// - Parameters:
    ///   - bufferCapacity: events that may wait for the consumer before the network thread waits.
    ///   - bufferByteCapacity: payload bytes that may wait; one message larger than that still
    ///     passes alone, so memory stays within about twice this plus the largest message.
    public init(
        options: MQTTOptions, subscriptions: [String], qos: QoS = .atLeastOnce, bufferCapacity: Int = 1024,
        bufferByteCapacity: Int = MQTTEvents.defaultByteCapacity
    ) throws {
        try options.validate()
        for filter in subscriptions { try Topic.validateFilter(filter) }
        guard bufferCapacity >= 1 else { throw MQTTError.invalidOptions("bufferCapacity \(bufferCapacity) must be at least 1") }
        guard bufferByteCapacity >= 1 else {
            throw MQTTError.invalidOptions("bufferByteCapacity \(bufferByteCapacity) must be at least 1")
        }
        self.options = options
        self.subscriptionQoS = qos
        connection = try Connection(
            options: options, subscriptions: subscriptions, qos: qos,
            events: MQTTEvents(capacity: bufferCapacity, byteCapacity: bufferByteCapacity))
    }

    /// Stops (without a final message) if the owner forgot to, so the network thread never outlives us.
    deinit { connection.stop(finalMessage: nil) }

    /// Connection events and incoming messages, in order. Ends (`nil`) after `stop()`. Stays empty
    /// when the client was started with a handler, which takes the events instead.
    public var events: MQTTEvents { connection.events }

    /// True between a successful CONNACK and the next disconnect.
    public var isConnected: Bool { connection.isConnected }

    /// The most recent connection failure (refusal, TLS, lost connection); `nil` once connected again.
    public var lastError: MQTTError? { connection.lastError }

    /// Starts the network thread, which connects in the background. A broker that is down, refuses
    /// us or fails the TLS handshake is not an error here: it is reported as `.disconnected(reason:)`
    /// and retried with exponential backoff (`options.reconnectDelay`), forever, until `stop()`.
    /// Throws only when called twice or the thread cannot be created.
    public func start() throws { try connection.start(handler: nil) }

    /// Starts like `start()`, but hands every event (in order) to `handler` on the network thread
    /// instead of `events`. For a consumer that does its work at once and never waits: the next
    /// packet is read only once the handler returns, which is the backpressure, and a message
    /// costs no wake-up of another thread. The handler may call `publish`.
    public func start(handler: @escaping @Sendable (MQTTEvent) -> Void) throws { try connection.start(handler: handler) }

    /// Replaces the topic filters (a reloaded config): while connected, what went is unsubscribed
    /// and what came is subscribed, each in one packet; every later reconnect subscribes the new
    /// list. Filters that stay are left alone (no retained messages sent again). Throws
    /// `MQTTError.invalidOptions` for an invalid filter (nothing changes then), or
    /// `MQTTError.subscribeFailed` when the live connection did not take the change, which the
    /// next reconnect then makes.
    public func updateSubscriptions(_ filters: [String]) throws {
        for filter in filters { try Topic.validateFilter(filter) }
        try connection.updateSubscriptions(filters)
    }

    /// Hands a message to the broker connection. Thread-safe; does not wait for the network.
    /// Needs a live connection: while disconnected it throws `MQTTError.publishFailed` at any QoS
    /// (libmosquitto 2.0 does not queue for later), so a publisher keeps its latest state and sends
    /// it again on `.connected`.
    public func publish(topic: String, payload: [UInt8], qos: QoS = .atMostOnce, retain: Bool = false) throws {
        try connection.publish(topic: topic, payload: payload, qos: qos, retain: retain)
    }

    /// Orderly stop: publishes `finalMessage` (QoS 1, waiting up to 1.5 s for the broker's ack) when
    /// connected, disconnects (so the broker does NOT publish the will), joins the network thread,
    /// and finishes `events` (buffered events are still delivered, then `nil`). Blocks the caller
    /// until done: about a second at most, plus up to 1.5 s waiting for the final message's ack.
    /// Idempotent.
    public func stop(finalMessage: (topic: String, payload: [UInt8], retain: Bool)? = nil) {
        connection.stop(finalMessage: finalMessage)
    }
}

/// libmosquitto wants `mosquitto_lib_init` once per process before anything else; a global `let`
/// is initialised lazily and exactly once, from whichever thread gets there first.
private let libraryInitialized: Int32 = mosquitto_lib_init()

/// `MQTT_PROP_MESSAGE_EXPIRY_INTERVAL` from <mqtt_protocol.h>, which <mosquitto.h> 2.0 does not include.
private let messageExpiryIntervalProperty: Int32 = 2

/// `MQTT_PROP_MAXIMUM_PACKET_SIZE` from <mqtt_protocol.h>.
private let maximumPacketSizeProperty: Int32 = 39

/// `MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION`: what libmosquitto reports when a 3.1.1 broker answers an
/// MQTT 5 CONNECT with its own "unacceptable protocol version" (CONNACK 1).
private let unsupportedProtocolVersion: Int32 = 0x84

/// The first failing reason code of SUBACK and PUBACK (0x80 is 3.1.1's only SUBACK failure).
private let firstFailureCode: Int32 = 0x80

/// Published messages whose PUBACK is awaited, at most: a broker that never acknowledges cannot
/// make the table grow without bound (the oldest are forgotten, and with them a late refusal).
private let maximumAwaitedAcks = 4096

/// `SSL_VERIFY_NONE` from OpenSSL, for `mosquitto_tls_opts_set` (the default is `SSL_VERIFY_PEER`).
private let sslVerifyNone: Int32 = 0

/// How long `stop(finalMessage:)` waits for the broker to acknowledge the final message: short
/// enough that a whole stop, the network thread's join included, stays within the daemon's 2 s.
private let finalMessageTimeout = Duration.milliseconds(1500)

/// The longest the network thread sits in `select()`; bounds how late it notices `stop()` while a
/// connect is pending. Publishes and disconnects wake it at once through libmosquitto's socket pair.
private let loopTimeoutMilliseconds: Int32 = 1000

private let success = MOSQ_ERR_SUCCESS.rawValue

/// Owns the `struct mosquitto` handle; libmosquitto's callbacks find it through the userdata pointer.
///
/// A separate object from `MQTTClient` so that the client's `deinit` can stop the network thread
/// while this object (the one the callbacks point at, unretained) is still fully alive.
///
/// `@unchecked Sendable`: the one non-Sendable stored property is the `OpaquePointer` handle.
/// In threaded mode (`mosquitto_threaded_set`) libmosquitto guards publish/subscribe/disconnect with
/// its own mutexes, so those are called from any thread; connect and the loop run only on our
/// network thread; set-up and destroy run in `init`/`deinit` when no other thread uses the handle.
/// All Swift state is behind `Mutex`es, but for `messagesSinceCaughtUp`, `recentTopics` and
/// `payloads`, the network thread's own.
final class Connection: @unchecked Sendable {
    let handle: OpaquePointer
    let options: MQTTOptions
    let qos: Int32
    let events: MQTTEvents
    /// Takes the events instead of `events` when set. Written by `start` before the network thread
    /// (its only reader) exists, which orders the write before every read, and by `stop` after
    /// that thread has ended.
    private var handler: (@Sendable (MQTTEvent) -> Void)?
    /// Cleared when `stop` begins: like a finished buffer, the handler is given nothing more.
    private let handing = Atomic(true)
    /// Messages given since the last `caughtUp`. The network thread's only (`didReceive` runs in
    /// its `mosquitto_loop`).
    private var messagesSinceCaughtUp = 0
    /// The topics `didReceive` made strings of: the network thread's own, as above.
    private var recentTopics = RecentTopics()
    /// The array `didReceive` copies payloads into: the network thread's own, as above.
    private var payloads = PayloadBuffer()

    private enum Phase { case created, started(pthread_t), stopped }

    private struct State {
        /// The topic filters, in order; every connect subscribes all of them.
        var subscriptions: [String]
        var connected = false
        var lastError: MQTTError?
        /// A refused CONNACK was just reported; the disconnect libmosquitto reports next is the same failure.
        var refusalPending = false
        /// The last error libmosquitto logged: OpenSSL's reason for a failed handshake lives only there.
        var lastLoggedError: String?
        /// Message IDs acknowledged while `stop` waits for its final message.
        var collectAcks = false
        var ackedMids: [Int32] = []
        /// Set by `stop`; the network thread disconnects and ends when it sees it.
        var stopRequested = false
        /// When a CONNACK last accepted us, if it did since the last backoff: how long the broker
        /// kept that connection decides whether the backoff starts over.
        var connectedSinceBackoff: ContinuousClock.Instant?
        /// on_disconnect ran during the current connection attempt.
        var disconnectCalledBack = false
        /// The protocol of the next connect: MQTT 5 until a broker refuses it, when the options allow
        /// falling back to 3.1.1.
        var speaksV5: Bool
        /// The broker refused MQTT 5: the next connect speaks 3.1.1.
        var fallbackPending = false
        /// SUBSCRIBE packets awaiting their SUBACK, by message ID: their filters in order.
        var awaitedSubacks: [Int32: [String]] = [:]
        /// QoS 1 publishes under MQTT 5 awaiting their PUBACK, by message ID: their topics.
        var awaitedPubacks: [Int32: String] = [:]
        /// Acknowledgements that came before their sender recorded the message ID (another
        /// thread's subscribe or publish, answered within the moment between the call and the record).
        var earlySubacks: [Int32: [Int32]] = [:]
        var earlyPubackRefusals: [Int32: Int32] = [:]
    }

    /// Serialises start and stop. Never taken by callbacks.
    private let lifecycle = Mutex(Phase.created)
    /// What the callbacks update; held only briefly, never across a libmosquitto call.
    private let state: Mutex<State>
    /// Signalled at each acknowledgement `stop` waits for.
    private let acked = Wakeup()
    /// Cuts the backoff sleep short when `stop` is called. Both waits are on the monotonic clock
    /// (see `Wakeup`): a wall clock stepped back during a backoff would keep the daemon off its
    /// broker, and its readings unread, for as long as the step.
    private let wake = Wakeup()

    init(options: MQTTOptions, subscriptions: [String], qos: QoS, events: MQTTEvents) throws {
        handle = try Self.makeHandle(options)
        self.options = options
        state = Mutex(State(subscriptions: Self.unique(subscriptions), speaksV5: options.protocolVersion == .v5))
        self.qos = qos.level
        self.events = events
        // Unretained: callbacks run only on the network thread, which holds a strong reference to
        // us for as long as it runs (see `start`).
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        mosquitto_user_data_set(handle, nil)  // nothing may call back into a dying object
        mosquitto_destroy(handle)
    }

    var isConnected: Bool { state.withLock { $0.connected } }
    var subscriptions: [String] { state.withLock { $0.subscriptions } }

    /// Each filter once, in first-seen order (a filter twice in one SUBSCRIBE is a protocol error).
    private static func unique(_ filters: [String]) -> [String] {
        var seen: Set<String> = []
        return filters.filter { seen.insert($0).inserted }
    }

    func updateSubscriptions(_ filters: [String]) throws {
        let wanted = Self.unique(filters)
        // The list changes first: a connect that happens meanwhile subscribes the new one anyway
        // (a filter subscribed twice is harmless).
        let (old, connected) = state.withLock { s in
            defer { s.subscriptions = wanted }
            return (s.subscriptions, s.connected)
        }
        guard connected else { return }
        let gone = old.filter { !wanted.contains($0) }
        let came = wanted.filter { !old.contains($0) }
        if !gone.isEmpty {
            let rc = withCStrings(gone) { mosquitto_unsubscribe_multiple(handle, nil, Int32(gone.count), $0, nil) }
            if rc != success { throw MQTTError.subscribeFailed(reason: "unsubscribe: \(mosquittoErrorText(rc))") }
        }
        if !came.isEmpty {
            let rc = subscribe(came)
            if rc != success { throw MQTTError.subscribeFailed(reason: mosquittoErrorText(rc)) }
        }
    }

    /// One SUBSCRIBE packet for all `filters`: a broker sends the retained messages of each packet
    /// before it reads the next, so one packet per topic can hold a small retained value back
    /// behind a large one for seconds. Its SUBACK says, per filter, whether the broker took it.
    private func subscribe(_ filters: [String]) -> Int32 {
        var mid: Int32 = 0
        let rc = withCStrings(filters) { mosquitto_subscribe_multiple(handle, &mid, Int32(filters.count), $0, qos, 0, nil) }
        guard rc == success else { return rc }
        let early = state.withLock { s -> [Int32]? in
            if let granted = s.earlySubacks.removeValue(forKey: mid) { return granted }
            s.awaitedSubacks[mid] = filters
            return nil
        }
        if let early { reportSubscriptions(filters, granted: early) }
        return rc
    }
    var lastError: MQTTError? { state.withLock { $0.lastError } }

    // MARK: Set-up

    /// Creates and configures the handle; destroys it again if any step fails.
    private static func makeHandle(_ options: MQTTOptions) throws -> OpaquePointer {
        guard libraryInitialized == success else {
            throw MQTTError.library(call: "mosquitto_lib_init", message: mosquittoErrorText(libraryInitialized))
        }
        // Clean session: every connect re-subscribes anyway, and a meter's retained value arrives again.
        let created = options.clientID.isEmpty
            ? mosquitto_new(nil, true, nil)
            : options.clientID.withCString { mosquitto_new($0, true, nil) }
        guard let handle = created else {
            throw MQTTError.library(call: "mosquitto_new", message: String(cString: strerror(errno)))
        }
        do {
            try configure(handle, options)
            installCallbacks(handle)
            return handle
        } catch {
            mosquitto_destroy(handle)
            throw error
        }
    }

    private static func configure(_ handle: OpaquePointer, _ options: MQTTOptions) throws {
        func check(_ rc: Int32, _ call: String) throws {
            if rc != success { throw MQTTError.library(call: call, message: mosquittoErrorText(rc)) }
        }
        try speak(options.protocolVersion, handle, options)
        if let username = options.username {
            try check(withOptionalCString(options.password) { password in
                username.withCString { mosquitto_username_pw_set(handle, $0, password) }
            }, "mosquitto_username_pw_set")
        }
        if let will = options.will {
            try check(will.payload.withUnsafeBytes { payload in
                will.topic.withCString {
                    mosquitto_will_set(handle, $0, Int32(payload.count), payload.baseAddress, will.qos.level, will.retain)
                }
            }, "mosquitto_will_set")
        }
        if let tls = options.tls {
            let capath = tls.caFile == nil ? TLSOptions.systemCAPath : nil
            let rc = withOptionalCString(tls.caFile) { cafile in
                withOptionalCString(capath) { capath in
                    withOptionalCString(tls.certFile) { certfile in
                        withOptionalCString(tls.keyFile) { keyfile in
                            // An encrypted key would make OpenSSL prompt on the terminal; a callback
                            // that supplies no passphrase makes it fail at connect instead.
                            mosquitto_tls_set(handle, cafile, capath, certfile, keyfile) { _, _, _, _ in 0 }
                        }
                    }
                }
            }
            if rc != success {
                throw MQTTError.invalidOptions("TLS files rejected by libmosquitto: \(mosquittoErrorText(rc))")
            }
            if tls.insecure {
                try check(mosquitto_tls_opts_set(handle, sslVerifyNone, nil, nil), "mosquitto_tls_opts_set")
                try check(mosquitto_tls_insecure_set(handle, true), "mosquitto_tls_insecure_set")
            }
        }
        // Our own thread drives the loop: libmosquitto must lock its queues and wake the loop
        // (socket pair) when another thread publishes.
        try check(mosquitto_threaded_set(handle, true), "mosquitto_threaded_set")
    }

    /// Sets the protocol of the next connect, and under MQTT 5 CONNECT's Maximum Packet Size (from
    /// `maximumPayloadBytes`), so the broker never sends a message larger than we take: it drops
    /// one for us instead, and no byte of it reaches this process.
    ///
    /// libmosquitto 2.0 takes CONNECT properties only through `mosquitto_connect_bind_v5`, which
    /// connects blocking (a broker that does not answer would hold `stop()` for the TCP timeout).
    /// It keeps them in the handle for every later connect, `mosquitto_connect_async` included, and
    /// stores them before it checks its other arguments: so they are given here with a keepalive it
    /// refuses (1 s), which returns `MOSQ_ERR_INVAL` before any network I/O. Under 3.1.1 the same
    /// call without properties clears them (libmosquitto refuses a 3.1.1 connect that has some).
    /// See lib/connect.c in 2.0.11 to 2.0.18; `maximumPacketSizeIsSentInConnect` checks it.
    private static func speak(_ version: ProtocolVersion, _ handle: OpaquePointer, _ options: MQTTOptions) throws {
        let level = version == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        var rc = mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, level)
        if rc != success { throw MQTTError.library(call: "mosquitto_int_option(PROTOCOL_VERSION)", message: mosquittoErrorText(rc)) }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if version == .v5, let bytes = options.maximumPacketBytes {
            rc = mosquitto_property_add_int32(&properties, maximumPacketSizeProperty, UInt32(bytes))
            if rc != success { throw MQTTError.library(call: "mosquitto_property_add_int32", message: mosquittoErrorText(rc)) }
        }
        rc = mosquitto_connect_bind_v5(handle, "", 0, 1, nil, properties)
        if rc != MOSQ_ERR_INVAL.rawValue {
            throw MQTTError.library(call: "mosquitto_connect_bind_v5 (CONNECT properties)", message: mosquittoErrorText(rc))
        }
    }

    /// The C callbacks capture nothing: each finds its `Connection` through the userdata pointer.
    /// The `_v5` variants are used for both protocol versions (properties are NULL under 3.1.1).
    private static func installCallbacks(_ handle: OpaquePointer) {
        mosquitto_connect_v5_callback_set(handle) { _, userdata, code, _, _ in
            Connection.owner(userdata)?.didConnect(code: code)
        }
        mosquitto_disconnect_v5_callback_set(handle) { _, userdata, code, _ in
            Connection.owner(userdata)?.didDisconnect(code: code)
        }
        mosquitto_message_v5_callback_set(handle) { _, userdata, message, properties in
            if let message { Connection.owner(userdata)?.didReceive(message, properties: properties) }
        }
        mosquitto_publish_v5_callback_set(handle) { _, userdata, mid, reason, _ in
            Connection.owner(userdata)?.didPublish(mid: mid, reason: reason)
        }
        mosquitto_subscribe_v5_callback_set(handle) { _, userdata, mid, count, granted, _ in
            let codes = granted.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(0, count)))) } ?? []
            Connection.owner(userdata)?.didSubscribe(mid: mid, granted: codes)
        }
        mosquitto_log_callback_set(handle, logErrors)
    }

    /// Keeps what libmosquitto logs as an error. Installed only while connecting (and for the whole
    /// connection under TLS, whose OpenSSL reasons live only in the log): once a log callback is
    /// set, libmosquitto formats every line it could log with `vsnprintf` into a `malloc`ed buffer,
    /// two per message received (about 4,500 instructions a message, more than reading its payload).
    /// Over plain TCP its errors on a live connection come back as return codes.
    private static let logErrors: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = {
        _, userdata, level, text in
        if level & MOSQ_LOG_ERR != 0, let text { Connection.owner(userdata)?.didLogError(String(cString: text)) }
    }

    fileprivate static func owner(_ userdata: UnsafeMutableRawPointer?) -> Connection? {
        userdata.map { Unmanaged<Connection>.fromOpaque($0).takeUnretainedValue() }
    }

    // MARK: Lifecycle

    func start(handler: (@Sendable (MQTTEvent) -> Void)?) throws {
        try lifecycle.withLock { phase in
            guard case .created = phase else { throw MQTTError.notRestartable }
            self.handler = handler
            // The thread holds a strong reference until it ends; `stop` joins it.
            do {
                phase = .started(try NamedThread.start("mqtt network") { self.runNetworkLoop() })
            } catch {
                throw MQTTError.library(call: "pthread_create", message: "\(error)")
            }
        }
    }

    func stop(finalMessage: (topic: String, payload: [UInt8], retain: Bool)?) {
        lifecycle.withLock { phase in
            defer { phase = .stopped }
            // First: wakes a network thread blocked on a full buffer, so it can send and disconnect.
            events.finish()
            handing.store(false, ordering: .relaxed)
            guard case .started(let thread) = phase else { return }
            if let finalMessage, isConnected { publishAndWait(finalMessage) }
            let connected = state.withLock { s in
                s.stopRequested = true
                return s.connected
            }
            wake.signal()
            // Connected: the thread sits in select(); queueing DISCONNECT wakes it. Otherwise it is
            // in its backoff sleep (woken above) or a pending connect (notices within a second).
            if connected { mosquitto_disconnect(handle) }
            pthread_join(thread, nil)
            // Its only reader has ended; a handler that holds the client no longer keeps it alive.
            handler = nil
            state.withLock { $0.connected = false }
        }
    }

    private var stopRequested: Bool { state.withLock { $0.stopRequested } }

    /// The network thread: connect, run the loop until the connection ends, back off, repeat, until
    /// `stop`. Every failure is retried; libmosquitto's callbacks report what happened.
    private func runNetworkLoop() {
        var backoff = ReconnectBackoff(options)
        while !stopRequested {
            if state.withLock({ s in defer { s.fallbackPending = false }; return s.fallbackPending }) {
                // Set up once already with these options: only a broken libmosquitto fails here.
                do { try Self.speak(.v311, handle, options) } catch { report(connectionFailed("\(error)"), wasConnected: false) }
            }
            mosquitto_log_callback_set(handle, Self.logErrors)
            let rc = options.host.withCString {
                mosquitto_connect_async(handle, $0, Int32(options.port), Int32(options.keepaliveSeconds))
            }
            let connectErrno = errno
            if rc == success {
                state.withLock { $0.disconnectCalledBack = false }
                var loop = success
                var loopErrno: Int32 = 0
                while loop == success && !stopRequested {
                    // After a message, a look that does not wait: libmosquitto reads one packet
                    // per loop, so a loop that brings none is the moment the backlog is read.
                    let given = messagesSinceCaughtUp
                    loop = mosquitto_loop(handle, given > 0 ? 0 : loopTimeoutMilliseconds, 1)
                    loopErrno = errno
                    if given > 0, messagesSinceCaughtUp == given { caughtUp() }
                }
                caughtUp()
                // libmosquitto ends some attempts without calling on_disconnect (a failed TLS
                // handshake): report those here.
                if loop != success && !stopRequested && !state.withLock({ $0.disconnectCalledBack }) {
                    reportFailedAttempt(code: loop, errnoValue: loopErrno)
                }
            } else {
                // Failed before any callback could (refused, unresolvable host).
                reportFailedAttempt(code: rc, errnoValue: connectErrno)
            }
            if stopRequested { break }
            let connectedAt = state.withLock { s in defer { s.connectedSinceBackoff = nil }; return s.connectedSinceBackoff }
            let connectedFor = connectedAt.map { $0.duration(to: .now).seconds }
            let pause = Duration.milliseconds(backoff.attemptEnded(connectedForSeconds: connectedFor))
            wake.wait(until: Wakeup.now() + Wakeup.nanoseconds(pause))
        }
        // Orderly end: DISCONNECT (so the broker does not publish the will), written before we leave.
        if mosquitto_socket(handle) != -1 {
            mosquitto_disconnect(handle)
            for _ in 0..<20 where mosquitto_socket(handle) != -1 {
                _ = mosquitto_loop(handle, 100, 1)
            }
        }
    }

    private func reportFailedAttempt(code: Int32, errnoValue: Int32) {
        let detail = code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errnoValue)) : reason(code)
        let logged = state.withLock { s in
            defer { s.lastLoggedError = nil }
            return s.lastLoggedError
        }
        report(connectionFailed(detail + Self.explain(logged)), wasConnected: false)
    }

    private func connectionFailed(_ reason: String) -> MQTTError {
        .connectionFailed(address: "\(options.host):\(options.port)", reason: reason)
    }

    /// libmosquitto's text for `code`, except where it has none worth showing: its keepalive
    /// timeout is "Unknown error" in 2.0.
    private func reason(_ code: Int32) -> String {
        // libmosquitto pings after `keepalive` seconds of quiet and gives up when the next
        // `keepalive` seconds bring no answer.
        if code == MOSQ_ERR_KEEPALIVE.rawValue { return "no answer from the broker in \(options.keepaliveSeconds) s (keepalive timeout)" }
        return mosquittoErrorText(code)
    }

    /// The useful part of an error libmosquitto logged, e.g. OpenSSL's
    /// "OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed" → " (certificate verify failed)".
    private static func explain(_ logged: String?) -> String {
        guard let logged else { return "" }
        let reason = logged.ranges(of: "::").last.map { String(logged[$0.upperBound...]) } ?? logged
        return " (\(reason))"
    }

    func publish(topic: String, payload: [UInt8], qos: QoS, retain: Bool) throws {
        do {
            try Topic.validatePublish(topic, what: "topic")
        } catch {
            throw MQTTError.publishFailed(topic: topic, reason: error.description)
        }
        // The MQTT maximum; libmosquitto would say MOSQ_ERR_PAYLOAD_SIZE.
        guard payload.count <= 268_435_455 else {
            throw MQTTError.publishFailed(topic: topic, reason: "payload of \(payload.count) bytes is too large")
        }
        var mid: Int32 = 0
        let rc = rawPublish(topic: topic, payload: payload, qos: qos.level, retain: retain, mid: &mid)
        if rc != success { throw MQTTError.publishFailed(topic: topic, reason: mosquittoErrorText(rc)) }
        // Only an MQTT 5 PUBACK says whether the broker took it (3.1.1 drops a refused one silently).
        guard qos != .atMostOnce else { return }
        let early = state.withLock { s -> Int32? in
            guard s.speaksV5 else { return nil }
            if let reason = s.earlyPubackRefusals.removeValue(forKey: mid) { return reason }
            if s.awaitedPubacks.count >= maximumAwaitedAcks { s.awaitedPubacks.removeAll() }
            s.awaitedPubacks[mid] = topic
            return nil
        }
        if let early { emit(.publishRefused(topic: topic, reason: Self.refusal(early, v5: true))) }
    }

    /// A failing SUBACK or PUBACK code in words: MQTT 5's reason, or 3.1.1's one failure.
    private static func refusal(_ code: Int32, v5: Bool) -> String {
        let text = v5 ? mosquitto_reason_string(code).map { String(cString: $0) } : nil
        return "\(text?.sentenceInside ?? "refused") (reason code 0x\(String(code, radix: 16)))"
    }

    private func rawPublish(topic: String, payload: [UInt8], qos: Int32, retain: Bool, mid: UnsafeMutablePointer<Int32>?) -> Int32 {
        payload.withUnsafeBytes { bytes in
            topic.withCString { mosquitto_publish(handle, mid, $0, Int32(bytes.count), bytes.baseAddress, qos, retain) }
        }
    }

    /// Publishes at QoS 1 and waits (bounded) for the PUBACK, so a final "offline" is really stored
    /// by the broker before we disconnect.
    private func publishAndWait(_ message: (topic: String, payload: [UInt8], retain: Bool)) {
        state.withLock { $0.collectAcks = true; $0.ackedMids = [] }
        defer { state.withLock { $0.collectAcks = false; $0.ackedMids = [] } }
        var mid: Int32 = 0
        guard rawPublish(topic: message.topic, payload: message.payload, qos: QoS.atLeastOnce.level, retain: message.retain, mid: &mid) == success else { return }
        let deadline = Wakeup.now() + Wakeup.nanoseconds(finalMessageTimeout)
        while !state.withLock({ $0.ackedMids.contains(mid) }) {
            guard acked.wait(until: deadline) else { return }
        }
    }

    // MARK: Callbacks (on the network thread, from inside mosquitto_connect_async / mosquitto_loop)

    private func didConnect(code: Int32) {
        guard code == 0 else {
            let speaksV5 = state.withLock { $0.speaksV5 }
            if speaksV5, options.fallsBackToV311, code == unsupportedProtocolVersion {
                state.withLock { s in
                    s.speaksV5 = false
                    s.fallbackPending = true
                    s.awaitedPubacks = [:]
                }
                report(connectionFailed("the broker does not speak MQTT 5; connecting again with MQTT 3.1.1"), wasConnected: false, isRefusal: true)
                return
            }
            // MQTT 3.1.1 CONNACK return codes and MQTT 5 reason codes are different tables.
            let text = speaksV5 ? mosquitto_reason_string(code) : mosquitto_connack_string(code)
            report(.connectionRefused(code: Int(code), reason: text.map { String(cString: $0) } ?? "unknown reason"),
                   wasConnected: false, isRefusal: true)
            return
        }
        if options.tls == nil { mosquitto_log_callback_set(handle, nil) }
        state.withLock { s in
            s.connected = true
            s.connectedSinceBackoff = .now
            // A new session: what the last one awaited will not come.
            s.awaitedSubacks = [:]
            s.earlySubacks = [:]
            s.lastError = nil
            s.lastLoggedError = nil
        }
        // Clean session: the broker forgot our subscriptions; ask again on every connect. Sent before
        // `.connected` is visible. A failure here means the connection is already going down, and
        // the next connect subscribes again.
        let filters = state.withLock { $0.subscriptions }
        if !filters.isEmpty { _ = subscribe(filters) }
        emit(.connected)
    }

    private func didDisconnect(code: Int32) {
        let (wasConnected, skip, logged) = state.withLock { s in
            defer {
                s.connected = false
                s.refusalPending = false
                s.lastLoggedError = nil
                s.disconnectCalledBack = true
            }
            return (s.connected, s.refusalPending, s.lastLoggedError)
        }
        if skip { return }  // the refusal already said why
        if code == success {
            // Our own mosquitto_disconnect (stop); `events` is already finished then.
            if wasConnected { emit(.disconnected(reason: "disconnected by the client")) }
            return
        }
        let reason: String
        if code >= 128, let text = mosquitto_reason_string(code) {
            // MQTT 5: the broker sent DISCONNECT with a reason code (session taken over, shutting down, ...).
            reason = "broker disconnected us: \(String(cString: text))"
        } else {
            reason = self.reason(code)
        }
        report(connectionFailed(reason + Self.explain(logged)), wasConnected: wasConnected)
    }

    /// Records a failure and reports it, unless it repeats the failure already reported since the
    /// last successful connect (retries come every few seconds; one event per cause is enough).
    private func report(_ error: MQTTError, wasConnected: Bool, isRefusal: Bool = false) {
        let isNew = state.withLock { s in
            defer {
                s.lastError = error
                s.refusalPending = isRefusal
            }
            return wasConnected || s.lastError != error
        }
        if isNew { emit(.disconnected(reason: error.description)) }
    }

    private func didReceive(_ message: UnsafePointer<mosquitto_message>, properties: OpaquePointer?) {
        let m = message.pointee
        // Copy now: libmosquitto frees topic and payload when this callback returns.
        let topic = m.topic.map { recentTopics.topic($0) } ?? ""
        // Before any copy of ours: under 3.1.1 (or a broker that ignores CONNECT's limit) a huge
        // message is already in libmosquitto's memory, and must not be in ours too.
        if let limit = options.maximumPayloadBytes, Int(m.payloadlen) > limit {
            emit(.oversizedMessage(topic: topic, bytes: Int(m.payloadlen)))
            return
        }
        let payload: [UInt8] = if let bytes = m.payload, m.payloadlen > 0 {
            payloads.payload(bytes, count: Int(m.payloadlen))
        } else {
            []
        }
        var expiry: UInt32 = 0
        let hasExpiry = properties != nil
            && mosquitto_property_read_int32(properties, messageExpiryIntervalProperty, &expiry, false) != nil
        emit(.message(MQTTMessage(
            topic: topic, payload: payload, retained: m.retain, messageExpirySeconds: hasExpiry ? expiry : nil)))
        messagesSinceCaughtUp += 1
    }

    /// `caughtUp`, once after the messages given since the last one.
    private func caughtUp() {
        guard messagesSinceCaughtUp > 0 else { return }
        messagesSinceCaughtUp = 0
        emit(.caughtUp)
    }

    /// To the handler, or into the buffer (which drops it once finished).
    private func emit(_ event: MQTTEvent) {
        guard let handler else {
            events.push(event)
            return
        }
        if handing.load(ordering: .relaxed) { handler(event) }
    }

    private func didPublish(mid: Int32, reason: Int32) {
        let (wanted, refusedTopic) = state.withLock { s in
            if s.collectAcks { s.ackedMids.append(mid) }
            let topic = s.awaitedPubacks.removeValue(forKey: mid)
            if reason >= firstFailureCode, topic == nil, s.speaksV5 { s.earlyPubackRefusals[mid] = reason }
            return (s.collectAcks, reason >= firstFailureCode ? topic : nil)
        }
        if wanted { acked.signal() }
        if let refusedTopic { emit(.publishRefused(topic: refusedTopic, reason: Self.refusal(reason, v5: true))) }
    }

    private func didSubscribe(mid: Int32, granted: [Int32]) {
        let filters = state.withLock { s in
            let filters = s.awaitedSubacks.removeValue(forKey: mid)
            if filters == nil { s.earlySubacks[mid] = granted }
            return filters
        }
        if let filters { reportSubscriptions(filters, granted: granted) }
    }

    /// Says each filter the broker refused (a SUBACK code of 0x80 or more: most often its ACL),
    /// then which it took.
    private func reportSubscriptions(_ filters: [String], granted: [Int32]) {
        let v5 = state.withLock { $0.speaksV5 }
        for (filter, code) in zip(filters, granted) where code >= firstFailureCode {
            emit(.subscriptionRefused(filter: filter, reason: Self.refusal(code, v5: v5)))
        }
        emit(.subscribed(taken: zip(filters, granted).filter { $0.1 < firstFailureCode }.map(\.0)))
    }

    private func didLogError(_ text: String) {
        state.withLock { $0.lastLoggedError = text }
    }
}

/// A C array of C strings (`char *const *`) for the duration of `body`.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    let pointers = strings.map { strdup($0) }
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// `withCString` for an optional string: `nil` stays a NULL pointer.
private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
