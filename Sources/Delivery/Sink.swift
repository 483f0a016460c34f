import FlowCore
import FoundationEssentials

/// Where pushes go: standard output, the widget HTTP API, MQTT.
///
/// The engine hands every push to every sink while it holds its own lock, so `take` must never
/// block: a sink queues the push (boundedly, see `Outbox`) and delivers on its own thread. A sink
/// that cannot keep up coalesces; a sink that fails says so in the log; neither stops ingestion,
/// ticks, state saves or signal handling, nor another sink.
public protocol Sink: AnyObject, Sendable {
    /// For log lines and the state file: `stdout`, `push:power`, `mqtt`.
    var name: String { get }
    /// Takes a push. Never blocks.
    func take(_ push: WidgetPush)
    /// Delivers what is still queued, giving up after `timeout`; returns false when something
    /// could not be delivered in time. No push is taken after it.
    @discardableResult
    func stop(timeout: Duration) -> Bool
    /// What the sink keeps across restarts (what it last delivered), written with the day's state;
    /// nil when it keeps nothing.
    var savedState: JSONValue? { get }
    /// Takes back what `savedState` gave, before the first push.
    func restore(_ saved: JSONValue)
}

extension Sink {
    public var savedState: JSONValue? { nil }
    public func restore(_ saved: JSONValue) {}
}
