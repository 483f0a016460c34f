import Rendering
import Testing

@Suite struct DisplayNumberTests {
    @Test(arguments: [
        (3200.0, "W", "3200 W"), (-1400, "W", "1400 W"), (612.4, "W", "612 W"), (71, "W", "71 W"), (0, "W", "0 W"),
        (-0.0, "W", "0 W"), (2.35, "kW", "2.4 kW"), (2, "kW", "2 kW"), (0.04, "kW", "0 kW"), (12, "L/min", "12 L/min"),
    ])
    func rates(value: Double, unit: String, text: String) {
        #expect(DisplayNumber.rate(value, unit: unit) == text)
    }

    @Test func aRateWithoutUnitIsTheNumber() {
        #expect(DisplayNumber.rate(1000, unit: nil) == "1000")
    }

    @Test(arguments: [(12.4, "12.4 kWh"), (12, "12.0 kWh"), (0.22, "0.22 kWh"), (0.8, "0.8 kWh"), (0, "0.0 kWh"), (1234.5, "1234.5 kWh")])
    func totals(value: Double, text: String) {
        #expect(DisplayNumber.total(value, unit: "kWh") == text)
    }

    @Test(arguments: [(nil as String?, "kWh"), ("W", "kWh"), ("kW", "kWh"), ("L/min", "L"), ("m³/h", "m³"), ("bar", "")])
    func totalUnits(rateUnit: String?, totalUnit: String) {
        #expect(DisplayNumber.totalUnit(forRateUnit: rateUnit) == totalUnit)
    }

    @Test(arguments: [(12.345, 1, "12.3"), (-2.5, 0, "−3"), (-0.004, 2, "0.00"), (0.5, 2, "0.50"), (1e20, 0, "1e+20")])
    func fixedDecimals(value: Double, decimals: Int, text: String) {
        #expect(DisplayNumber.fixed(value, decimals: decimals) == text)
    }

    @Test(arguments: [(0.42, "42%"), (0.996, "100%"), (0, "0%"), (0.005, "1%")])
    func percentages(fraction: Double, text: String) {
        #expect(DisplayNumber.percent(fraction) == text)
    }
}

@Suite struct WidgetColorTests {
    @Test(arguments: [
        ("yellow", "#ffcc00"), ("Cyan", "#32ade6"), ("gray", "#8e8e93"), ("grey", "#8e8e93"), ("#FC0", "#ffcc00"),
        ("#34c759", "#34c759"), ("34C759", "#34c759"), ("#34c75980", "#34c759"),
    ])
    func colorsTheWidgetNames(text: String, hex: String) {
        #expect(WidgetColor(text)?.hex == hex)
    }

    /// Anything else is no color: it never reaches an attribute.
    @Test(arguments: ["", "#12345", "#ggg", "rgb(1,2,3)", "red\" onload=\"x", "url(#a)", "transparent"])
    func anythingElseIsNoColor(text: String) {
        #expect(WidgetColor(text) == nil)
    }
}
