import FuzzChecks
import Testing

/// Every committed fuzz input (the seeds, and each input that once broke a property, kept as a
/// regression) still holds its target's property.
@Suite struct FuzzCorpusTests {
    @Test(arguments: fuzzProperties.map { $0.name })
    func corpusHoldsItsProperty(_ target: String) throws {
        let property = try #require(fuzzProperties.first { $0.name == target })
        let files = FuzzCorpus.folders(of: property).flatMap { FuzzCorpus.files(under: "\(FuzzCorpus.repository)/\($0)") }
        #expect(!files.isEmpty, "no corpus for \(target)")
        for file in files {
            let bytes = try #require(FuzzCorpus.read(file), "\(file) cannot be read")
            let findings = property.check(bytes)
            #expect(findings.isEmpty, "\(file): \(findings.joined(separator: "; "))")
        }
    }
}
