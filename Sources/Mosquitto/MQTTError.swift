import CMosquitto

/// Everything that can go wrong between flowbridge and the broker, each with a message a user can act on.
///
/// Thrown by `MQTTClient.init`, `start()` and `publish(...)`; the connection failures that happen later,
/// on the network thread, arrive as `MQTTEvent.disconnected(reason:)` carrying the same text
/// (and as `MQTTClient.lastError`).
public enum MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The options cannot work (bad port, unreadable TLS file, invalid topic filter, ...); caught
    /// before any network I/O. The text names the field.
    case invalidOptions(String)
    /// libmosquitto rejected a set-up call (`call`), with its own error text.
    case library(call: String, message: String)
    /// The broker answered CONNACK with a refusal: wrong username/password, not authorized,
    /// unsupported protocol version, ... `code` is the CONNACK return code (MQTT 3.1.1) or the
    /// reason code (MQTT 5). libmosquitto keeps retrying with backoff; fix the config or the broker.
    case connectionRefused(code: Int, reason: String)
    /// No usable connection to `address` (`host:port`): the TCP connect failed, the connection was
    /// lost, the broker stopped answering (keepalive), or the TLS handshake failed (the broker's
    /// certificate is not trusted, the hostname does not match, ...). `reason` says which.
    case connectionFailed(address: String, reason: String)
    /// A change of subscriptions was not sent (the connection is going down: the next connect
    /// subscribes the new list).
    case subscribeFailed(reason: String)
    /// A publish was not accepted (not connected for QoS 0, payload too large, ...).
    case publishFailed(topic: String, reason: String)
    /// `start()` was called twice, or after `stop()`.
    case notRestartable

    public var description: String {
        switch self {
        case .invalidOptions(let message): "invalid MQTT options: \(message)"
        case .library(let call, let message): "libmosquitto \(call) failed: \(message)"
        case .connectionRefused(let code, let reason): "broker refused the connection: \(reason) (code \(code))"
        case .connectionFailed(let address, let reason): "no connection to the broker: \(address): \(reason)"
        case .subscribeFailed(let reason): "subscription change not sent: \(reason)"
        case .publishFailed(let topic, let reason): "publish to '\(topic)' failed: \(reason)"
        case .notRestartable: "an MQTT client can be started once; create a new one"
        }
    }
}

extension MQTTError {
    /// Why there is no connection, in a few words for a status line ("connection refused",
    /// "refused: not authorised"): without the address, which the reader already knows.
    public var cause: String {
        switch self {
        case .connectionFailed(_, let reason): reason.sentenceInside
        case .connectionRefused(_, let reason): "refused: \(reason)"
        default: description
        }
    }
}

extension String {
    /// "Connection refused" → "connection refused", for use inside a sentence; "TLS …" stays.
    var sentenceInside: String {
        guard let first = first, first.isUppercase, dropFirst().first?.isLowercase ?? true else { return self }
        return first.lowercased() + dropFirst()
    }
}

/// The text libmosquitto gives for one of its `MOSQ_ERR_*` codes.
func mosquittoErrorText(_ code: Int32) -> String {
    String(cString: mosquitto_strerror(code))
}
