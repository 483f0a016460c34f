import Configuration
import Delivery
import FlowCore
import FoundationEssentials
import Platform
import Rendering
import Window

extension Bridge {
    /// What the window shows, taken under the engine's lock in one go (copies of values only);
    /// the pictures and texts are drawn from it afterwards, on the window's thread.
    func windowSnapshot(at now: Date, status: ServiceStatus) -> WindowSnapshot {
        let taken = state.withLock { state in
            var counters: [String: [EnergyAccount: Double]] = [:]
            for config in state.engine.config.widgets {
                counters[config.name] = state.lifetime.counterKWh(of: config.name, today: state.engine.accountTotals(ofWidget: config.name) ?? [:])
            }
            return (
                engine: state.engine, lifetime: state.lifetime, counters: counters, histories: state.histories, zone: state.zone,
                refusals: state.lastRefusals
            )
        }
        let engine = taken.engine
        let documents = engine.currentDocuments(at: now)
        var widgets: [WindowSnapshot.Widget] = []
        for config in engine.config.widgets {
            var widget = WindowSnapshot.Widget(name: config.name, document: documents[config.name])
            let today = engine.accountTotals(ofWidget: config.name) ?? [:]
            widget.todayKWh = today
            widget.lifetimeKWh = taken.counters[config.name] ?? [:]
            widget.money = engine.money(ofWidget: config.name)
            widget.lifetimeMoney = taken.lifetime.money(of: config.name, today: widget.money)
            widget.chart = taken.histories[config.name]?.charts(title: config.shared.label ?? config.name, through: now).last
            widget.nodes = config.nodes.map { ($0.place, $0.node.name) }
            widgets.append(widget)
        }
        for config in engine.config.progressWidgets {
            widgets.append(WindowSnapshot.Widget(name: config.name, document: documents[config.name]))
        }
        let currency = engine.config.tariff?.currency.code ?? ""
        let prices = engine.priceOutlook(at: now).map {
            WindowSnapshot.Price(
                account: $0.account, pricePerKWh: $0.pricePerKWh, nextChange: $0.nextChange, nextPricePerKWh: $0.nextPricePerKWh, currencyCode: currency)
        }
        let readings = engine.readings
        let stats = engine.sourceStats
        let silent = Set(engine.silentSources)
        let sources = engine.config.sources.map { source -> WindowSnapshot.Source in
            let reading = readings[source.name]
            let freshness: WindowSnapshot.Source.Freshness
            if silent.contains(source.name) {
                freshness = .silent
            } else if let reading {
                freshness = source.staleAfterSeconds.map { now.timeIntervalSince(reading.at) >= $0 } == true ? .stale : .fresh
            } else {
                freshness = .waiting
            }
            let unit: String = switch source.unit.quantity {
            case .power: "W"
            case .energy: "kWh"
            case .level: "%"
            case .price: "\(engine.config.tariff?.currency.code ?? source.priceCurrency ?? "")/kWh"
            }
            var shown = WindowSnapshot.Source(
                name: source.name, topic: source.topic.description, unit: unit, value: reading?.value, readingAt: reading?.at, freshness: freshness,
                stats: stats[source.name])
            shown.lastError = taken.refusals[source.name].map { WindowSnapshot.Source.LastError(text: $0.shownText, at: $0.at) }
            return shown
        }
        let sinks = self.sinks.map { WindowSnapshot.Sink(name: $0.name, destination: $0.destination, health: $0.health) }
        let waitingCause: String? = if case .waiting(let cause) = status.broker { cause } else { nil }
        let broker = WindowSnapshot.Broker(
            address: status.address, connectedSince: status.connectedSince, reconnects: max(0, status.connections - 1), waitingCause: waitingCause)
        return WindowSnapshot(
            at: now, zone: taken.zone, version: Flowbridge.version, widgets: widgets, prices: prices, sources: sources, sinks: sinks, broker: broker)
    }
}

extension Refusal {
    /// Why the payload was refused, as the window shows it: printable (a payload's control
    /// characters written as escapes, `PrintableText`), and the topic it came on.
    var shownText: String {
        let why = switch reason {
        case .oversized(let bytes, let maxBytes): "a payload of \(bytes) bytes is beyond max_payload (\(maxBytes) bytes)"
        case .undecodable(let error): error.description
        case .implausible(let text): text
        case .tooManyTopics(let max): "left out of the sum, which reads at most \(max) topics"
        }
        return PrintableText.escaped("\(why) (topic \(topic))")
    }
}

/// The window as a part of the daemon: listens from its start to its stop.
struct WindowService: Service {
    let name = "window"
    let clock: Heartbeat
    let window: Window
    let log: Logger

    func run() async throws {
        let listener: HTTPListener
        do {
            listener = try HTTPListener(address: window.settings.listen, limits: window.settings.limits, respond: window.respond)
        } catch {
            throw RunFailure(status: .config, message: "http: \(error)")
        }
        let url = ListenAddress(host: window.settings.listen.host, port: listener.port)
        log.log(.info, "window at http://\(Self.reachable(url))/ (\(window.settings.whoMayLook))")
        defer { listener.stop() }
        // Slow clients: on each beat, the connections whose request is overdue are cut.
        try await clock.beating { listener.cutOverdue() }
    }

    /// The address to open: a wildcard address (0.0.0.0, ::) is reached through loopback.
    static func reachable(_ address: ListenAddress) -> ListenAddress {
        guard address.host.bytes.allSatisfy({ $0 == 0 }) else { return address }
        return ListenAddress(host: PeerAddress(text: address.host.bytes.count == 4 ? "127.0.0.1" : "::1")!, port: address.port)
    }
}
