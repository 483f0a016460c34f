/// The software's own name and version, said by `--version`, at start, and to Home Assistant.
public enum Flowbridge {
    public static let version = "0.1.0"
}
