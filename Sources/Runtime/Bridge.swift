import Configuration
import DayBook
import Delivery
import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto
import Persistence
import Platform
import Rendering
import Synchronization

/// The running daemon's state: the engine, the sinks its pushes go to, and when the state was last
/// saved. MQTT messages (from the client's event loop) and clock ticks (from a timer task) both come
/// here; one lock serializes them, so the engine stays a plain value.
///
/// Nothing slow happens under that lock: sinks only queue a push (`Sink.take` never blocks) and
/// deliver on their own threads, and the state file is written after the lock is released, so a
/// stuck reader, API or disk never stops ingestion, ticks or signal handling.
final class Bridge: Sendable {
    struct State {
        var engine: FlowEngine
        /// The config that runs: the last one loaded, except the settings that wait for a restart.
        var config: DaemonConfig
        var zone: any LocalTimeZone
        /// Per widget: how many pushes went out (see `WidgetPush.sequence`).
        var sequences: [String: UInt64] = [:]
        /// When the state is next worth writing.
        var saves = SavePolicy()
        /// The wall clock and the monotonic clock at the last event: a wall clock that moved
        /// differently from the monotonic one since then was stepped (NTP, a person).
        var lastEvent: ClockReading?
        /// The closed days' accounts and money, kept in the state: the window's lifetime counters.
        var lifetime = LifetimeAccounts()
        /// Per flow widget, today's pushes: the window's day chart.
        var histories: [String: PowerHistory] = [:]
        /// Closed slots and days that wait for the day book (saved with the state).
        var book = BookQueue()
        /// Whether a state on disk holds a day, so that a restart from it would close again every
        /// slot closed since (it was restored at the start, or written since). Until then the book
        /// takes nothing: a first start killed after the book took its first slots but before its
        /// first save would start the day afresh, and the slots from there to the restart would
        /// never be closed at all: a hole in the book, and slots whose energy no day row counts.
        var bookCovered = false
        /// The lines about sources that go quiet and come back.
        var silences = SilenceLog()
        /// Each source's last refused payload, and why: the window shows it.
        var lastRefusals: [String: Refusal] = [:]
    }

    /// A difference between the wall clock's and the monotonic clock's progress beyond this is a step.
    static let clockStepSeconds = 2.0

    /// Both clocks at one event, the monotonic one as the time since `monotonicBase`. Neither a
    /// tuple nor a `ContinuousClock.Instant`, whose layout only the standard library knows: with
    /// either in the state, every message's look at the state went through the runtime's generic
    /// handling of values (callgrind: some 400 instructions a message for this look alone).
    struct ClockReading {
        var wall: Date
        var monotonic: Duration
    }

    /// Where `ClockReading.monotonic` counts from.
    private let monotonicBase = ContinuousClock.now

    /// The state writer: one save at a time, a failing disk said once a minute.
    let saving = Mutex(LogThrottle())
    let state: Mutex<State>
    let sinks: [any Sink]
    /// The sinks that take the accounts (`Sink.takesAccounts`): for none, the engine hands over
    /// none (`FlowEngine.handsOverAccounts`).
    private let accountTakers: [any Sink]
    /// Whether each flow widget's pushes are kept for today's chart: only the window shows it
    /// (`windowSnapshot`), and it runs when the config that started the daemon asked for it.
    private let keepsCharts: Bool
    /// Where the state is saved; nil for a dry run, which writes nothing.
    let store: StateStore?
    let log: Logger
    /// The clock the daemon's parts read the engine's time from.
    let time: DaemonTime

    init(
        engine: FlowEngine, lifetime: LifetimeAccounts = LifetimeAccounts(), config: DaemonConfig, zone: any LocalTimeZone, sinks: [any Sink],
        store: StateStore?, book: BookQueue = BookQueue(), log: Logger, time: DaemonTime = .wall
    ) {
        accountTakers = sinks.filter(\.takesAccounts)
        keepsCharts = config.window != nil
        var state = State(engine: engine, config: config, zone: zone, book: book)
        state.engine.handsOverAccounts = !accountTakers.isEmpty
        state.lifetime = lifetime
        state.bookCovered = engine.day != nil
        Self.countClosedDay(&state)
        self.state = Mutex(state)
        self.sinks = sinks
        self.store = store
        self.log = log
        self.time = time
    }

    /// Builds the engine for `config` and restores the saved day into it, each sink's part, and
    /// what waited for the day book, and the closed days' lifetime accounts.
    static func engine(
        for config: DaemonConfig, zone: any LocalTimeZone, store: StateStore, access: StateStore.Access, configPath: String,
        sinks: [any Sink], log: Logger
    ) throws(StateFileProblem) -> (engine: FlowEngine, book: BookQueue, lifetime: LifetimeAccounts) {
        var engine = FlowEngine(config: config.flow, zone: zone)
        let saved = try store.restore(into: &engine, access: access, configPath: configPath, log: log)
        if let sinkStates = saved?["sinks"]?.objectValue {
            for sink in sinks { sinkStates[sink.name].map(sink.restore) }
        }
        return (engine, BookQueue(state: saved), saved?["lifetime"].map(LifetimeAccounts.init(json:)) ?? LifetimeAccounts())
    }

    /// The config that runs.
    var config: DaemonConfig { state.withLock { $0.config } }

    /// The sources that have sent nothing within their grace since the subscription.
    var silentSources: [String] { state.withLock { $0.engine.silentSources } }

    /// Takes a message (a wall clock that stepped since the last event is told to the engine first,
    /// so that no message is taken under a step the engine does not know of). `inBatch`: the
    /// widgets it moves are offered at `endBatch()` (the client's `caughtUp`), not now.
    func receive(_ message: MQTTMessage, at now: Date, monotonic: ContinuousClock.Instant = .now, inBatch: Bool = false) {
        state.withLock { state in
            noteClock(now, monotonic, &state)
            // Each list dispatched as it comes: joining them made a third array per message.
            dispatch(state.engine.tick(through: now), &state)
            let outputs = state.engine.receive(
                topic: message.topic, payload: message.payload, at: now,
                retained: message.retained && message.messageExpirySeconds == nil, inBatch: inBatch)
            state.saves.noteChange()
            dispatch(outputs, &state)
        }
    }

    /// Every message that had come in is taken: the widgets they moved are offered.
    func endBatch() {
        state.withLock { state in dispatch(state.engine.endBatch(), &state) }
    }

    /// The first subscription is in place: from now on a source that never reports is warned about.
    func subscribed(at now: Date) {
        state.withLock { state in dispatch(state.engine.subscribed(at: now), &state) }
    }

    /// `tick(at:monotonic:)` at one reading of the daemon's clock.
    func tick(reading: (now: Date, monotonic: ContinuousClock.Instant)) { tick(at: reading.now, monotonic: reading.monotonic) }

    /// Lets time pass: deadlines, and a save of the state when `SavePolicy` finds one due. A wall
    /// clock that stepped since the last event (against `monotonic`) is told to the engine first.
    func tick(at now: Date, monotonic: ContinuousClock.Instant = .now) {
        let snapshot = state.withLock { state -> JSONValue? in
            noteClock(now, monotonic, &state)
            let day = state.engine.day
            dispatch(state.engine.tick(through: now), &state)
            if state.engine.day != day { state.saves.noteChange() }  // midnight passed in the quiet
            guard store != nil else { return nil }
            var taken: JSONValue?
            var saves = state.saves
            let due = saves.shouldSave(at: now) {
                let snapshot = self.snapshot(of: state)
                taken = snapshot
                return SavePolicy.Anchors(of: snapshot)
            }
            state.saves = saves
            return due ? taken : nil
        }
        if let snapshot { write(snapshot, at: now, last: false) }
    }

    /// Swaps in a new engine (a reloaded config), carrying the day over through a snapshot, in the
    /// running zone. `config` becomes the running one. Returns what the restore left out or started
    /// afresh: a total the new config cannot believe (a lowered `max_power`) starts at 0, and the
    /// log must say so rather than the day silently restarting. `now` is the reload's instant: what
    /// flowed before it is priced by the tariff in force then.
    func replaceEngine(config: DaemonConfig, at now: Date) throws(StateError) -> [Diagnostic] {
        try state.withLock { state throws(StateError) in
            // What waits for the batch's end goes out first: the new engine has no clock of its
            // own until its first event, and its policies take over what this one delivered.
            dispatch(state.engine.endBatch(), &state)
            var engine = FlowEngine(config: config.flow, zone: state.zone)
            let leftOut = try engine.restore(state.engine.snapshot())
            engine.periods.carry(state.engine.periods)
            engine.adoptDeliveries(from: state.engine)
            engine.adoptPrices(from: state.engine, at: now)
            state.engine = engine
            state.config = config
            state.saves.noteReload()
            Self.countClosedDay(&state)
            return leftOut
        }
    }

    /// Writes the state now (at shutdown); false when it could not be written (a dry run writes
    /// nothing, and that is no failure).
    @discardableResult
    func flush(at now: Date) -> Bool {
        guard store != nil else { return true }
        let snapshot = state.withLock { state in
            let snapshot = self.snapshot(of: state)
            state.saves.saved(SavePolicy.Anchors(of: snapshot), at: now)
            return snapshot
        }
        return write(snapshot, at: now, last: true)
    }

    /// Compares the wall clock's progress since the last event with the monotonic clock's: a
    /// difference beyond `clockStepSeconds` is a step, which the engine takes at once. (On Linux
    /// `ContinuousClock` is CLOCK_BOOTTIME: a suspended machine's sleep passes on both, no step.)
    private func noteClock(_ now: Date, _ monotonic: ContinuousClock.Instant, _ state: inout State) {
        let reading = ClockReading(wall: now, monotonic: monotonicBase.duration(to: monotonic))
        if let last = state.lastEvent {
            let step = now.timeIntervalSince(last.wall) - (reading.monotonic - last.monotonic).seconds
            if abs(step) > Self.clockStepSeconds {
                dispatch(state.engine.clockStepped(by: step, at: now), &state)
                state.saves.noteChange()
            }
        }
        state.lastEvent = reading
    }

    /// Pushes to every sink, diagnostics to the log; a day the engine closed goes into the
    /// lifetime accounts, and each flow widget's push into its day chart, for the window.
    private func dispatch(_ outputs: [FlowEngine.Output], _ state: inout State) {
        // Most lists are empty (three a reading, the tick's, the reading's, the batch's end).
        guard !outputs.isEmpty else { return }
        // Before the outputs, so that the accounts among them know the day closed. The engine's
        // last closed day changes only with a `.closedDay` among its outputs (or with a new
        // engine, which `init` and `replaceEngine` count): looking for one spares copying the day
        // and comparing it whole with the lifetime's, twice a reading.
        if outputs.contains(where: \.isClosedDay) { Self.countClosedDay(&state) }
        for output in outputs {
            switch output {
            case .push(let widget, let at, let push):
                let sequence = Self.increment(&state.sequences[widget, default: 0])
                let item = WidgetPush(
                    widget: widget, at: at, sequence: sequence, patch: push.contentPatch, document: push.document,
                    held: push.held, isFullContent: push.isFullContent)
                for sink in sinks { sink.take(item) }
                if keepsCharts { recordChart(push, of: widget, at: at, &state) }
            case .diagnostic(let diagnostic):
                log.log(diagnostic)
            case .accounts(let widget, let at, let accounts, let money):
                let item = state.widgetAccounts(widget, at: at, accounts, money: money)
                for sink in accountTakers { sink.take(accounts: item) }
            case .sourceSilent, .sourceBack:
                if let line = state.silences.line(for: output, zone: state.zone) { log.log(line) }
            case .closedDay, .closedSlot:
                state.book.take(output, zone: state.zone)  // written by `BookWriter`
            case .refused(let refusal):
                state.lastRefusals[refusal.source] = refusal  // the log has each one's line, rate-limited
            }
        }
    }

    /// `count` plus one, into `count`: a push's sequence, counted in one look at the dictionary.
    private static func increment(_ count: inout UInt64) -> UInt64 {
        count += 1
        return count
    }

    /// The engine's last closed day into the lifetime accounts (once: `LifetimeAccounts.add`).
    private static func countClosedDay(_ state: inout State) {
        if let closed = state.engine.lastClosedDay, state.lifetime.add(closed) { state.saves.noteChange() }
    }

    /// A flow widget's push, for today's chart; the days before today are let go.
    private func recordChart(_ push: PatchPolicy.Push, of widget: String, at: Date, _ state: inout State) {
        guard case .flow(let flow) = push.document else { return }
        let zone = state.zone
        state.histories[widget, default: PowerHistory(zone: zone)].recordToday(flow, held: push.held.nodes, at: at)
    }

    /// The state file's content: the engine's day, what each sink keeps, the lifetime accounts,
    /// what waits for the book.
    private func snapshot(of state: State) -> JSONValue {
        var snapshot = state.engine.snapshot()
        let kept = sinks.compactMap { sink in sink.savedState.map { (sink.name, $0) } }
        if case .object(var members) = snapshot {
            if !kept.isEmpty { members["sinks"] = .object(Dictionary(kept, uniquingKeysWith: { first, _ in first })) }
            if state.lifetime.throughDay != nil { members["lifetime"] = state.lifetime.json }
            snapshot = .object(members)
        }
        return state.book.saved(in: snapshot)
    }

    // MARK: - The day book's queue

    /// What waits for the book, as it is now (the writer writes it outside the lock); nothing
    /// while no state on disk holds a day (`bookCovered`).
    func bookWaiting() -> BookQueue { state.withLock { $0.bookCovered ? $0.book : BookQueue() } }

    /// The writer wrote what it took: it goes, and the state is worth saving without it.
    func bookWritten(_ written: BookQueue) {
        state.withLock { state in
            state.book.written(slots: written.slots, days: written.days)
            state.saves.noteChange()
        }
    }

    /// Writes a snapshot outside the engine's lock; one write at a time. `last`: the stop's (see
    /// `StateStore.save`).
    @discardableResult
    private func write(_ snapshot: JSONValue, at now: Date, last: Bool) -> Bool {
        guard let store else { return true }
        return saving.withLock { throttle in
            do {
                try store.save(snapshot, last: last)
                throttle.clear("state")
                if snapshot["day"] != nil { state.withLock { $0.bookCovered = true } }
                return true
            } catch {
                if throttle.allows("state", at: now) {
                    log.log(.error, "cannot write the state: \(error)")
                }
                // Not written: due again (see `SavePolicy.saveFailed`).
                state.withLock { $0.saves.saveFailed() }
                return false
            }
        }
    }
}
