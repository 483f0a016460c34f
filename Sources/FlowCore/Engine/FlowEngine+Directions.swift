import FoundationEssentials

/// `direction:`: a source's magnitude signed by other sources (0/1 flags, or a signed number).
/// The source's reading is the signed one, kept up to date when either side moves, so that every
/// node, total and check reads it as it reads any other: nothing is looked up per message for a
/// config without `direction:`.
///
/// Before the direction has come the magnitude has no sign: the source has no reading, and the
/// nodes it feeds are not shown (and count nothing), as before a first reading. Never a guess: a
/// guess would count a draining battery as filling. A flag holds its last state (bridges publish
/// it on change, or with every poll); the magnitude's own `stale_after` says when the reading is old.
extension FlowEngine {
    /// What the direction sources of source `position` say now.
    func directionVerdict(of position: Int) -> DirectionVerdict {
        bank.sources[position].setup.direction?.verdict { bank.sources[$0].reading?.value } ?? .notYet
    }

    /// Signs the magnitude source `position` just took. Returns whether its reading changed.
    /// While the flags contradict each other (both 1, as between a poll's two flag messages when
    /// the battery turns) the reading stays as it was: the next flag settles it.
    @discardableResult
    mutating func applyDirection(to position: Int) -> Bool {
        guard let magnitude = bank.sources[position].magnitude else { return false }
        let verdict = directionVerdict(of: position)
        guard verdict != .contradiction else { return false }
        let signed = verdict.signed(magnitude.value).map { Reading(value: $0, at: magnitude.at) }
        guard signed != bank.sources[position].reading else { return false }
        bank.sources[position].reading = signed
        return true
    }

    /// The magnitude source `position` took a reading: it is kept as the magnitude, and the
    /// reading becomes it with its direction's sign.
    mutating func takeMagnitude(of position: Int) {
        bank.sources[position].magnitude = bank.sources[position].reading
        bank.sources[position].reading = nil
        applyDirection(to: position)
    }

    /// The sources whose direction the `accepted` readings moved, signed again: they count as
    /// read now (their totals move, their widgets are offered).
    mutating func redirect(_ accepted: [Int]) -> [Int] {
        var moved: [Int] = []
        for source in accepted {
            for directed in bank.directs[source] ?? [] where !moved.contains(directed) && !accepted.contains(directed) {
                if applyDirection(to: directed) { moved.append(directed) }
            }
        }
        return moved
    }

    /// Why a reading of the flag or magnitude source `position` is refused, if it is: a flag
    /// that is not 0 or 1, or a magnitude that came while its flags both read 1.
    func directionProblem(of position: Int, value: Double) -> String? {
        let setup = bank.sources[position].setup
        if setup.isFlag, value != 0, value != 1 {
            return "\(JSONValue.format(value)) is not a direction flag: a flag reads 0 or 1 (on/off, true/false)"
        }
        guard setup.direction != nil, directionVerdict(of: position) == .contradiction else { return nil }
        let flags = setup.direction?.flags.map { "'\(bank.sources[$0].config.name)'" } ?? []
        return "its direction flags \(flags.joined(separator: " and ")) both read 1 (each says the other direction is wrong): its direction is unknown until one of them reads 0"
    }
}
