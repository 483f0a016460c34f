import Configuration
import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto
import Platform
import Runtime
import Synchronization

/// `flowbridge record --config FILE --out day.ndjson [--duration 24h]`: every message on the
/// config's source topics written as a trace line, the format `replay` reads, so that a real day
/// can be replayed with another config (other widgets, another tariff) and compared.
///
/// It listens as `check --listen` does (`TimedListen`: the config's broker settings, credentials,
/// TLS and MQTT 5 with its fallback, the Victron keepalives; a client ID of its own and no last
/// will, so a running service is not disturbed) and writes each message as it arrives
/// (`TraceOutput`). The broker's retained copies, handed over at every subscription, are recorded
/// too, marked `"retained": true`: they are the day's first readings, and replay gives them to the
/// engine as the daemon would (shown, not integrated).
struct RecordCommand: Command {
    static let name = "record"
    static let abstract = "Writes every message on the config's source topics as a trace line, the format replay reads, until --duration has passed or SIGTERM or SIGINT comes, so that a recorded day can be replayed with another config."

    static let out = Option<String>.required(
        "--out", alias: "-o", placeholder: "FILE|-", help: "the trace to write, a new file (an existing one is refused unless --append), or - for standard output")
    static let append = Flag("--append", help: "add to FILE when it exists instead of refusing it")
    static let duration = Option<Double?>(
        "--duration", placeholder: "DURATION", help: "stop after this long (90s, 24h; 1s to 31d); without it, record until SIGTERM or SIGINT", default: nil
    ) { text throws(UsageError) in
        guard let seconds = ConfigReader.seconds(text), seconds >= 1, seconds <= longestSeconds else {
            throw UsageError("--duration needs a duration from 1s to 31d, such as 90s or 24h, found '\(text)'")
        }
        return seconds
    }
    static var options: [any OptionDeclaration] { [SharedOptions.config, out, append, duration, SharedOptions.logLevel] }

    /// A month: a longer recording is better made as several files, and `--duration` stays a
    /// number of milliseconds that fits.
    static let longestSeconds = 31 * 86_400.0
    /// How long the first connection may take. The client retries a broker that is down, so a
    /// recording would otherwise wait in silence for a broker that is not there; a broker that
    /// speaks only MQTT 3.1.1 is reached on the second attempt, about a second after the first.
    static let firstConnectionSeconds = 10.0

    let shared: SharedOptions
    /// A file, or `-` for standard output.
    let out: String
    let append: Bool
    /// nil: until a signal.
    let seconds: Double?

    init(parsing arguments: Arguments) throws(UsageError) {
        shared = try SharedOptions(parsing: arguments)
        out = try arguments.value(Self.out)
        append = arguments.isSet(Self.append)
        if append, out == "-" { throw UsageError("--append adds to a file; standard output (--out -) has none to add to") }
        seconds = try arguments.value(Self.duration)
    }

    /// Why the recording ended before its time.
    enum Stop: Sendable {
        case signal(Int32)
        case neverConnected
        case writeFailed(String)
    }

    func run() async -> ExitStatus {
        // A reader of standard output that goes away is a write that fails, said and ended on.
        signal(SIGPIPE, SIG_IGN)
        // Taken over first: a stop asked for while the recording starts is a clean stop too.
        let signals = SignalEvents([SIGTERM, SIGINT])
        defer { signals.finish() }
        guard let config = DaemonConfig.loadReporting(shared.configPath, context: ConfigContext.process(readsPushTokens: false)) else { return .config }
        let address = "\(config.mqtt.host):\(config.mqtt.port)"
        let topics = Daemon.subscriptions(of: config)
        let client: MQTTClient
        do {
            client = try MQTTClient(options: config.mqtt.options(dryRun: true), subscriptions: topics, qos: .atLeastOnce)
        } catch {
            StandardError.print("flowbridge: cannot start the MQTT client: \(error)")
            return .config
        }
        let output: TraceOutput
        do { output = try TraceOutput(path: out, appending: append) } catch {
            StandardError.print("flowbridge: \(error)")
            return .cannotCreate
        }
        if client.options.tls?.insecure == true { shared.log.log(.warning, TLSOptions.insecureWarning) }
        shared.log.log(.info, "recording \(counted(topics.count, "topic")) from \(address) to \(output.name)\(seconds.map { " for \(ListenReport.age($0))" } ?? " until SIGTERM or SIGINT")")
        let started = ContinuousClock.now
        let (outcome, stop, recorded) = await record(client: client, config: config, into: output, signals: signals)
        let elapsed = (ContinuousClock.now - started).seconds
        let connected = outcome?.connected == true
        output.finish(removing: !connected)
        guard connected else {
            StandardError.print("flowbridge: never connected to \(address)\(outcome?.lastProblem.map { ": \($0)" } ?? ""); nothing recorded")
            return .unavailable
        }
        StandardError.print("flowbridge: \(recorded.summary(seconds: elapsed, to: output.name))")
        if case .writeFailed(let reason) = stop {
            StandardError.print("flowbridge: the recording stopped: \(reason)")
            return .ioError
        }
        return .success
    }

    /// Listens until the duration is over, a signal comes, a write fails, or the first connection
    /// is not made in time: how the connection went, why it ended early, and what was written.
    private func record(
        client: MQTTClient, config: DaemonConfig, into output: TraceOutput, signals: SignalEvents
    ) async -> (TimedListen.Outcome?, Stop?, Recorded) {
        let recorder = Recorder(output: output)
        let own = OwnMessages(client: client, log: shared.log)
        let keepalives = config.keepalives
        let listen = TimedListen(client: client, seconds: seconds, log: shared.log)
        enum Ending: Sendable {
            case listened(TimedListen.Outcome)
            case stopped(Stop)
        }
        let (outcome, stop) = await withTaskGroup(of: Ending?.self) { group in
            group.addTask {
                .listened(await listen.run(
                    connected: {
                        recorder.connected()
                        own.sendKeepalives(keepalives)
                    },
                    message: recorder.take,
                    tick: { second, _ in own.sendKeepalives(keepalives, atSecond: second) }))
            }
            group.addTask {
                for await signal in signals.stream { return .stopped(.signal(signal)) }
                return nil
            }
            group.addTask {
                for await failure in recorder.failures { return .stopped(.writeFailed(failure)) }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(Self.firstConnectionSeconds))
                return Task.isCancelled || recorder.recorded.connected ? nil : .stopped(.neverConnected)
            }
            var outcome: TimedListen.Outcome?
            var stop: Stop?
            // The first ending ends the others: the listen stops its client when cancelled.
            for await ending in group {
                switch ending {
                case .listened(let heard)?:
                    outcome = heard
                case .stopped(let reason)?:
                    if stop == nil { stop = reason }
                case nil:
                    continue
                }
                group.cancelAll()
            }
            return (outcome, stop)
        }
        if case .signal(let number) = stop { shared.log.log(.info, "signal \(number): stopping") }
        return (outcome, stop, recorder.recorded)
    }
}

/// What the listen (its messages, its connections) and the watch of the recording's end share:
/// the trace being written, what it holds so far, and its first failed write.
final class Recorder: Sendable {
    let output: TraceOutput
    private let state = Mutex(Recorded())
    /// The first failed write, with its reason: the recording ends on it.
    let failures: AsyncStream<String>
    private let failed: AsyncStream<String>.Continuation

    init(output: TraceOutput) {
        self.output = output
        (failures, failed) = AsyncStream<String>.makeStream()
    }

    deinit { failed.finish() }

    var recorded: Recorded { state.withLock { $0 } }

    func connected() { state.withLock { $0.connected = true } }

    /// Writes `message`, received at `time`, as a trace line. It is marked retained as the engine
    /// would be told: an MQTT 5 expiry vouches for a retained copy's age.
    func take(_ message: MQTTMessage, at time: Date) {
        let trace = TraceMessage(
            at: time, topic: message.topic, payload: message.payload, retained: message.retained && message.messageExpirySeconds == nil)
        let failure = state.withLock { recorded -> String? in
            guard recorded.failure == nil else { return nil }
            do throws(TraceOutput.Failure) {
                recorded.bytes += try output.write(trace)
            } catch {
                recorded.failure = error.description
                return error.description
            }
            recorded.messages += 1
            if trace.retained { recorded.retained += 1 }
            recorded.topics.insert(trace.topic)
            return nil
        }
        if let failure { failed.yield(failure) }
    }
}

/// What a recording has written so far, for its summary.
struct Recorded: Sendable {
    var messages = 0
    var retained = 0
    var bytes = 0
    var topics: Set<String> = []
    /// The broker was reached at least once.
    var connected = false
    /// Why the last write failed; nothing is written after it.
    var failure: String?

    /// `recorded 1234 messages (6 retained) on 7 topics in 24 h: 163210 bytes to day.ndjson`.
    func summary(seconds: Double, to name: String) -> String {
        let retainedText = retained > 0 ? " (\(retained) retained)" : ""
        return "recorded \(counted(messages, "message"))\(retainedText) on \(counted(topics.count, "topic")) in \(ListenReport.age(seconds)): \(counted(bytes, "byte")) to \(name)"
    }
}
