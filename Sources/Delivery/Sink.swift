import FlowCore
import FoundationEssentials
import Synchronization

/// Where pushes go: standard output, the widget HTTP API, MQTT.
///
/// The engine hands every push to every sink while it holds its own lock, so `take` must never
/// block: a sink queues the push (boundedly, see `Outbox`) and delivers on its own thread. A sink
/// that cannot keep up coalesces; a sink that fails says so in the log; neither stops ingestion,
/// ticks, state saves or signal handling, nor another sink.
///
/// A sink that needs more of the daemon says so here, and the daemon gives it that: the topics it
/// listens to on the broker connection, the connects, the reloads. Each has a default that needs
/// nothing.
public protocol Sink: AnyObject, Sendable {
    /// For log lines and the state file: `stdout`, `push:power`, `mqtt`.
    var name: String { get }
    /// Where its pushes go, for the log at the start: `push:power (https://…/content)`.
    var destination: String { get }
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
    /// Topic filters the sink listens to on the daemon's broker connection (Home Assistant's
    /// status): the daemon subscribes to them and gives their messages to `receive`, never to the
    /// engine.
    var subscriptions: [String] { get }
    /// A message on one of `subscriptions`; true when the sink took it as its own.
    @discardableResult
    func receive(topic: String, payload: [UInt8], retained: Bool) -> Bool
    /// The daemon's broker connection is (again) up.
    func connected()
    /// The config was reloaded: `flow` holds its widgets and nodes.
    func reconfigure(_ flow: FlowConfig)
    /// Every account of a flow widget's nodes (kWh, full resolution), with each push of it and at
    /// most a minute apart while one moves: for sinks that carry energy sensors. Never blocks.
    func take(accounts: WidgetAccounts)
    /// Whether `take(accounts:)` does anything: the daemon works the accounts out for the sinks
    /// (the lifetime's, each period's money, the local day) only when one of them does.
    var takesAccounts: Bool { get }
    /// How its deliveries went so far (the window shows it); nil for a sink that does not say.
    var health: DeliveryHealth? { get }
}

extension Sink {
    public var destination: String { name }
    public var savedState: JSONValue? { nil }
    public func restore(_ saved: JSONValue) {}
    public var subscriptions: [String] { [] }
    public func receive(topic: String, payload: [UInt8], retained: Bool) -> Bool { false }
    public func connected() {}
    public func reconfigure(_ flow: FlowConfig) {}
    /// The widget's document is all most sinks deliver.
    public func take(accounts: WidgetAccounts) {}
    public var takesAccounts: Bool { false }
    public var health: DeliveryHealth? { nil }
}

/// A sink's `DeliveryHealth`, written from its delivery thread and read from the window's.
public final class DeliveryRecord: Sendable {
    private let health = Mutex(DeliveryHealth())

    public init() {}

    public var current: DeliveryHealth { health.withLock { $0 } }

    public func record(_ result: DeliveryHealth.Result, detail: String? = nil, at: Date = Date()) {
        health.withLock { $0.record(result, detail: detail, at: at) }
    }

    public func setWaiting(_ waiting: Bool) { health.withLock { $0.waiting = waiting } }
}

/// A flow widget's accounts at an instant, as the engine counted them, and with a tariff the
/// day's money.
public struct WidgetAccounts: Sendable, Equatable {
    public var widget: String
    public var at: Date
    public var accountsKWh: FlowEngine.NodeAccounts
    /// Today's money; nil without a tariff.
    public var money: MoneyReport?
    /// The widget's accounts since the day book's first day (the closed days' and today's); nil
    /// when the daemon does not keep them (a replay).
    public var lifetimeKWh: [EnergyAccount: Double]?
    /// The money of the month and of the billing month so far (`PeriodTotals`).
    public var periodMoney: [MoneyPeriod: MoneyReport]
    /// The first instant of the local day the accounts count (nil: the money's, if any): a
    /// derived home's day sensor starts again by it.
    public var dayStart: Date?

    public init(
        widget: String, at: Date, accountsKWh: FlowEngine.NodeAccounts, money: MoneyReport? = nil, lifetimeKWh: [EnergyAccount: Double]? = nil,
        periodMoney: [MoneyPeriod: MoneyReport] = [:], dayStart: Date? = nil
    ) {
        self.widget = widget
        self.at = at
        self.accountsKWh = accountsKWh
        self.money = money
        self.lifetimeKWh = lifetimeKWh
        self.periodMoney = periodMoney
        self.dayStart = dayStart
    }

    /// The money of `period`: today's for the day.
    public func money(_ period: MoneyPeriod) -> MoneyReport? { period == .day ? money : periodMoney[period] }
}
