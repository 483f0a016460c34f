import Configuration
import DayBook
import Delivery
import FlowCore
import FoundationEssentials
import Persistence
import Platform
import Runtime

/// One recorded MQTT message: `{"t": "<RFC 3339>", "topic": "...", "payload": "<text>"}`, or
/// `"payload_b64"` for bytes that are not text; `"retained": true` for the broker's stored copy
/// that `record` was handed at its subscription (absent, as in every trace written before
/// `record` existed: a live publish).
public struct TraceMessage: Sendable, Equatable {
    public var at: Date
    public var topic: String
    public var payload: [UInt8]
    /// The broker's retained copy, of unknown age: replay gives it to the engine as such, so it
    /// shows without being integrated, as it would live.
    public var retained: Bool

    public init(at: Date, topic: String, payload: [UInt8], retained: Bool = false) {
        self.at = at
        self.topic = topic
        self.payload = payload
        self.retained = retained
    }

    /// Reads one trace line; the error says what is wrong with it.
    public init(line: [UInt8]) throws(TraceError) {
        let json: JSONValue
        do { json = try JSONValue(parsing: line) } catch { throw TraceError(reason: "not JSON (\(error))") }
        guard case .object = json else { throw TraceError(reason: "not a JSON object") }
        guard let text = json["t"]?.stringValue else { throw TraceError(reason: "no \"t\" time") }
        guard let at = RFC3339.parse(text) else { throw TraceError(reason: "\"t\" is not an RFC 3339 time: \(text)") }
        guard let topic = json["topic"]?.stringValue, !topic.isEmpty else { throw TraceError(reason: "no \"topic\"") }
        let retained: Bool
        switch json["retained"] {
        case nil: retained = false
        case .bool(let flag)?: retained = flag
        case let other?: throw TraceError(reason: "\"retained\" is not true or false: \(other)")
        }
        if let payload = json["payload"]?.stringValue {
            self.init(at: at, topic: topic, payload: Array(payload.utf8), retained: retained)
        } else if let encoded = json["payload_b64"]?.stringValue {
            guard let bytes = Data(base64Encoded: encoded) else { throw TraceError(reason: "\"payload_b64\" is not base64") }
            self.init(at: at, topic: topic, payload: Array(bytes), retained: retained)
        } else {
            throw TraceError(reason: "no \"payload\" or \"payload_b64\" text")
        }
    }

    /// The trace line for this message.
    public var line: String {
        let payloadMember: (String, JSONValue) = if let text = String(validating: payload, as: UTF8.self) {
            ("payload", .string(text))
        } else {
            ("payload_b64", .string(Data(payload).base64EncodedString()))
        }
        var members: [String: JSONValue] = ["t": .string(RFC3339.format(at)), "topic": .string(topic), payloadMember.0: payloadMember.1]
        // Only when set: a live message's line is the same as before the member existed.
        if retained { members["retained"] = .bool(true) }
        return JSONValue.object(members).description
    }
}

public struct TraceError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// Drives an engine through recorded messages, with the messages' times as the clock: the same
/// trace always gives the same bytes. Between two messages it ticks the engine at every deadline
/// that falls between them, so trailing pushes, staleness and midnight happen when they would live.
public struct Replay {
    public private(set) var engine: FlowEngine
    let zone: any LocalTimeZone
    /// The longest `settle` and `min_interval` of the widgets: after the last message, replay runs
    /// that much further so the settled and the trailing push of the latest state are not lost.
    let drainSeconds: Double

    public init(config: FlowConfig, zone: any LocalTimeZone) {
        engine = FlowEngine(config: config, zone: zone)
        self.zone = zone
        let policies = config.widgets.map(\.policy) + config.progressWidgets.map(\.policy)
        drainSeconds = policies.map { $0.settleSeconds + $0.minIntervalSeconds }.max() ?? 0
    }

    /// Restores the saved day before the first message; throws when the file is not a state to use.
    /// Returns what waited in it for the day book.
    @discardableResult
    public mutating func restore(from store: StateStore, configPath: String? = nil, log: Logger) throws(StateFileProblem) -> BookQueue {
        BookQueue(state: try store.restore(into: &engine, configPath: configPath, log: log))
    }

    /// Feeds one message; returns every output, in order. The first message's time stands for the
    /// subscription (silent sources are counted from it).
    public mutating func feed(_ message: TraceMessage) -> [FlowEngine.Output] {
        let subscribed = engine.subscribedAt == nil ? engine.subscribed(at: message.at) : []
        return subscribed + engine.tick(through: message.at)
            + engine.receive(topic: message.topic, payload: message.payload, at: message.at, retained: message.retained)
    }

    /// After the last message: runs the deadlines of the next `drainSeconds`.
    public mutating func finish() -> [FlowEngine.Output] {
        guard let clock = engine.clock else { return [] }
        return engine.tick(through: clock.addingTimeInterval(drainSeconds))
    }

    /// `{"patch": {"content": …}, "t": "...", "widget": "power"}`, time in the configured zone.
    public func pushLine(widget: String, at: Date, patch: JSONValue) -> String {
        var bytes: [UInt8] = []
        PushLine.write(widget: widget, at: at, patch: ContentPatch(patch), zone: zone, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `{"widget": "power", "content": {…}}` for every widget that was pushed, in config order.
    public func finalLines() -> [String] {
        let delivered = engine.deliveredContent
        return engine.config.widgetNames.compactMap { widget in
            delivered[widget].map { JSONValue.object(["widget": .string(widget), "content": $0]).description }
        }
    }

    /// `{"widget": "power", "accounts": {"import": 12.0371…, …}}` for every flow widget, in config
    /// order: each account of the day so far in kWh at full resolution, so that a recorded day can
    /// be checked account by account.
    public func accountLines() -> [String] {
        engine.config.widgets.compactMap { widget in
            engine.accountTotals(ofWidget: widget.name).map {
                JSONValue.object(["widget": .string(widget.name), "accounts": EnergyAccount.json($0)]).description
            }
        }
    }

    /// `{"widget": "power", "money": {"import_cost": 1.23…, "net_cost": …}}` for every flow widget
    /// a tariff prices, in config order: the day's money so far at full resolution, the standing
    /// charge accrued up to the last message.
    public func moneyLines() -> [String] {
        engine.config.widgets.compactMap { widget in
            engine.money(ofWidget: widget.name).map { JSONValue.object(["widget": .string(widget.name), "money": $0.json]).description }
        }
    }
}
