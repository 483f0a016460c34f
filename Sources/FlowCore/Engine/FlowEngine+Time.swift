import FoundationEssentials

/// Time passing: ticks at the deadlines, the timeline's verdict on each event's time, a wall clock
/// that stepped, and the local day closed at midnight.
extension FlowEngine {
    /// Lets time pass: stale readings, settled bursts, held-back pushes, silent sources and local
    /// midnight take effect.
    public mutating func tick(at time: Date) -> [Output] {
        var out: [Output] = []
        let verdict = dayClock.timeline.classify(time, day: day, jumpSeconds: dayClock.jumpSeconds)
        guard let now = take(time, verdict, into: &out), verdict != .late else { return out }
        reportSilentSources(at: now, into: &out)
        reportQuietSources(at: now, into: &out)
        offerAll(at: now, urgent: false, into: &out)
        sendMovedAccounts(at: now, into: &out)
        return out
    }

    /// Ticks at every deadline up to and including `end`, in order: what a live clock would have
    /// done between two events. An `end` before the latest event, or far ahead on a later day, runs
    /// nothing until a later event confirms the clock moved (replay ticks through each message's
    /// time before taking the message, so one line dated tomorrow must not close today).
    public mutating func tick(through end: Date) -> [Output] {
        var out: [Output] = []
        let verdict = dayClock.timeline.classify(end, day: day, jumpSeconds: dayClock.jumpSeconds)
        switch verdict {
        case .late, .ahead:
            _ = take(end, verdict, into: &out)
            return out
        case .stepped:
            return tick(at: end)
        case .onTime:
            break
        }
        // Before the first event (a fresh or restored engine) nothing is due yet; after a clock
        // that jumped days ahead, one tick closes the days at once instead of one by one.
        guard let clock, let day, end.timeIntervalSince(max(clock, day.end)) < 3 * 86_400 else {
            return tick(at: end)
        }
        while let deadline = nextDeadline, deadline <= end {
            out += tick(at: deadline)
        }
        dayClock.timeline.take(end, .onTime)
        return out
    }

    /// The daemon's subscription is in place (its first successful connection): from `now` on, a
    /// source that sends nothing at all within its `stale_after` (60 s for `stale_after: never`)
    /// is warned about once, naming its topic: a typo, an unplugged meter. Later calls change
    /// nothing. Returns what falls due up to `now`.
    public mutating func subscribed(at now: Date) -> [Output] {
        if subscribedAt == nil { subscribedAt = now }
        return tick(through: now)
    }

    /// The wall clock stepped by `seconds` (ahead when positive) without that time passing: the
    /// daemon saw its wall clock move differently from its monotonic clock. Believed at once:
    /// nothing is integrated across the step; the ages of readings, the silence of sources and the
    /// policies' intervals count what really passed; the day follows the clock (a step ahead past
    /// midnight closes the day, a short step back past it counts on under the earlier date unless
    /// that date is closed, see `advanceDay`). A step
    /// far back before the day began is held as an excursion (see `EventTimeline`): the day goes
    /// on, and what is dated before it counts nothing unless the clock stays back.
    public mutating func clockStepped(by seconds: Double, at now: Date) -> [Output] {
        var out: [Output] = []
        for position in bank.sources.indices { bank.sources[position].shift(by: seconds) }
        for position in board.widgets.indices {
            board.widgets[position].policy.shift(by: seconds)
            board.widgets[position].flow?.clockStepped(by: seconds)
        }
        subscribedAt = subscribedAt?.addingTimeInterval(seconds)
        pricing.shift(by: seconds)
        let stepText = "the system clock stepped \(seconds > 0 ? "ahead" : "back") by \(durationText(seconds: seconds)) (now \(zone.clockText(at: now, withSeconds: true)) \(zone.identifier))"
        if let day, dayClock.timeline.isExcursion(now, day: day, jumpSeconds: dayClock.jumpSeconds) {
            dayClock.timeline.take(now, .late)
            out.append(.diagnostic(Diagnostic(
                .warning,
                "\(stepText), before the day \(day.date) began: the day \(day.date) goes on; what is dated before it counts nothing unless the clock stays back for \(durationText(seconds: EventTimeline.excursionHoldSeconds))"
            )))
            return out
        }
        dayClock.timeline.reset(to: now)
        out.append(.diagnostic(Diagnostic(.warning, "\(stepText); no energy is counted across the step")))
        advanceDay(to: now, into: &out)
        offerAll(at: now, urgent: false, into: &out)
        return out
    }

    /// When the engine next needs a `tick`, if nothing arrives before: a settled burst, the end of
    /// a held-back push's interval, a reading turning stale, a silent source's grace, or local
    /// midnight. Asked before every message, so it allocates nothing.
    public var nextDeadline: Date? {
        var next: Date?
        let clock = self.clock
        func consider(_ deadline: Date) {
            if clock.map({ deadline > $0 }) ?? true, next.map({ deadline < $0 }) ?? true { next = deadline }
        }
        // By index, property by property: copies of the widgets' and sources' states would retain
        // and release all of them, per message.
        // A widget waiting for a batch's end is offered at its wait's limit, whatever other
        // widgets the flood moves meanwhile.
        for position in board.widgets.indices {
            if let deadline = board.widgets[position].policy.deadline { consider(deadline) }
            if let since = board.widgets[position].batchedSince { consider(since.addingTimeInterval(Self.batchWaitSeconds)) }
        }
        if let day { consider(day.end) }
        if let openSlot = dayClock.openSlot { consider(openSlot.end) }
        if let due = accountsDeadline { consider(due) }
        for position in bank.sources.indices {
            if let subscribedAt, !bank.sources[position].heard, !bank.sources[position].reportedSilent {
                consider(subscribedAt.addingTimeInterval(bank.sources[position].config.silenceGraceSeconds))
            }
            if let due = silenceDue(of: position) { consider(due) }
            guard let staleAfter = bank.sources[position].config.staleAfterSeconds, let reading = bank.sources[position].reading else { continue }
            consider(reading.at.addingTimeInterval(staleAfter))
            // A retained copy is stale at once but marked only once a live update is overdue.
            if let heard = bank.sources[position].lastValueAt, heard > reading.at { consider(heard.addingTimeInterval(staleAfter)) }
            if bank.sources[position].config.combine == .sum {
                for part in bank.sources[position].topics.values { consider(part.at.addingTimeInterval(staleAfter)) }
            }
        }
        return next
    }

    /// The latest moment the engine knows of: its clock, else (a restored state, before any event)
    /// its newest reading or sample of a total. Nil for a state without any.
    public var latestKnownTime: Date? {
        if let clock { return clock }
        var times = bank.sources.compactMap { $0.reading?.at }
        for widget in board.widgets {
            for node in widget.flow?.nodes ?? [] {
                for total in node.accounts {
                    if let sample = total.lastSample { times.append(total.countedUntil ?? sample.at) }
                    if let counted = total.counter?.lastAt { times.append(counted) }
                }
            }
        }
        return times.max()
    }

    // MARK: - Time

    /// Applies the timeline's verdict on an event at `time`. Returns the time to take it at, or nil
    /// when the event is ignored (far ahead, unconfirmed).
    mutating func take(_ time: Date, _ verdict: EventTimeline.Verdict, into out: inout [Output]) -> Date? {
        let latest = dayClock.timeline.latest
        let now = dayClock.timeline.effectiveTime(time, verdict)
        dayClock.timeline.take(time, verdict)
        switch verdict {
        case .onTime:
            advanceDay(to: now, into: &out)
        case .late:
            break
        case .ahead(let first):
            if first, let latest {
                let zone = self.zone
                note(.warning, key: "clock-ahead", at: latest, into: &out) {
                    "an event dated \(zone.clockText(at: now, withSeconds: true)) is \(durationText(seconds: now.timeIntervalSince(latest))) after the latest (\(zone.clockText(at: latest, withSeconds: true))), on a later day: ignored unless the next events confirm that the clock moved on"
                }
            }
            return nil
        case .stepped(let from):
            let zone = self.zone
            note(.warning, key: "clock-step", at: now, into: &out) {
                "the clock moved \(now > from ? "ahead" : "back") from \(zone.clockText(at: from, withSeconds: true)) to \(zone.clockText(at: now, withSeconds: true)) (\(zone.identifier)), confirmed by the events since; no energy is counted across the step"
            }
            advanceDay(to: now, into: &out)
        }
        return now
    }

    // MARK: - The day

    /// Closes every slot and every local day that ended before `now`; the widgets get their reset
    /// totals at once.
    mutating func advanceDay(to now: Date, into out: inout [Output]) {
        guard var current = day else {
            let today = zone.day(containing: now)
            day = today
            // A fresh day's first slot carries the standing charge since midnight: the slots of a
            // day add up to the day.
            beginSlot(at: max(today.start, ClosedSlot.start(of: now)), standingCharge: 0)
            return
        }
        if now < current.start {
            // The clock went back past midnight (NTP correcting a clock that ran ahead, or a state
            // saved under such a clock): the energy counted is this day's, under its right date,
            // unless that date is closed. Its row is in the book, and at the clock's next midnight
            // it would close again with only what came since, in place of its total (and the
            // lifetime's sums would take the difference away): the day in progress counts on.
            let corrected = zone.day(containing: now)
            let zoneName = zone.identifier
            if let closed = dayClock.closedThrough, corrected.date <= closed {
                note(.warning, key: "clock", at: now, into: &out) {
                    "the clock went back to before \(current.date) (\(zoneName)), into \(corrected.date), which is closed; the totals count on as \(current.date)"
                }
                return
            }
            note(.warning, key: "clock", at: now, into: &out) {
                "the clock went back to before \(current.date) (\(zoneName)); the totals count on as \(corrected.date)"
            }
            day = corrected
            return
        }
        if dayClock.openSlot == nil {
            // A restored day saved without its slot: what it counted so far is in no slot.
            let start = max(current.start, ClosedSlot.start(of: min(now, current.end.addingTimeInterval(-1))))
            beginSlot(at: start, standingCharge: standingCharge(at: start, in: current))
        }
        closeSlots(endingBy: now, in: current, into: &out)
        guard now >= current.end else { return }
        var closedDays = 0
        while now >= current.end {
            let closed = closeDay(current, into: &out)
            lastClosedDay = closed
            dayClock.closedThrough = current.date
            out.append(.closedDay(closed))
            if closedDays == 0 {
                let summary = closed.totalsKWh.keys.sorted().map { "\($0) \(AccountBalance.kWh(closed.totalsKWh[$0]!)) kWh" }
                out.append(.diagnostic(Diagnostic(.info, "day \(current.date) (\(zone.identifier)) closed: \(summary.isEmpty ? "no totals" : summary.joined(separator: ", "))")))
                reportAccounts(of: closed, into: &out)
            }
            closedDays += 1
            // After a long downtime, jump to today instead of closing empty days one by one.
            current = closedDays > 3 ? zone.day(containing: now) : zone.day(after: current)
            beginSlot(at: current.start, standingCharge: 0)
            closeSlots(endingBy: now, in: current, into: &out)
        }
        day = current
        offerAll(at: now, urgent: true, into: &out)
    }
}
