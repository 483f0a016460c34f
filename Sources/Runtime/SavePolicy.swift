import FlowCore
import FoundationEssentials

/// When the state is worth writing. Every save is a sync (the fdatasync of the older of the
/// state's two copies, see `StateFileWriter`): on an SD card that is wear, so the state is written
/// when losing it would cost something, not whenever a reading came.
///
/// What a save protects, and so when it is due (for the totals the widgets show and for every
/// account alike: the accounts are the day's energy too, and its money is priced from them):
/// - **At once:** what cannot be rebuilt from the next readings: a new day (the totals restart),
///   a counter's baseline and what it carries (the first reading of the day, a reset or a
///   restart at sunrise found as a drop, a recount), a reload, and the stop (`Bridge.flush`).
/// - **Within a minute:** an integrated energy that moved (a total the daemon integrates, or an
///   account no counter gives: the derived home's consumption, a battery's charge): the only
///   energy a power cut can lose. A save is due at the tick a minute after the last save (the
///   ticks come a second apart), so a power cut loses at most what was integrated in the minute
///   before it, and in the milliseconds a tick may come late.
/// - **Within ten minutes:** everything else that changed: a counter's latest reading (rebuilt
///   exactly from the device's next reading on the restored baseline, so only its display
///   waits), the last readings and what the sinks keep.
///
/// A home whose every total and account comes from a counter thus saves every ten minutes (and
/// at sunrise and midnight); one that integrates anything (every flow widget whose home is
/// derived: its consumption) saves once a minute while power flows: 1,440 saves and as many syncs
/// a day, and those due at once besides, a few (it was every 5 s: 17,280 saves, 34,560 fsyncs).
/// Saving less often than that would break the minute's bound, and a threshold on energy (save
/// when a total moved by 0.01 kWh) would save *more* often the more power flows (every 12 s at
/// 3 kW) and buy nothing a minute's bound does not already give.
///
/// A pure state machine: the Bridge tells it what happened and asks at every tick.
struct SavePolicy: Sendable {
    /// What decides how soon a save is due: the day and every counter's baseline (at once), and
    /// the integrated energy (within a minute), of the totals the widgets show and of every
    /// account (each direction of each node, which the day's money is priced from).
    struct Anchors: Equatable, Sendable {
        var day: String?
        /// Per total (`widget/place`): the counter's bookkeeping that its next reading does not
        /// restore. Integrating totals have none.
        var baselines: [String: JSONValue]
        /// Per integrating total: its energy so far (kWh).
        var integratedKWh: [String: Double] = [:]
        /// The same per account (`widget/place/account`): a home whose totals come from counters
        /// still integrates the directions it has no counter for (the derived home's consumption,
        /// the battery's charge and discharge), and those lose energy like an integrated total.
        var accountBaselines: [String: JSONValue] = [:]
        var integratedAccountKWh: [String: Double] = [:]
        /// Per price source's timeline (`imported`, `exported`): the prices the stretches still to
        /// be priced reach, each `[from, price]`, and a schedule's slots. A new price or schedule, and an old one no stretch reaches
        /// any more, are saved at once: after a restart the pending stretch (a counter's rise read
        /// after it) is priced from the state, and a price missing there prices it wrong.
        var prices: [String: JSONValue] = [:]
        /// Per timeline: until when its latest price holds (its last confirmation and the source's
        /// `stale_after`).
        var priceHolds: [String: PriceHold] = [:]

        struct PriceHold: Equatable, Sendable {
            var until: Double
            var seconds: Double
        }

        /// The counter fields that cannot be rebuilt: `last` and `counter_t` are the latest reading,
        /// and `kwh` follows from them; the baseline, the carried energy and a pending or assumed
        /// reset decide what every later reading means.
        static let baselineKeys = ["baseline", "carried", "suspect", "assumed_from"]

        /// The anchors of an engine snapshot (`FlowEngine.snapshot()`).
        init(of snapshot: JSONValue) {
            day = snapshot["day"]?.stringValue
            (baselines, integratedKWh) = Self.energies(snapshot["totals"])
            (accountBaselines, integratedAccountKWh) = Self.energies(snapshot["accounts"])
            for (side, timeline) in snapshot["prices"]?.objectValue ?? [:] {
                // Each point is `[from, heard, price]`: the confirmations (`heard`) are not news.
                let points = (timeline["points"]?.arrayValue ?? []).compactMap { $0.arrayValue }.filter { $0.count == 3 }
                prices[side] = .array(points.map { .array([$0[0], $0[2]]) } + [timeline["slots"] ?? .null])
                if let heard = points.last?[1].numberValue, let hold = timeline["hold"]?.numberValue {
                    priceHolds[side] = PriceHold(until: heard + hold, seconds: hold)
                }
            }
        }

        /// A snapshot's `totals` or `accounts`: the counters' baselines, and the integrated energies.
        static func energies(_ section: JSONValue?) -> (baselines: [String: JSONValue], integratedKWh: [String: Double]) {
            var baselines: [String: JSONValue] = [:]
            var integratedKWh: [String: Double] = [:]
            for (name, total) in section?.objectValue ?? [:] {
                // A derived home's day (`balance`) follows the others' and is rebuilt with them.
                guard let members = total.objectValue, members["balance"] == nil else { continue }
                let kept = members.filter { Self.baselineKeys.contains($0.key) }
                if !kept.isEmpty {
                    baselines[name] = .object(kept)
                } else if let kWh = members["kwh"]?.numberValue {
                    integratedKWh[name] = kWh
                }
            }
            return (baselines, integratedKWh)
        }

        /// Whether the day, a baseline or the prices differ: a save due at once.
        func moved(from saved: Anchors?) -> Bool {
            day != saved?.day || baselines != saved?.baselines || accountBaselines != saved?.accountBaselines || prices != saved?.prices
        }

        /// Whether a price source confirmed its price (the feed repeating it) while the saved
        /// confirmation runs out soon: within half the source's `stale_after`, or within the ten
        /// minutes any change may wait. A restart then still finds the price the feed kept in
        /// force, until the feed's next word (a feed that repeats its price at least twice per
        /// `stale_after` never leaves a restart without it), at a save per half `stale_after`.
        func priceHoldRunsOut(from saved: Anchors?, at now: Date) -> Bool {
            priceHolds.contains { side, hold in
                guard let savedHold = saved?.priceHolds[side], hold.until > savedHold.until else { return false }
                return savedHold.until - now.timeIntervalSince1970 <= min(SavePolicy.maxUnsavedRestSeconds, hold.seconds / 2)
            }
        }

        /// Whether an integrated energy differs: a save due within a minute.
        func integrated(from saved: Anchors?) -> Bool {
            integratedKWh != saved?.integratedKWh || integratedAccountKWh != saved?.integratedAccountKWh
        }
    }

    /// The longest an integrated total's energy waits to be written.
    static let maxUnsavedSeconds = 60.0
    /// The longest any other change waits.
    static let maxUnsavedRestSeconds = 600.0

    /// How often the Bridge asks. A save is due at the tick that ends the wait (a minute after the
    /// last save): the first tick past the wait less half a tick, as ticks come milliseconds early
    /// or late. (Past the wait less a whole tick took the tick before, at 59 s, whenever it came a
    /// little later than the last save's tick: 1,464 saves a day instead of 1,440, for a worst
    /// case no better.)
    let tickSeconds: Double

    /// The anchors the last save wrote; nil before the first.
    private var savedAnchors: Anchors?
    /// When the last save was taken (or tried).
    private var savedAt: Date?
    /// Something changed since the last save.
    private var changed = false
    /// Something happened that must be saved at the next tick (a reload, a failed write to retry).
    private var urgent = false

    init(tickSeconds: Double = 1) { self.tickSeconds = tickSeconds }

    /// A message was taken, or anything else changed the state.
    mutating func noteChange() { changed = true }

    /// The config was reloaded: the totals the new engine carried over are saved at once.
    mutating func noteReload() {
        changed = true
        urgent = true
    }

    /// Whether to save now, at a tick at `now`. `anchors` is read only when something changed (it
    /// costs a snapshot). Returns true when the caller should save; the save is then counted as done
    /// (`saveFailed` takes that back).
    mutating func shouldSave(at now: Date, anchors: () -> Anchors) -> Bool {
        guard changed else { return false }
        let current = anchors()
        let wait = current.integrated(from: savedAnchors) ? Self.maxUnsavedSeconds : Self.maxUnsavedRestSeconds
        let due =
            urgent || current.moved(from: savedAnchors) || current.priceHoldRunsOut(from: savedAnchors, at: now)
            || savedAt.map { now.timeIntervalSince($0) > wait - tickSeconds / 2 || now < $0 } ?? true
        guard due else { return false }
        saved(current, at: now)
        return true
    }

    /// A save was written outside the policy (the stop).
    mutating func saved(_ anchors: Anchors, at now: Date) {
        savedAnchors = anchors
        savedAt = now
        changed = false
        urgent = false
    }

    /// The save could not be written: its changes are due again, ten minutes after the try (a
    /// failing disk is not hammered every second), sooner when something urgent happens or an
    /// integrated total moves meanwhile.
    mutating func saveFailed() { changed = true }
}
