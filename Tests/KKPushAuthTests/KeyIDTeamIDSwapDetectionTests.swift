import KKPushAuth
import KKPushCore
import Testing

@Suite("Key id / team id swap detection")
struct KeyIDTeamIDSwapDetectionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var file: String?
        var keyID: String
        var teamID: String
        var codes: [String]
        var testDescription: String { "\(file ?? "no file") kid=\(keyID) team=\(teamID)" }
    }

    static let cases: [Case] = [
        Case(file: "/keys/AuthKey_KKTEST0001.p8", keyID: "KKTEST0001", teamID: "KKTEAM0001", codes: []),
        Case(
            file: "/keys/AuthKey_KKTEST0001.p8", keyID: "KKTEAM0001", teamID: "KKTEST0001", codes: ["key-team-swapped"]),
        Case(file: "AuthKey_KKTEST0001.p8", keyID: "OTHERKEY01", teamID: "KKTEST0001", codes: ["key-team-swapped"]),
        Case(file: "AuthKey_KKTEST0001.p8", keyID: "KKTEST0002", teamID: "KKTEAM0001", codes: ["key-id-mismatch"]),
        Case(file: "key.p8", keyID: "KKTEST0001", teamID: "KKTEAM0001", codes: []),
        Case(file: nil, keyID: "KKTEST0001", teamID: "KKTEST0001", codes: ["key-team-swapped"]),
        Case(file: nil, keyID: "kktest1", teamID: "KKTEAM0001", codes: ["key-id-format"]),
        Case(file: nil, keyID: "KKTEST0001", teamID: "TEAM", codes: ["team-id-format"]),
    ]

    @Test("Swaps and mismatches are warned about", arguments: cases)
    func check(testCase: Case) {
        let problems = KeyTeamSwapCheck.check(keyFile: testCase.file, keyID: testCase.keyID, teamID: testCase.teamID)
        #expect(problems.map(\.code.rawValue) == testCase.codes)
        #expect(problems.allSatisfy { $0.severity == .warning && !$0.fix.isEmpty })
    }

    @Test(
        "Key id from Apple's file name",
        arguments: [
            ("AuthKey_ABCDE12345.p8", "ABCDE12345"), ("/a/b/AuthKey_KKTEST0001.p8", "KKTEST0001"),
            ("AuthKey_short.p8", nil), ("key.p8", nil),
        ])
    func fileName(path: String, expected: String?) {
        #expect(KeyTeamSwapCheck.keyID(fromFileName: path) == expected)
    }
}
