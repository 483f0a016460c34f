extension ConfigLoader {
    /// `book_file:`: where the day book is kept (default: beside the state file, see
    /// `ConfigContext.bookPath`). A path only: the book is opened by the daemon, which keeps running
    /// when it cannot be written, so nothing about the file itself is a config error.
    func loadBookFile(_ bookFile: ConfigValue<String>?) -> String? {
        if let bookFile, bookFile.value.isEmpty || bookFile.value.hasSuffix("/") {
            bookFile.report("names a folder or nothing; book_file names the SQLite file to keep the days in (book.sqlite)")
        }
        return bookFile?.value
    }

    /// `billing_day:`: the day of the month a billing month starts on (the meter-reading day), 1–28
    /// so that every month has it.
    func loadBillingDay(_ billingDay: ConfigValue<Double>?) -> Int {
        guard let billingDay else { return 1 }
        guard billingDay.value == billingDay.value.rounded(), (1...28).contains(billingDay.value) else {
            billingDay.report("must be a day of the month from 1 to 28 (every month has it), not \(billingDay.value)")
            return 1
        }
        return Int(billingDay.value)
    }
}
