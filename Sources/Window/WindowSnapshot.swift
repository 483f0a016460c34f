import FlowCore
import FoundationEssentials
import Rendering

/// What the daemon knows at one instant, as the window shows it: taken at once (under the
/// daemon's lock) for each request, then drawn as a page, metrics or JSON with no lock held.
public struct WindowSnapshot: Sendable {
    /// A widget: its document now, and for a flow widget its accounts, money and day chart.
    public struct Widget: Sendable {
        public var name: String
        public var document: ShownDocument?
        /// Today's accounts (kWh), summed by direction; nil for a progress widget.
        public var todayKWh: [EnergyAccount: Double]?
        /// The closed days' and today's (kWh): the lifetime counters.
        public var lifetimeKWh: [EnergyAccount: Double] = [:]
        public var money: MoneyReport?
        public var lifetimeMoney: LifetimeAccounts.Money?
        /// Today's power, as the widget was pushed.
        public var chart: DayChart?
        /// A flow widget's nodes as the config has them, by place and name: what `/metrics` finds
        /// and labels each node's power by, the same series whatever the document leaves out.
        public var nodes: [(place: NodePlace, name: String?)] = []

        public init(name: String, document: ShownDocument?) {
            self.name = name
            self.document = document
        }
    }

    /// A price in force, when it next changes and to what, per direction.
    public struct Price: Sendable {
        public var account: EnergyAccount
        public var pricePerKWh: Double?
        public var nextChange: Date?
        /// The price from `nextChange` on; nil when unknown (a schedule that runs out there).
        public var nextPricePerKWh: Double?
        public var currencyCode: String

        public init(account: EnergyAccount, pricePerKWh: Double?, nextChange: Date?, nextPricePerKWh: Double? = nil, currencyCode: String) {
            self.account = account
            self.pricePerKWh = pricePerKWh
            self.nextChange = nextChange
            self.nextPricePerKWh = nextPricePerKWh
            self.currencyCode = currencyCode
        }
    }

    /// A source's health.
    public struct Source: Sendable {
        public enum Freshness: String, Sendable {
            /// Nothing yet, within its grace.
            case waiting
            case fresh
            /// Its last reading is older than `stale_after`.
            case stale
            /// Nothing at all since the subscription, past its grace: a typo in a topic.
            case silent
        }

        public var name: String
        public var topic: String
        /// `W`, `kWh`, `%`: the unit of `value`.
        public var unit: String
        public var value: Double?
        public var readingAt: Date?
        public var freshness: Freshness
        /// What it received so far; nil before anything.
        public var stats: FlowEngine.SourceStats?
        /// Its last refused payload: why, and when.
        public var lastError: LastError?

        public struct LastError: Sendable, Equatable {
            /// Printable already (`PrintableText`); the page escapes it for HTML too.
            public var text: String
            public var at: Date

            public init(text: String, at: Date) {
                self.text = text
                self.at = at
            }
        }

        public init(name: String, topic: String, unit: String, value: Double?, readingAt: Date?, freshness: Freshness, stats: FlowEngine.SourceStats?) {
            self.name = name
            self.topic = topic
            self.unit = unit
            self.value = value
            self.readingAt = readingAt
            self.freshness = freshness
            self.stats = stats
        }

        /// Decoding problems: payloads refused, beyond `max_payload`, or without the field.
        public var rejected: Int { (stats?.rejected ?? 0) + (stats?.oversized ?? 0) }
        public var readings: Int { stats?.readings ?? 0 }
        public var noReading: Int { stats?.noReading ?? 0 }
    }

    public struct Sink: Sendable {
        public var name: String
        public var destination: String
        public var health: DeliveryHealth?

        public init(name: String, destination: String, health: DeliveryHealth?) {
            self.name = name
            self.destination = destination
            self.health = health
        }
    }

    public struct Broker: Sendable {
        public var address: String
        public var connectedSince: Date?
        /// Connections after the first.
        public var reconnects: Int
        /// Why it is not connected, when it is not.
        public var waitingCause: String?

        public init(address: String, connectedSince: Date?, reconnects: Int, waitingCause: String?) {
            self.address = address
            self.connectedSince = connectedSince
            self.reconnects = reconnects
            self.waitingCause = waitingCause
        }
    }

    public var at: Date
    public var zone: any LocalTimeZone
    public var version: String
    public var widgets: [Widget]
    public var prices: [Price]
    public var sources: [Source]
    public var sinks: [Sink]
    public var broker: Broker
    /// The day book's last days and the months of the year, once there is a book.
    public var periods: PeriodRows?

    public init(
        at: Date, zone: any LocalTimeZone, version: String, widgets: [Widget], prices: [Price], sources: [Source], sinks: [Sink], broker: Broker,
        periods: PeriodRows? = nil
    ) {
        self.at = at
        self.zone = zone
        self.version = version
        self.widgets = widgets
        self.prices = prices
        self.sources = sources
        self.sinks = sinks
        self.broker = broker
        self.periods = periods
    }

    /// The local time of `instant`, `2026-12-06 14:05:09`.
    func localText(_ instant: Date) -> String {
        let text = RFC3339.format(instant, utcOffsetSeconds: zone.utcOffsetSeconds(at: instant))
        return String(text.prefix(19)).replacing("T", with: " ")
    }

    /// Seconds from `instant` to the snapshot's time.
    func age(of instant: Date) -> Double { max(0, at.timeIntervalSince(instant)) }
}

/// The day book's periods as the window shows them: one row per day of the last 30 and per month
/// of the year, each account's energy and the money. The book fills it.
public struct PeriodRows: Sendable, Equatable {
    public struct Row: Sendable, Equatable {
        /// `2026-12-05`, `2026-11`.
        public var period: String
        public var accountsKWh: [EnergyAccount: Double]
        public var netCost: Double?

        public init(period: String, accountsKWh: [EnergyAccount: Double], netCost: Double? = nil) {
            self.period = period
            self.accountsKWh = accountsKWh
            self.netCost = netCost
        }
    }

    public var days: [Row]
    public var months: [Row]
    public var currencyCode: String?

    public init(days: [Row], months: [Row], currencyCode: String? = nil) {
        self.days = days
        self.months = months
        self.currencyCode = currencyCode
    }
}

/// What reads the day book for the window: its last 30 days and the months of the year up to
/// `now`. Called on the window's thread, never under the daemon's lock.
public protocol PeriodSource: Sendable {
    func periods(through now: Date, zone: any LocalTimeZone) -> PeriodRows?
}
