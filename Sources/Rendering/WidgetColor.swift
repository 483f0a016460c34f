import FlowCore

/// A color as the widget takes it (a named system color or hex, `spec/flow-template.txt`), as the
/// `#rrggbb` an SVG understands. Anything else reads as no color: a typo in a config must not
/// break the picture, and nothing but a checked color reaches an attribute.
public struct WidgetColor: Sendable, Hashable {
    public let red: Int
    public let green: Int
    public let blue: Int

    public init(red: Int, green: Int, blue: Int) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// `yellow`, `#FC0`, `#ffcc00`, `#ffcc00ff` (the alpha is dropped); nil for anything else.
    public init?(_ text: String?) {
        guard let text = text?.lowercased() else { return nil }
        if let hex = Self.named[text] {
            self = hex
            return
        }
        var digits = Substring(text)
        if digits.first == "#" { digits.removeFirst() }
        guard [3, 6, 8].contains(digits.count), let value = UInt32(digits, radix: 16) else { return nil }
        switch digits.count {
        case 3:
            self.init(red: Int(value >> 8 & 0xF) * 17, green: Int(value >> 4 & 0xF) * 17, blue: Int(value & 0xF) * 17)
        case 6:
            self.init(red: Int(value >> 16 & 0xFF), green: Int(value >> 8 & 0xFF), blue: Int(value & 0xFF))
        default:
            self.init(red: Int(value >> 24 & 0xFF), green: Int(value >> 16 & 0xFF), blue: Int(value >> 8 & 0xFF))
        }
    }

    /// The system colors the widget names, in their light-mode values.
    static let named: [String: WidgetColor] = [
        "red": WidgetColor(0xFF3B30), "orange": WidgetColor(0xFF9500), "yellow": WidgetColor(0xFFCC00),
        "green": WidgetColor(0x34C759), "mint": WidgetColor(0x00C7BE), "teal": WidgetColor(0x30B0C7),
        "cyan": WidgetColor(0x32ADE6), "blue": WidgetColor(0x007AFF), "indigo": WidgetColor(0x5856D6),
        "purple": WidgetColor(0xAF52DE), "pink": WidgetColor(0xFF2D55), "brown": WidgetColor(0xA2845E),
        "gray": .gray, "grey": .gray, "black": WidgetColor(0x000000), "white": WidgetColor(0xFFFFFF),
    ]

    private init(_ rgb: Int) { self.init(red: rgb >> 16 & 0xFF, green: rgb >> 8 & 0xFF, blue: rgb & 0xFF) }

    public static let gray = WidgetColor(0x8E8E93)
    static let white = WidgetColor(0xFFFFFF)
    static let ink = WidgetColor(0x1C1C1E)
    static let paleInk = WidgetColor(0x6E6E73)
    static let hairline = WidgetColor(0xD1D1D6)

    /// `#rrggbb`.
    public var hex: String {
        let digits = Array("0123456789abcdef")
        var text = "#"
        for part in [red, green, blue] { text += String(digits[part >> 4]) + String(digits[part & 0xF]) }
        return text
    }

    /// Relative luminance, 0 black … 1 white: WCAG's weights with a gamma of 2 instead of the sRGB
    /// curve, which is close enough to choose a text color and needs no math library.
    var luminance: Double {
        func linear(_ part: Int) -> Double { Double(part) * Double(part) / (255 * 255) }
        return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)
    }

    /// The color for a line or a stroke on a light background: light colors (yellow, mint) darkened
    /// until they stand out from white.
    var onLight: WidgetColor {
        guard luminance > 0.35 else { return self }
        return mixed(with: WidgetColor(0x000000), amount: 0.3)
    }

    /// Text that reads on this color as a background: ink on light, white on dark.
    var readableText: WidgetColor { luminance > 0.4 ? Self.ink : Self.white }

    func mixed(with other: WidgetColor, amount: Double) -> WidgetColor {
        func mix(_ a: Int, _ b: Int) -> Int { Int((Double(a) * (1 - amount) + Double(b) * amount).rounded()) }
        return WidgetColor(red: mix(red, other.red), green: mix(green, other.green), blue: mix(blue, other.blue))
    }

    /// Drawn for a node without a color of its own, by slot: inputs warm, the output blue, the
    /// storage green, the exchange violet; each input its own.
    static func slotDefault(_ place: NodePlace) -> WidgetColor {
        switch place {
        case .input(let index): [WidgetColor(0xFF9500), WidgetColor(0xFFCC00), WidgetColor(0xFF2D55)][min(index, 2)]
        case .output: WidgetColor(0x007AFF)
        case .storage: WidgetColor(0x34C759)
        case .exchange: WidgetColor(0x5856D6)
        }
    }

    /// Colors for chart lines whose nodes would otherwise share one.
    static let spare: [WidgetColor] = [
        WidgetColor(0xAF52DE), WidgetColor(0xA2845E), WidgetColor(0x30B0C7), WidgetColor(0xFF3B30), WidgetColor(0x00C7BE),
    ]
}
