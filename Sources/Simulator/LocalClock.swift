import FlowCore
import FoundationEssentials

/// An instant as the simulated home sees it: the wall clock its people live by, and the solar
/// time its panels see (local standard time, so that DST moves the household, not the sun).
struct LocalMoment: Sendable, Equatable {
    var date: CivilDate
    /// Seconds since local midnight as the wall clock reads them.
    var clockSeconds: Double
    /// Hours of local standard time: 12 is (about) solar noon for a home in the middle of its zone.
    var solarHours: Double
    /// 1 on January 1st.
    var dayOfYear: Int
}

/// Turns instants into `LocalMoment`s for one zone. The zone is asked once per instant; the
/// standard offset (the smaller of January's and July's, whichever hemisphere) once per year.
struct LocalClock: Sendable {
    let zone: any LocalTimeZone
    private var standardOffsets: [Int: Int] = [:]

    init(zone: any LocalTimeZone) { self.zone = zone }

    mutating func moment(at instant: Date) -> LocalMoment {
        let seconds = instant.timeIntervalSince1970
        let local = seconds + Double(zone.utcOffsetSeconds(at: instant))
        let days = Int((local / 86_400).rounded(.down))
        let date = CivilDate(daysSinceEpoch: days)
        let standard = seconds + Double(standardOffset(year: date.year))
        let solarSeconds = standard - (standard / 86_400).rounded(.down) * 86_400
        let dayOfYear = days - CivilDate(year: date.year, month: 1, day: 1).daysSinceEpoch + 1
        return LocalMoment(date: date, clockSeconds: local - Double(days) * 86_400, solarHours: solarSeconds / 3600, dayOfYear: dayOfYear)
    }

    private mutating func standardOffset(year: Int) -> Int {
        if let known = standardOffsets[year] { return known }
        func offset(month: Int) -> Int {
            zone.utcOffsetSeconds(at: Date(timeIntervalSince1970: Double(CivilDate(year: year, month: month, day: 1).daysSinceEpoch * 86_400)))
        }
        let standard = min(offset(month: 1), offset(month: 7))
        standardOffsets[year] = standard
        return standard
    }

    /// The local day `date`, from its first instant to the next day's.
    func day(_ date: CivilDate) -> LocalDay {
        let noonUTC = Double(date.daysSinceEpoch * 86_400 + 43_200)
        let guess = Date(timeIntervalSince1970: noonUTC - Double(zone.utcOffsetSeconds(at: Date(timeIntervalSince1970: noonUTC))))
        return zone.day(containing: guess)
    }
}
