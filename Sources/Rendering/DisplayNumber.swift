import FlowCore
import FoundationEssentials

/// Numbers as the pictures print them: rates with their unit, totals in kWh, percentages. Written
/// out digit by digit, so the text never depends on a locale and is the same on every machine.
public enum DisplayNumber {
    /// `value` with exactly `decimals` decimals: `fixed(12.345, decimals: 1)` is `12.3`. Negative
    /// numbers take `minus` (the typographic − in pictures, `-` in coordinates); −0 prints as 0.
    public static func fixed(_ value: Double, decimals: Int, minus: String = "−") -> String {
        guard value.isFinite else { return "–" }
        var scale: Int64 = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * Double(scale)).rounded()
        // Beyond what the digits below can hold (no meter reads that): the shortest exact form.
        guard scaled < 1e17 else { return (value < 0 ? minus : "") + JSONValue.format(abs(value).rounded()) }
        let whole = Int64(scaled)
        var text = String(whole / scale)
        if decimals > 0 {
            let fraction = String(whole % scale)
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return (value < 0 && whole != 0 ? minus : "") + text
    }

    /// A rate's size (its direction is the arrow's): whole numbers as they are, small fractional
    /// ones with one decimal. `rate(-1400, unit: "W")` is `1400 W`, `rate(2.35, unit: "kW")` `2.4 kW`.
    public static func rate(_ rate: Double, unit: String?) -> String {
        let size = abs(rate)
        let rounded = (size * 10).rounded() / 10
        let digits = fixed(size, decimals: rounded == rounded.rounded() || size >= 100 ? 0 : 1)
        return unit.map { $0.isEmpty ? digits : "\(digits) \($0)" } ?? digits
    }

    /// The day's total with the decimals it was sent with, one or two (`12.4 kWh`, `12.0 kWh`,
    /// `0.22 kWh`): a total rounded to 0.1 kWh does not pretend to be exact to the watt-hour.
    public static func total(_ total: Double, unit: String) -> String {
        let tenths = total * 10
        let digits = fixed(total, decimals: abs(tenths - tenths.rounded()) < 1e-6 ? 1 : 2)
        return unit.isEmpty ? digits : "\(digits) \(unit)"
    }

    /// The unit of a node's daily total for a content unit: energy for power (`W`, `kW` → `kWh`),
    /// the amount for a flow per time (`L/min` → `L`), nothing for anything else.
    public static func totalUnit(forRateUnit unit: String?) -> String {
        guard let unit, !unit.isEmpty else { return "kWh" }
        if unit == "W" || unit == "kW" { return "kWh" }
        if let slash = unit.lastIndex(of: "/") { return String(unit[..<slash]) }
        return ""
    }

    /// A whole percentage: `0.42` is `42%`.
    public static func percent(_ fraction: Double) -> String { fixed(fraction * 100, decimals: 0) + "%" }
}
