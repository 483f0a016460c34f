@testable import FlowCore
import TestSupport
import Testing

/// Number texts read as the general parse reads them, bit for bit: short decimals through the
/// fast path (an integer over a power of ten), everything else through `Double(String)`.
@Suite struct NumberTextTests {
    static func read(_ text: String) -> Double? {
        Array(text.utf8).withUnsafeBufferPointer(NumberText.double(ascii:))
    }

    /// What meters publish, and the edges of the fast path: 15 digits (in), 16 (out), a fraction
    /// of 14 digits, -0, a point without digits after it, an exponent.
    static let texts = [
        "0", "-0", "7", "1234", "-56.7", "0.1", "0.3", "2.675", "1e3", "12.5e-1", "424242", "-0.000001",
        "999999999999999", "9999999999999999", "0.12345678901234", "1.00000000000001", "123456789012.345",
        "9007199254740993", "1.7976931348623157e308", "4.9e-324", "00012", "1.", ".5",
    ]

    @Test(arguments: texts)
    func aNumberReadsAsTheGeneralParseReadsIt(_ text: String) throws {
        let expected = try #require(Double(text))
        let read = try #require(Self.read(text))
        #expect(read.bitPattern == expected.bitPattern, "\(text): \(read) against \(expected)")
    }

    /// The fast path takes exactly the short decimals.
    @Test(arguments: [("1234", true), ("-56.7", true), ("999999999999999", true), ("9999999999999999", false), ("1e3", false), ("1.", false), (".5", false), ("+5", false)])
    func theFastPathTakesShortDecimalsOnly(_ text: String, taken: Bool) {
        let bytes = Array(text.utf8)
        #expect((bytes.withUnsafeBufferPointer(NumberText.shortDecimal) != nil) == taken)
    }

    /// 100,000 random decimals of 1 to 15 digits with 0 to 14 of them after the point, either sign.
    @Test func randomShortDecimalsReadAsTheGeneralParseReadsThem() {
        var random = SplitMix64(seed: 7)
        for _ in 0..<100_000 {
            let count = Int.random(in: 1...15, using: &random)
            var digits = (0..<count).map { _ in String(Int.random(in: 0...9, using: &random)) }.joined()
            let fraction = Int.random(in: 0...min(14, count - 1), using: &random)
            if fraction > 0 { digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -fraction)) }
            let text = Bool.random(using: &random) ? "-" + digits : digits
            let read = Self.read(text)
            #expect(read?.bitPattern == Double(text)?.bitPattern, "\(text)")
        }
    }
}
