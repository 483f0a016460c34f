/// The tariff's currency: an ISO 4217 code (`EUR`), the symbol amounts are shown with (`€`), and
/// how many decimals its amounts have (2 for most, 0 for the yen).
public struct Currency: Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let symbol: String
    public let decimals: Int

    /// Codes whose symbol is not the code itself, and the few without cents. Any other code of
    /// three capital letters is a currency too, shown with its code (`CHF 1.20`).
    static let known: [String: (symbol: String, decimals: Int)] = [
        "EUR": ("€", 2), "USD": ("$", 2), "GBP": ("£", 2), "JPY": ("¥", 0), "INR": ("₹", 2), "PLN": ("zł", 2),
        "CZK": ("Kč", 2), "SEK": ("kr", 2), "NOK": ("kr", 2), "DKK": ("kr", 2), "AUD": ("A$", 2), "CAD": ("C$", 2),
        "NZD": ("NZ$", 2), "KRW": ("₩", 0), "ISK": ("kr", 0), "HUF": ("Ft", 2), "BRL": ("R$", 2),
    ]

    public static let euro = Currency(code: "EUR")!

    /// Nil unless `code` is three capital letters A–Z (ISO 4217's form).
    public init?(code: String) {
        guard code.utf8.count == 3, code.utf8.allSatisfy({ (65...90).contains($0) }) else { return nil }
        self.code = code
        let known = Self.known[code]
        symbol = known?.symbol ?? code
        decimals = known?.decimals ?? 2
    }

    public var description: String { code }

    /// An amount for people: `€1.23`, `−€0.45`, `CHF 1.20`, `12.30 kr` (the sign a true minus).
    public func text(_ amount: Double) -> String { written(amount, decimals: decimals) }

    /// `amount` to the smallest unit its text shows (a cent, a yen): what a widget that shows
    /// money compares, so that it moves when the shown figure does.
    public func rounded(_ amount: Double) -> Double {
        PatchPolicy.quantize(amount, step: decimals == 0 ? 1 : 1 / Double(Self.power(decimals)))
    }

    /// A price per kWh for people, with a tenth of a cent: `€0.312/kWh`, `0.500 kr/kWh`.
    public func priceText(_ pricePerKWh: Double) -> String { written(pricePerKWh, decimals: 3) + "/kWh" }

    /// `value` with `decimals` digits, its sign a true minus unless it rounds to 0, the symbol
    /// where the custom has it: letters after the number (kr, zł, Kč, Ft), a sign before it.
    func written(_ value: Double, decimals: Int) -> String {
        let magnitude = PatchPolicy.quantize(abs(value), step: decimals == 0 ? 1 : 1 / Double(Self.power(decimals)))
        let digits = Self.fixed(magnitude, decimals: decimals)
        let sign = value < 0 && magnitude > 0 ? "−" : ""
        if symbol.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic }), symbol != code {
            return "\(sign)\(digits) \(symbol)"
        }
        return symbol == code ? "\(sign)\(code) \(digits)" : "\(sign)\(symbol)\(digits)"
    }

    static func power(_ decimals: Int) -> Int { (0..<decimals).reduce(1) { value, _ in value * 10 } }

    /// `value` (≥ 0, already rounded) with exactly `decimals` digits after the point.
    static func fixed(_ value: Double, decimals: Int) -> String {
        let scaled = Int((value * Double(power(decimals))).rounded())
        guard decimals > 0 else { return "\(scaled)" }
        let whole = scaled / power(decimals)
        var fraction = "\(scaled % power(decimals))"
        while fraction.count < decimals { fraction = "0" + fraction }
        return "\(whole).\(fraction)"
    }
}
