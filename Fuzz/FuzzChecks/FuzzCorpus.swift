import Glibc

/// The inputs committed for a fuzz target: its seeds and every input that once failed, replayed
/// by `swift test` and by the target built without the fuzzer; `make fuzz` starts libFuzzer from them.
public enum FuzzCorpus {
    /// The repository this file was compiled in (the corpus is read from the checkout, not installed).
    public static let repository: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Fuzz/FuzzChecks/FuzzCorpus.swift
        return parts.joined(separator: "/")
    }()

    /// The folders a target's inputs come from, relative to the repository: `Fuzz/Corpus/<name>`
    /// and the target's `sharedSeedFolders`.
    public static func folders(of property: any FuzzProperty.Type) -> [String] {
        ["Fuzz/Corpus/\(property.name)"] + property.sharedSeedFolders
    }

    /// Every regular file under `path` (itself, when it is a file), sorted, hidden ones left out.
    public static func files(under path: String) -> [String] {
        var status = stat()
        guard stat(path, &status) == 0 else { return [] }
        guard status.st_mode & S_IFMT == S_IFDIR else { return [path] }
        guard let folder = opendir(path) else { return [] }
        defer { closedir(folder) }
        var found: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(".") { continue }
            found += files(under: "\(path)/\(name)")
        }
        return found.sorted()
    }

    /// A file's bytes; nil when it cannot be read.
    public static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            bytes += chunk[..<count]
            if count < chunk.count { return ferror(file) == 0 ? bytes : nil }
        }
    }
}
