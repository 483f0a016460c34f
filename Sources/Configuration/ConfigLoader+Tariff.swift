import FlowCore
import Platform

extension ConfigLoader {
    /// `tariff:`: the currency, the import and export price (each a number, a price source or
    /// time-of-use zones, with fees and VAT), and the standing charge per day.
    /// `flow` nil: a tariff on its own, for the stored slots of a book (whose widgets had an exchange).
    func loadTariff(_ node: ConfigNode, sources: [SourceConfig], flow: FlowConfig?) -> TariffConfig? {
        guard var map = node.mapping() else { return nil }
        defer { map.finish() }
        var currency = Currency.euro
        if let code = map.text("currency") {
            if let found = Currency(code: code.value) { currency = found } else {
                code.report("'\(code.value)' is not an ISO 4217 currency code (three capital letters, such as EUR, GBP, CHF)")
            }
        }
        let importPrice = map.required("import").flatMap { loadPrice($0, currency: currency, sources: sources) }
        let exportPrice = map.field("export").flatMap { loadPrice($0, currency: currency, sources: sources) }
        var standing = 0.0
        if let charge = map.number("standing_charge") {
            if charge.value < 0 {
                charge.report("must not be negative (a standing charge is what the grid bills per day whatever flows)")
            } else if charge.value > Self.largestStandingCharge {
                charge.report("\(JSONValue.format(charge.value)) per day is beyond \(JSONValue.format(Self.largestStandingCharge)): a wrong unit (cents given as \(currency)?)")
            } else {
                standing = charge.value
            }
        }
        if let flow, !flow.widgets.contains(where: { $0.exchange != nil }) {
            map.mapping.report("prices the grid's import and export, and no flow widget has an exchange node to count them")
        }
        guard let importPrice else { return nil }
        return TariffConfig(currency: currency, importPrice: importPrice, exportPrice: exportPrice, standingChargePerDay: standing)
    }

    /// A standing charge beyond this per day is a wrong unit.
    static let largestStandingCharge = 100.0

    /// One direction: `price:` (a number, or the name of a price source) or `zones:`, with `fees:`
    /// and `vat:`.
    func loadPrice(_ node: ConfigNode, currency: Currency, sources: [SourceConfig]) -> PriceConfig? {
        guard var map = node.mapping() else { return nil }
        defer { map.finish() }
        let price = map.field("price")
        let zones = map.field("zones")
        var base: PriceBase?
        switch (price, zones) {
        case (let price?, nil): base = loadBasePrice(price, currency: currency, sources: sources)
        case (nil, let zones?): base = loadZones(zones, currency: currency)
        case (.some, .some): map.mapping.report(at: "zones", "a price is either `price:` or `zones:`, not both")
        case (nil, nil): map.mapping.report(at: "price", "is required (a price per kWh, a price source's name, or `zones:`)")
        }
        var fees = 0.0
        if let value = map.number("fees") {
            if let problem = Self.priceProblem(value.value, currency: currency) { value.report(problem) } else { fees = value.value }
        }
        var vat = 0.0
        if let field = map.field("vat"), let text = field.text() {
            let digits = text.value.hasSuffix("%") ? String(text.value.dropLast().trimmingSpaces) : text.value
            if let percent = Double(digits), percent > 0, percent < 1, !text.value.hasSuffix("%") {
                text.report("\(text.value) reads as \(text.value) %; a VAT of \(JSONValue.format(percent * 100)) % is written \(JSONValue.format(percent * 100))%")
            } else if let percent = Double(digits), (0...100).contains(percent) { vat = percent } else {
                text.report("'\(text.value)' is not a VAT rate (write e.g. 19% or 19, between 0 and 100)")
            }
        }
        return base.map { PriceConfig(base: $0, feesPerKWh: fees, vatPercent: vat) }
    }

    /// Why a price per kWh is not one: a wrong unit gives thousands.
    static func priceProblem(_ value: Double, currency: Currency) -> String? {
        guard abs(value) > TariffConfig.largestPricePerKWh else { return nil }
        return "\(JSONValue.format(value)) \(currency)/kWh is beyond \(JSONValue.format(TariffConfig.largestPricePerKWh)) \(currency)/kWh: a wrong unit (ct/kWh or \(currency)/MWh written as \(currency)/kWh?)"
    }

    func loadBasePrice(_ node: ConfigNode, currency: Currency, sources: [SourceConfig]) -> PriceBase? {
        if node.value.scalarStyle == .plain, let text = node.value.scalarValue, let value = Double(text), value.isFinite {
            if let problem = Self.priceProblem(value, currency: currency) {
                node.report(problem)
                return nil
            }
            return .fixed(value)
        }
        guard let name = node.text() else { return nil }
        if let value = Double(name.value), value.isFinite {
            name.report("'\(name.value)' is quoted, so it reads as a source's name: write the price without quotes")
            return nil
        }
        guard let source = sources.first(where: { $0.name == name.value }) else {
            name.report("'\(name.value)' is neither a number nor a source (a price source is an entry of `sources:` with a unit such as \(currency)/kWh, \(currency)/MWh or ct/kWh)")
            return nil
        }
        guard source.unit.quantity == .price else {
            name.report("source '\(source.name)' is \(source.unit.quantity.rawValue) (\(source.unit.rawValue)); a price source's unit is \(currency)/kWh, \(currency)/MWh or ct/kWh")
            return nil
        }
        if source.combine == .sum {
            name.report("source '\(source.name)' adds the prices of its topics (combine: sum); a price source is one price")
            return nil
        }
        if let other = source.priceCurrency, other != currency.code {
            name.report("source '\(source.name)' gives prices in \(other), and the tariff's currency is \(currency)")
            return nil
        }
        return .source(source.name)
    }

    /// `zones:`: a list of `{days: mon-fri, from: "07:00", to: "22:00", price: 0.35}`, and at most
    /// one zone with only a price, for the rest of the week.
    func loadZones(_ node: ConfigNode, currency: Currency) -> PriceBase? {
        guard let items = node.items else {
            node.report("expected a list of zones ({days: mon-fri, from: \"07:00\", to: \"22:00\", price: 0.35}), found \(node.value.describedKind)")
            return nil
        }
        if items.isEmpty { node.report("needs at least one zone") }
        var zones: [TimeOfUseZone] = []
        for item in items {
            guard var map = item.mapping() else { continue }
            defer { map.finish() }
            let days = map.field("days").flatMap(loadDays)
            let from = map.field("from").flatMap { clockMinute($0, allowMidnightAfter: false) }
            let to = map.field("to").flatMap { clockMinute($0, allowMidnightAfter: true) }
            guard let price = map.required("price")?.number() else { continue }
            if let problem = Self.priceProblem(price.value, currency: currency) { price.report(problem) }
            if let from, let to, from == to % TimeOfUseTable.minutesPerDay, to != TimeOfUseTable.minutesPerDay || from != 0 {
                item.report("from and to are the same time: a zone of no time (leave both out for the whole day)")
            }
            let isRest = days == nil && from == nil && to == nil
            zones.append(TimeOfUseZone(
                days: days ?? Set(Weekday.allCases), fromMinute: from ?? 0, toMinute: to ?? TimeOfUseTable.minutesPerDay,
                basePerKWh: price.value, isRest: isRest))
        }
        guard zones.count == items.count else { return nil }
        do {
            return .zones(try TimeOfUseTable(zones: zones))
        } catch {
            node.report(error.description)
            return nil
        }
    }

    /// `mon-fri`, `sat,sun`, `[sat, sun]`, `mon`, `daily`.
    func loadDays(_ node: ConfigNode) -> Set<Weekday>? {
        var words: [ConfigValue<String>] = []
        if let items = node.items {
            words = items.compactMap { $0.text() }
        } else if let text = node.text() {
            words = text.value.split(separator: ",").map { text.holding(String($0.trimmingSpaces)) }
        }
        var days: Set<Weekday> = []
        for word in words {
            if word.value == "daily" {
                days.formUnion(Weekday.allCases)
                continue
            }
            let ends = word.value.split(separator: "-", omittingEmptySubsequences: false).map { Weekday(word: String($0.trimmingSpaces)) }
            guard !ends.isEmpty, ends.count <= 2, let first = ends.first!, let last = ends.last! else {
                word.report("'\(word.value)' is not a day or a range of days (mon … sun, mon-fri, sat,sun, daily)")
                return nil
            }
            // A range may wrap round the week: fri-mon.
            var day = first
            while true {
                days.insert(day)
                if day == last { break }
                day = Weekday(rawValue: (day.rawValue + 1) % 7)!
            }
        }
        if days.isEmpty {
            node.report("names no day")
            return nil
        }
        return days
    }

    /// `"07:00"` as minutes after midnight; `"24:00"` only for a `to`.
    func clockMinute(_ node: ConfigNode, allowMidnightAfter: Bool) -> Int? {
        guard let text = node.text() else { return nil }
        let parts = text.value.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 2, parts[0].count <= 2, parts[1].count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]),
            (0...59).contains(minutes), (0...23).contains(hours) || (allowMidnightAfter && hours == 24 && minutes == 0)
        {
            return hours * 60 + minutes
        }
        text.report("'\(text.value)' is not a local time of day (write it quoted, \"07:00\"\(allowMidnightAfter ? "; \"24:00\" is midnight at the end" : ""))")
        return nil
    }
}

extension TariffConfig {
    /// A tariff on its own (`history --tariff OTHER.yaml`): a file with a `tariff:` section as a
    /// config has it, and nothing else. The price sources it may name are the price lists given
    /// beside it (`priceLists`, `history --prices`: prices per kWh in the tariff's currency).
    public static func load(path: String, priceLists: [String] = []) throws(ConfigError) -> TariffConfig {
        let bytes: [UInt8]
        do { bytes = try FileIO.read(path, limit: DaemonConfig.sizeLimit) } catch {
            throw ConfigError(file: path, problems: [ConfigProblem(path: "", line: nil, message: "cannot read: \(error.reason)")])
        }
        let root: YAMLNode
        do { root = try YAMLDocument.parse(bytes: bytes) } catch {
            throw ConfigError(file: path, problems: [ConfigProblem(path: "", line: error.mark?.line, message: error.message)])
        }
        let reader = ConfigReader()
        let loader = ConfigLoader(reader: reader, context: nil, file: path)
        var tariff: TariffConfig?
        if var top = ConfigNode(root, path: "", reader: reader).mapping() {
            let lists = priceLists.compactMap { name in
                (try? TopicFilter("prices")).map { SourceConfig(name: name, topic: $0, unit: .perKilowattHour, staleAfterSeconds: nil) }
            }
            tariff = top.required("tariff").flatMap { loader.loadTariff($0, sources: lists, flow: nil) }
            top.finish()
        }
        guard reader.problems.isEmpty, let tariff else { throw ConfigError(file: path, problems: reader.problems) }
        return tariff
    }
}
