import FoundationEssentials

extension FlowEngine {
    /// The day's clock: the zone whose days the totals count, the local day, the 15-minute slot
    /// they count in, which event times are believed, and when the subscription began. Owns its
    /// share of the state (the day, the slot's start).
    struct DayClock: Sendable {
        /// Where midnight is: the config's `timezone:`, or the system's.
        let zone: any LocalTimeZone
        /// The local day the totals count; nil until the first event.
        var day: LocalDay?
        var lastClosedDay: ClosedDay?
        /// The latest date closed, its row in the day book; saved. A clock that goes back into it
        /// counts on under the day in progress: closing it again would put what came since in
        /// place of its total.
        var closedThrough: CivilDate?
        /// The closed day's last slot of each flow widget: where a counter's late rise that belongs
        /// to the closed day lands, so its slots still add up to it (`splitAtMidnight`).
        var lastDaySlots: [ClosedSlot] = []
        /// The 15-minute slot the accounts count in; nil until the first event.
        var openSlot: OpenSlot?
        /// Which event times are believed (late ones, and ones far ahead, wait for confirmation).
        var timeline = EventTimeline()
        /// When the daemon's first subscription was in place: a source's silence counts from here.
        var subscribedAt: Date?
        /// A jump ahead onto a later local day longer than this needs confirming: the longest
        /// `max_gap` of the sources, a silence no total integrates across. A shorter one is an
        /// ordinary midnight.
        let jumpSeconds: Double

        /// The clock of `config`'s sources in `zone`, before the first event.
        init(config: FlowConfig, zone: any LocalTimeZone) {
            self.zone = zone
            jumpSeconds = config.sources.map(\.maxGapSeconds).max() ?? SourceConfig.defaultMaxGapSeconds
        }

        /// The day as saved: its date, where it began, and the latest date closed.
        var snapshot: [String: JSONValue] {
            guard let day else { return [:] }
            var state: [String: JSONValue] = ["day": .string(day.date.description), "day_start": .number(day.start.timeIntervalSince1970)]
            if let closedThrough { state["closed_through"] = .string(closedThrough.description) }
            return state
        }

        /// The latest date closed as saved beside `day`: nil for a state without one (saved before
        /// it was kept, or before a day closed). A date not before `day` is damaged, named to `skip`.
        static func restoredClosedThrough(from state: JSONValue, day: LocalDay, skip: (String) -> Void) -> CivilDate? {
            guard let saved = state["closed_through"] else { return nil }
            guard let date = saved.stringValue.flatMap(CivilDate.init), date < day.date else {
                skip("the date closed last")
                return nil
            }
            return date
        }

        /// The saved day in `zone`, and where it began in the zone it was saved in; nil for a state
        /// without a day. Throws when the day is damaged.
        static func restoredDay(from state: JSONValue, zone: any LocalTimeZone) throws(StateError) -> (day: LocalDay, savedStart: Double)? {
            guard state["day"] != nil || state["day_start"] != nil else { return nil }
            guard let start = state["day_start"]?.numberValue, FlowEngine.plausibleSeconds.contains(start),
                let dateText = state["day"]?.stringValue, let date = CivilDate(dateText)
            else { throw StateError(description: "its day is damaged") }
            // The date in this zone: a state saved under another zone (`timezone:` or the system's
            // changed) carries its day over to the same date here. Its start is where that date
            // began in the zone it was saved in, at most the zones' widest difference (26 h) away.
            guard let day = zone.day(on: date), abs(day.start.timeIntervalSince1970 - start) <= FlowEngine.zoneSpreadSeconds else {
                throw StateError(description: "day \(date) does not start at \(JSONValue.format(start)) in any zone")
            }
            return (day, start)
        }
    }
}
