import Configuration
import Delivery
import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto
import Persistence
import Platform
import Runtime
import Simulator

/// `flowbridge simulate`: a plausible home (solar, grid meter, battery) publishing in its devices'
/// own formats, live to a broker in accelerated time, or as a replay trace of one whole day.
struct SimulateCommand: Command {
    static let name = "simulate"
    static let abstract = "A plausible home (an OpenDTU, a Shelly Pro 3EM grid meter and a battery behind evcc), each device publishing exactly what the real one does: live to a broker in accelerated time until SIGTERM or SIGINT, or one whole day as replay trace lines."

    static let broker = Option<BrokerAddress?>(
        "--broker", placeholder: "HOST:PORT", help: "publish live to this broker", default: nil
    ) { text throws(UsageError) in
        guard let address = BrokerAddress(text) else { throw UsageError("--broker must be HOST:PORT (port 1…65535), not '\(text)'") }
        return address
    }
    static let trace = Option<String?>(
        "--trace", placeholder: "FILE", help: "write the whole day, midnight to midnight, as trace lines instead (- for standard output)")
    static let speed = SimulatedClock.speed(
        help: "simulated seconds per real second (720: a day in two minutes); with --trace, one cycle every N simulated seconds", default: 1)
    static let date = Option<CivilDate?>(
        "--date", placeholder: "YYYY-MM-DD", help: "the day to simulate (default: today, from the current time of day)", default: nil
    ) { text throws(UsageError) in
        guard let date = CivilDate(text) else { throw UsageError("--date must be a date YYYY-MM-DD, not '\(text)'") }
        return date
    }
    static let seed = Option<UInt64>(
        "--seed", placeholder: "N", help: "the weather and the household's habits: the same seed and date give the same messages", default: 1,
        shownDefault: "1"
    ) { text throws(UsageError) in
        guard let seed = UInt64(text) else { throw UsageError("--seed must be a whole number from 0 to \(UInt64.max), not '\(text)'") }
        return seed
    }
    static let days = Option<Int>(
        "--days", placeholder: "N",
        help: "with --trace, N days in a row from --date, the devices' counters carrying on from one day to the next as real ones do (1 to 3660)",
        default: 1, shownDefault: "1"
    ) { text throws(UsageError) in
        guard let days = Int(text), (1...3660).contains(days) else { throw UsageError("--days must be a whole number from 1 to 3660, not '\(text)'") }
        return days
    }
    static var options: [any OptionDeclaration] { [broker, trace, speed, SimulatedClock.origin, date, days, seed, SharedOptions.logLevel] }
    static var synopsis: String {
        let rest: [any OptionDeclaration] = [speed, SimulatedClock.origin, date, days, seed, SharedOptions.logLevel]
        return "\(broker.spec.word) | \(trace.spec.word)|-  " + rest.map(\.spec.synopsis).joined(separator: " ")
    }

    let options: Options
    let log: Logger

    init(parsing arguments: Arguments) throws(UsageError) {
        options = try Options(parsing: arguments)
        log = try arguments.log()
    }

    /// The command line, checked.
    struct Options {
        enum Output {
            case broker(host: String, port: Int)
            /// A file, or `-` for standard output.
            case trace(String)
        }

        var output: Output
        /// Simulated seconds per real second.
        var speed: Double
        /// nil: today, in the system's zone.
        var date: CivilDate?
        /// With a trace: how many days in a row.
        var days: Int
        /// Live: the instant the home starts from, its first cycle published then (default: now).
        var origin: Date?
        var seed: UInt64

        init(parsing arguments: Arguments) throws(UsageError) {
            switch (try arguments.value(SimulateCommand.broker), try arguments.value(SimulateCommand.trace)) {
            case (let address?, nil):
                output = .broker(host: address.host, port: address.port)
            case (nil, let trace?):
                output = .trace(trace)
            case (nil, nil):
                throw UsageError("simulate needs --broker HOST:PORT, or --trace FILE (- for standard output)")
            case (_?, _?):
                throw UsageError("simulate publishes to --broker or writes --trace, not both")
            }
            speed = try arguments.value(SimulateCommand.speed)
            date = try arguments.value(SimulateCommand.date)
            seed = try arguments.value(SimulateCommand.seed)
            days = try arguments.value(SimulateCommand.days)
            origin = try arguments.value(SimulatedClock.origin)
            if days > 1, case .broker = output { throw UsageError("--days goes with --trace; live, the simulation runs until it is stopped") }
            if origin != nil, case .trace = output { throw UsageError("--origin goes with --broker: a trace starts at --date's midnight") }
        }
    }

    func run() async -> ExitStatus {
        let zone = SystemTimeZone.system
        let now = options.origin ?? Date()
        switch options.output {
        case .trace(let path): return writeTrace(to: path, zone: zone, now: now)
        case .broker(let host, let port): return await publish(host: host, port: port, zone: zone, now: now)
        }
    }

    /// The whole simulated day (or `--days` days) as trace lines, from its local midnight to the
    /// last day's end: one simulation throughout, so the counters carry on across midnight.
    func writeTrace(to path: String, zone: any LocalTimeZone, now: Date) -> ExitStatus {
        var simulation = Simulation(seed: options.seed, date: options.date ?? zone.localDate(at: now), speed: options.speed, zone: zone)
        let fd = path == "-" ? 1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            StandardError.print("flowbridge: \(FileError(path))")
            return .cannotCreate
        }
        defer { if fd != 1 { close(fd) } }
        let lastDate = CivilDate(daysSinceEpoch: simulation.firstDay.date.daysSinceEpoch + options.days - 1)
        let end = zone.day(on: lastDate)?.end ?? simulation.firstDay.end
        var bytes: [UInt8] = []
        var count = 0
        var last: HomeState?
        func flush() -> Bool {
            defer { bytes.removeAll(keepingCapacity: true) }
            guard let reason = FileDescriptor.writeAll(bytes, to: fd) else { return true }
            StandardError.print("flowbridge: \(path == "-" ? "standard output" : path): \(reason)")
            return false
        }
        while true {
            let cycle = simulation.next()
            guard cycle.at < end else { break }
            for (at, message) in cycle.timedMessages {
                bytes.append(contentsOf: TraceMessage(at: at, topic: message.topic, payload: message.payload).line.utf8)
                bytes.append(0x0A)
                count += 1
            }
            last = cycle.state
            if bytes.count >= 65_536, !flush() { return .ioError }
        }
        guard flush() else { return .ioError }
        if let last {
            log.log(.info, "\(simulation.firstDay.date)\(options.days > 1 ? "..\(lastDate)" : "") (seed \(options.seed)): \(count) messages; the panels made \(JSONValue.format((last.yieldTodayWh / 100).rounded() / 10)) kWh, the battery ended at \(Int(last.socPercent.rounded())) %")
        }
        return .success
    }

    /// Publishes until SIGTERM or SIGINT, then disconnects and exits 0.
    func publish(host: String, port: Int, zone: any LocalTimeZone, now: Date) async -> ExitStatus {
        signal(SIGPIPE, SIG_IGN)
        // Before anything can take long: a signal from now on stops cleanly.
        let signals = SignalEvents([SIGTERM, SIGINT])
        let today = zone.day(containing: now)
        let secondsIntoDay = now.timeIntervalSince(today.start)
        let simulation = Simulation(
            seed: options.seed, date: options.date ?? today.date, secondsIntoDay: secondsIntoDay, speed: options.speed, zone: zone)
        let client: MQTTClient
        do {
            client = try MQTTClient(options: MQTTOptions(host: host, port: port, clientID: "flowbridge-simulate-\(getpid())"), subscriptions: [])
            try client.start()
        } catch {
            log.log(.error, "cannot start the MQTT client: \(error)")
            return .unavailable
        }
        let minutes = Int(secondsIntoDay) / 60
        let profile = simulation.home.profile
        let topics = HomeDevice.allCases.flatMap { $0.topics(profile: profile) }.joined(separator: ", ")
        let ready = "simulating \(simulation.firstDay.date) from \(minutes / 60):\(minutes % 60 < 10 ? "0" : "")\(minutes % 60) "
            + "at \(JSONValue.format(options.speed))x (seed \(options.seed)), publishing to \(host):\(port): \(topics)\n"
        let publisher = SimulationPublisher(client: client, startAt: options.origin) { [log] in log.log(.warning, $0) }
        let publishing = Task { await publisher.run(simulation) { _ = FileDescriptor.writeAll(Array(ready.utf8), to: 1) } }
        var received = signals.stream.makeAsyncIterator()
        if let signal = await received.next() { log.log(.info, "signal \(signal): stopping") }
        publishing.cancel()
        await publishing.value
        // The Shelly's last QoS 1 messages may still wait for their acknowledgement: a disconnect
        // that overtakes it resets the connection, and the broker logs a lost client, not a goodbye.
        try? await Task.sleep(for: .milliseconds(200))
        client.stop()
        signals.finish()
        return .success
    }
}
