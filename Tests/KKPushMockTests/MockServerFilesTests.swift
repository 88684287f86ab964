import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// The mock's input files, checked before a server starts (KKPushMock's `MockServerFiles`): each wrong file is named
/// by its API name, or by the caller's own word for it, with the code and kind that make it an unusable input.
@Suite("The mock's files, checked before it starts")
struct MockServerFilesTests {
    static let certificate = Fixtures.path("server.crt")
    static let key = Fixtures.path("server.key")

    /// The error `files` throws when applied to a default configuration (a test fails without one).
    static func failure(_ files: MockServerFiles) throws -> KKPushError {
        var configuration = MockServerConfiguration()
        return try #require(throws: KKPushError.self) { try files.apply(to: &configuration) }
    }

    @Test("A missing, wrong or misplaced file is named by its API name, as an unusable input")
    func namedByAPIName() throws {
        var missing = MockServerFiles()
        missing.certificateFile = "/nonexistent/server.crt"
        missing.privateKeyFile = Self.key
        let notThere = try Self.failure(missing)
        #expect(notThere.code == .fileMissing && notThere.code.kind == .input)
        #expect(notThere.message == "The server certificate (certificateFile) /nonexistent/server.crt does not exist.")

        var swapped = MockServerFiles()
        swapped.certificateFile = Self.key
        swapped.privateKeyFile = Self.certificate
        let noPEM = try Self.failure(swapped)
        #expect(noPEM.code == .mockPemInvalid && noPEM.code.kind == .input)
        #expect(noPEM.message == "The server certificate (certificateFile) \(Self.key) holds no PEM certificate.")

        var folder = MockServerFiles()
        folder.certificatesDirectory = Self.certificate
        let notFolder = try Self.failure(folder)
        #expect(notFolder.code == .mockCertificatesInvalid)
        #expect(notFolder.message == "(certificatesDirectory) \(Self.certificate) is a file, not a folder.")
        #expect(notFolder.fix?.contains("(certificateFile) and (privateKeyFile)") == true, "\(notFolder.fix ?? "")")
    }

    @Test("A certificates folder without server.key, and a key file the mock cannot verify with, are refused")
    func folderAndKeys() throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-mock-files")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(
            atPath: Self.certificate, toPath: dir.appendingPathComponent("server.crt").path)
        var files = MockServerFiles()
        files.certificatesDirectory = dir.path
        let noKey = try Self.failure(files)
        #expect(noKey.message == "The certificates folder (certificatesDirectory) \(dir.path) has no server.key.")
        // Naming the chain and key files, the folder need not hold them.
        files.certificateFile = Self.certificate
        files.privateKeyFile = Self.key
        var configuration = MockServerConfiguration()
        try files.apply(to: &configuration)
        #expect(configuration.certificatesDirectory == dir.path && configuration.certificateFile == Self.certificate)

        // The server's certificate is no provider key: the mock could verify no token with it.
        var keys = MockServerFiles()
        keys.keyFiles = [.init(path: Self.certificate, keyID: "ABCDE12345", teamID: "ABCDE12345")]
        let badKey = try Self.failure(keys)
        #expect(badKey.code == .mockKeyFileInvalid && badKey.code.kind == .input)
        #expect(badKey.message.hasPrefix("(keyFiles) \(Self.certificate): "), "\(badKey.message)")
    }

    @Test("The caller's label names the inputs its way; good files set the configuration, the keys added")
    func labelsAndApply() throws {
        var files = MockServerFiles()
        files.caFile = "/nonexistent/ca.crt"
        files.label = { $0 == "caFile" ? "--ca" : "(\($0))" }
        #expect(try Self.failure(files).message == "The CA certificate --ca /nonexistent/ca.crt does not exist.")

        var good = MockServerFiles()
        good.certificatesDirectory = Fixtures.certificates
        good.caFile = Fixtures.path("ca.crt")
        good.savedPushesFile = "/tmp/kkpush-saved-\(UUID().uuidString).json"
        good.keyFiles = [
            .init(
                path: Fixtures.path("AuthKey_KKTEST0001.p8"), keyID: "KKTEST0001", teamID: "KKTEAM0001",
                environments: [.sandbox])
        ]
        var configuration = MockServerConfiguration()
        try good.apply(to: &configuration)
        #expect(configuration.caFile == good.caFile && configuration.savedPushesFile == good.savedPushesFile)
        #expect(configuration.keys.map(\.keyID) == ["KKTEST0001"] && configuration.keys[0].environments == [.sandbox])
    }
}
