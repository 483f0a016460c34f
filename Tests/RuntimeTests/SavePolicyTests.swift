@testable import Configuration
@testable import Persistence
@testable import Platform
@testable import Runtime
import FlowCore
import Foundation
import Mosquitto
import TestSupport
import Testing

/// When the state is written: at once for what cannot be rebuilt, within a minute for the rest,
/// never when nothing changed. Counted over simulated hours, on a clock the test moves.
@Suite struct SavePolicyTests {
    static let start = Date(timeIntervalSince1970: 1_780_000_000)

    /// An hour (or `seconds`) of one-second ticks with a change every `changeEvery` seconds (0:
    /// none after the first), which moves an integrated energy when `integrating`; a baseline (a
    /// new anchor) at each second listed in `baselineAt`, a reload at each in `reloadAt`. The
    /// energies and baselines are a total's, or with `inAccounts` an account's (a home whose
    /// totals come from counters still integrates its consumption). Tick `n` comes at second `n`,
    /// `lateness(n)` seconds late. The saves it takes, and the longest a change waited for one.
    static func hour(
        changeEvery: Int, integrating: Bool, inAccounts: Bool = false, baselineAt: Set<Int> = [], reloadAt: Set<Int> = [],
        seconds: Int = 3600, lateness: (Int) -> Double = { _ in 0 }
    ) -> (saves: [Int], longestWait: Int) {
        var policy = SavePolicy()
        var anchors = SavePolicy.Anchors(of: ["day": "2026-06-01", "totals": [:]])
        let integrated: WritableKeyPath<SavePolicy.Anchors, [String: Double]> = inAccounts ? \.integratedAccountKWh : \.integratedKWh
        let baselines: WritableKeyPath<SavePolicy.Anchors, [String: JSONValue]> = inAccounts ? \.accountBaselines : \.baselines
        var saves: [Int] = []
        var unsavedSince: Int?
        var longestWait = 0
        for second in 0..<seconds {
            if second == 0 || (changeEvery > 0 && second % changeEvery == 0) {
                if integrating { anchors[keyPath: integrated]["w/inputs[0]"] = Double(second) / 1000 }
                policy.noteChange()
                unsavedSince = unsavedSince ?? second
            }
            if baselineAt.contains(second) {
                anchors[keyPath: baselines]["w/exchange", default: ["baseline": 0]] = ["baseline": .number(Double(second))]
                policy.noteChange()
                unsavedSince = unsavedSince ?? second
            }
            if reloadAt.contains(second) {
                policy.noteReload()
                unsavedSince = unsavedSince ?? second
            }
            if policy.shouldSave(at: start.addingTimeInterval(Double(second) + lateness(second)), anchors: { anchors }) {
                saves.append(second)
                unsavedSince.map { longestWait = max(longestWait, second - $0) }
                unsavedSince = nil
            }
            if let since = unsavedSince { longestWait = max(longestWait, second - since) }
        }
        return (saves, longestWait)
    }

    typealias Hour = (
        name: String, changeEvery: Int, integrating: Bool, inAccounts: Bool, baselineAt: Set<Int>, reloadAt: Set<Int>, saves: Int,
        firstSaves: [Int]
    )
    static let hours: [Hour] = [
        // A steady home that integrates (a reading every 5 s, as the old policy saved): the first
        // change, then once a minute.
        ("integrating", 5, true, false, [], [], 60, [0, 60, 120]),
        ("a reading every second", 1, true, false, [], [], 60, [0, 60, 120]),
        // Counter totals only: their rises wait ten minutes.
        ("counters", 5, false, false, [], [], 6, [0, 600, 1200]),
        // Quiet after the first reading: one save.
        ("quiet", 0, true, false, [], [], 1, [0]),
        // A counter's baseline moved (a recount, a restart at sunrise): saved at the tick it moved,
        // and the wait counts from there.
        ("a recount", 5, true, false, [90], [], 61, [0, 60, 90, 150]),
        ("a recount, counters", 5, false, false, [90], [], 7, [0, 90, 690]),
        ("a reload", 5, true, false, [], [1000], 61, [0, 60, 120]),
        // An account is energy like a total: integrated, within a minute; its counter's baseline
        // at once.
        ("an integrated account", 5, true, true, [], [], 60, [0, 60, 120]),
        ("an account's recount", 5, false, true, [90], [], 7, [0, 90, 690]),
    ]

    @Test(arguments: hours)
    func savesOverASimulatedHour(_ row: Hour) {
        let (saves, longestWait) = Self.hour(
            changeEvery: row.changeEvery, integrating: row.integrating, inAccounts: row.inAccounts, baselineAt: row.baselineAt,
            reloadAt: row.reloadAt)
        #expect(saves.count == row.saves, "\(row.name): \(saves)")
        #expect(Array(saves.prefix(row.firstSaves.count)) == row.firstSaves, "\(row.name)")
        #expect(longestWait <= (row.integrating ? 60 : 600), "\(row.name): a change waited \(longestWait) s")
        for second in row.baselineAt.union(row.reloadAt) { #expect(saves.contains(second), "\(row.name): not saved at \(second)") }
        // A day at this pace stays within the budget of 3,000 syncs (one a save), the day book's
        // 96 commits besides.
        #expect(saves.count * 24 + 96 <= 3000, "\(row.name)")
    }

    /// A whole steady day of a home that integrates (a reading every 5 s), with the daily
    /// counter's restart at sunrise (its drop, then the readings that confirm it) and a reload: the
    /// saves the day takes, one sync each (the older copy's fdatasync), stay within 3,000 with
    /// the day book's 96 commits, and no change waits more than a minute.
    @Test func aSteadyDayStaysWithinTheBudgetOfSyncs() {
        let sunrise = 6 * 3600
        let (saves, longestWait) = Self.hour(
            changeEvery: 5, integrating: true, baselineAt: [sunrise, sunrise + 5, sunrise + 10], reloadAt: [15 * 3600], seconds: 86_400)
        #expect(longestWait <= 60)
        #expect((1440...1445).contains(saves.count), "\(saves.count) saves")
        #expect(saves.count + 96 <= 3000)
    }

    /// Ticks come a few milliseconds late, each by its own amount (a timer on a loaded machine):
    /// the save still comes at the tick a minute after the last one, not at the one before it
    /// whenever that came later than the last save's.
    @Test(arguments: [0.0, 0.004, 0.3])
    func lateTicksStillSaveOnceAMinute(latestSeconds: Double) {
        let (saves, longestWait) = Self.hour(changeEvery: 5, integrating: true) { Double($0 * 7919 % 13) / 12 * latestSeconds }
        #expect(saves.count == 60, "\(saves)")
        #expect(zip(saves, saves.dropFirst()).allSatisfy { $1 - $0 == 60 }, "\(saves)")
        #expect(longestWait <= 60)
    }

    /// The anchors of real engine snapshots: a counter's baseline and carried energy, not its
    /// latest reading; the day (its change is the Bridge test's midnight); nothing for an
    /// integrating total.
    @Test func anchorsAreTheDayAndTheCountersBaselines() throws {
        var probe = try AnchorProbe("""
            timezone: UTC
            sources: {grid: {topic: g}, meter: {topic: m, unit: kWh}, solar: {topic: s}}
            widgets: {w: {template: flow, flow: {inputs: [{rate: solar, total: integrate}], exchange: {rate: grid, total: {counter: meter}}}}}
            """)
        let first = probe.read("m", "100", at: 0)
        #expect(first.day == "2026-06-01")
        #expect(first.baselines.keys.sorted() == ["w/exchange"])  // the integrating input has none
        #expect(first.integratedKWh == ["w/inputs[0]": 0])
        // Every account: the import's counter, and the directions integrated from the rates.
        #expect(first.accountBaselines.keys.sorted() == ["w/exchange/import"])
        #expect(first.integratedAccountKWh.keys.sorted() == ["w/exchange/export", "w/inputs[0]/production"])
        #expect(probe.read("s", "3000", at: 5) == first)
        #expect(probe.read("m", "100.001", at: 10) == first)  // a rise: rebuilt from the next reading
        #expect(probe.read("m", "100.1", at: 600) == first)
        #expect(probe.read("m", "0.2", at: 605) != first)  // a meter reset: the energy so far is carried
    }

    /// A schedule is an anchor: a new one (or one that changes a slot) makes a save due at once,
    /// the same schedule again does not (evcc republishes it unchanged).
    @Test func aNewScheduleIsAnAnchor() throws {
        var probe = try AnchorProbe("""
            timezone: UTC
            sources: {grid: {topic: g}, prices: {topic: p, unit: EUR/kWh, schedule: true}}
            widgets: {w: {template: flow, flow: {exchange: {rate: grid, total: import}}}}
            tariff: {import: {price: prices}}
            """)
        let before = probe.read("g", "100", at: 0)
        let schedule = "[[1780315200, 1780318800, 0.3], [1780318800, 1780322400, 0.4]]"
        let first = probe.read("p", schedule, at: 5)
        #expect(first.moved(from: before))
        #expect(!probe.read("p", schedule, at: 10).moved(from: first))
        #expect(probe.read("p", "[[1780318800, 1780322400, 0.5]]", at: 15).moved(from: first))
    }

    /// Through the Bridge and the state file, an hour from 23:30 with a reading every 5 s and a
    /// meter reset at 23:45: saved at the first reading, once a minute, at the reset and at midnight
    /// at once. Each save carries the next sequence number (see `StateSeal`), so the newest copy's counts them.
    @Test func theBridgeSavesOnceAMinuteAndAtOnceAtAResetAndAtMidnight() throws {
        let folder = TemporaryFolder()
        let config = try DaemonConfig.parse("""
            timezone: UTC
            sources: {grid: {topic: g}, meter: {topic: m, unit: kWh}, solar: {topic: s}}
            widgets: {w: {template: flow, flow: {inputs: [{rate: solar, total: integrate}], exchange: {rate: grid, total: {counter: meter}}}}}
            """, file: "c.yaml")
        let bridge = try Bridge.inUTC(config, savingIn: folder)
        let path = folder.url.appendingPathComponent("state.json").path
        let start = try #require(RFC3339.parse("2026-06-01T23:30:00Z"))
        let monotonic = ContinuousClock.now
        let store = StateStore(path: path)
        func sequence() -> UInt64? { store.newest()?.sequence }
        var saves: [Int] = []
        var last = sequence()
        var meterKWh = 1000.0
        for second in 0..<3600 {
            let now = start.addingTimeInterval(Double(second))
            if second % 5 == 0 {
                meterKWh = second == 900 ? 0.01 : meterKWh + 0.002
                for (topic, value) in [("s", "2000"), ("g", "500"), ("m", JSONValue.format(meterKWh))] {
                    bridge.receive(MQTTMessage(topic: topic, payload: Array(value.utf8)), at: now, monotonic: monotonic.advanced(by: .seconds(second)))
                }
            }
            bridge.tick(at: now.addingTimeInterval(0.5), monotonic: monotonic.advanced(by: .seconds(Double(second) + 0.5)))
            let current = sequence()
            if current != last { saves.append(second) }
            last = current
        }
        #expect(saves.contains(900), "the reset: \(saves)")
        #expect(saves.contains(1800), "midnight: \(saves)")
        #expect(zip(saves, saves.dropFirst()).allSatisfy { $1 - $0 <= 60 }, "\(saves)")
        // The first, 60 a minute apart, the reset and midnight start the minute again.
        #expect((60...64).contains(saves.count), "\(saves.count) saves: \(saves)")
        #expect(savedState(path)?["day"] == "2026-06-02")
    }
}

/// An engine for a config in UTC from noon on 2026-06-01: `read` gives it one message `seconds`
/// after noon and says the anchors of its snapshot then.
struct AnchorProbe {
    var engine: FlowEngine
    let noon: Date

    init(_ yaml: String) throws {
        let config = try DaemonConfig.parse(yaml, file: "c.yaml")
        engine = FlowEngine(config: config.flow, zone: try #require(SystemTimeZone(identifier: "UTC")))
        noon = try #require(RFC3339.parse("2026-06-01T12:00:00Z"))
    }

    mutating func read(_ topic: String, _ value: String, at seconds: Double) -> SavePolicy.Anchors {
        _ = engine.receive(topic: topic, payload: Array(value.utf8), at: noon.addingTimeInterval(seconds))
        return SavePolicy.Anchors(of: engine.snapshot())
    }
}
