import DayBook
import FlowCore
import Persistence
import Platform

extension ConfigSummary {
    /// The day book as `check` sees it: where it is, the days it holds and their range, its size;
    /// or why it cannot be read; and what waits in the state for it (a book the daemon could not
    /// write).
    var bookLines: [String] {
        guard let bookPath else { return [] }
        var lines: [String]
        do {
            let summary = try DayBook(path: bookPath, create: false, readOnly: true).summary()
            let range = summary.firstDay.flatMap { first in summary.lastDay.map { " from \(first) to \($0)" } } ?? ""
            lines = ["day book \(bookPath): \(summary.dayCount) days\(range), \(summary.slotCount) slots, \(Self.sizeText(summary.sizeBytes))"]
        } catch {
            lines = [
                error.code == 14 && !FileIO.exists(bookPath)
                    ? "day book \(bookPath): none yet (made when the first slot closes)" : "warning: \(error)"
            ]
        }
        if case .state(let saved) = StateStore(path: statePath).inspect() {
            let waiting = BookQueue(state: saved)
            if !waiting.isEmpty {
                lines.append("warning: \(waiting.slots.count) closed slots and \(waiting.days.count) days wait in the state for the day book (the daemon could not write it; see its log)")
            }
        }
        return lines
    }

    /// `12.3 MB`, `840 kB`.
    static func sizeText(_ bytes: Int64) -> String {
        bytes >= 1_000_000 ? "\(HistoryReport.fixed(Double(bytes) / 1_000_000, 1)) MB" : "\(HistoryReport.fixed(Double(bytes) / 1000, 1)) kB"
    }
}
