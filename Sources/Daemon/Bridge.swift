import FlowCore
import FoundationEssentials
import Glibc
import Mosquitto
import Synchronization

/// The running daemon's state: the engine, where its pushes go, and when the state was last saved.
/// MQTT messages (from the client's event loop) and clock ticks (from a timer task) both come here;
/// one lock serializes them, so the engine stays a plain value.
final class Bridge: Sendable {
    struct State {
        var engine: FlowEngine
        var zone: any LocalTimeZone
        var output = OutputBuffer()
        var lastSave: Date?
        var dirty = false
        /// When a failed save was last logged: a full disk is said once a minute, not every second.
        var lastSaveError: Date?
        /// Whether a failing standard output was reported (once is enough: its reader is gone).
        var outputFailureLogged = false
    }

    let state: Mutex<State>
    let store: StateStore
    let log: Logger

    init(engine: FlowEngine, zone: any LocalTimeZone, store: StateStore, log: Logger) {
        state = Mutex(State(engine: engine, zone: zone))
        self.store = store
        self.log = log
    }

    /// Builds the engine for `config` and restores the saved day into it.
    static func engine(for config: DaemonConfig, zone: any LocalTimeZone, store: StateStore, log: Logger) -> FlowEngine {
        var engine = FlowEngine(config: config.flow, zone: zone)
        store.restore(into: &engine, log: log)
        return engine
    }

    /// Takes a message; `flush` writes the pushes out now (the end of a burst of messages).
    func receive(_ message: MQTTMessage, at now: Date, flush: Bool) {
        state.withLock { state in
            let outputs = state.engine.tick(through: now)
                + state.engine.receive(
                    topic: message.topic, payload: message.payload, at: now,
                    retained: message.retained && message.messageExpirySeconds == nil)
            state.dirty = true
            state.output.write(outputs, zone: state.zone, log: log)
            if flush { self.flush(&state.output, logged: &state.outputFailureLogged) }
        }
    }

    /// Lets time pass: deadlines, and a save of the state at most every `saveInterval`.
    func tick(at now: Date, saveInterval: Double = 5) {
        state.withLock { state in
            state.output.write(state.engine.tick(through: now), zone: state.zone, log: log)
            flush(&state.output, logged: &state.outputFailureLogged)
            if state.dirty, state.lastSave.map({ now.timeIntervalSince($0) >= saveInterval || now < $0 }) ?? true {
                save(&state, at: now)
            }
        }
    }

    /// Swaps in a new engine (a reloaded config), carrying the day over through a snapshot.
    func replaceEngine(config: DaemonConfig, zone: any LocalTimeZone) throws(StateError) {
        try state.withLock { state throws(StateError) in
            var engine = FlowEngine(config: config.flow, zone: zone)
            try engine.restore(state.engine.snapshot())
            engine.adoptDeliveries(from: state.engine)
            state.engine = engine
            state.zone = zone
        }
    }

    /// Writes the state now (at shutdown); false when it could not be written.
    @discardableResult
    func flush(at now: Date) -> Bool {
        state.withLock { state in
            state.output.flush()
            return save(&state, at: now)
        }
    }

    /// Writes the pushes out; says once when standard output stopped taking them.
    private func flush(_ output: inout OutputBuffer, logged: inout Bool) {
        output.flush()
        if let failure = output.failure, !logged {
            log.log(.error, "standard output does not take the pushes any more (\(failure)); they are lost until a restart")
            logged = true
        }
    }

    @discardableResult
    private func save(_ state: inout State, at now: Date) -> Bool {
        do {
            try store.save(state.engine.snapshot())
            state.lastSave = now
            state.dirty = false
            state.lastSaveError = nil
            return true
        } catch {
            if state.lastSaveError.map({ now.timeIntervalSince($0) >= 60 || now < $0 }) ?? true {
                log.log(.error, "cannot write the state: \(error)")
                state.lastSaveError = now
            }
            return false
        }
    }
}
