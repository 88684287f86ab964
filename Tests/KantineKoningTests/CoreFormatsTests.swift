import KKPushCore
import KantineKoning
import Testing

/// The Kantine Koning side of checks whose other side is in KKPushCoreTests: the payload files of
/// `PayloadFileLintTests` read back as the app's pushes, and `Enrollment.parseDate` falls back where
/// `UTCTimestamp.parse` stops.
@Suite("Kantine Koning reads of KKPushCore formats")
struct CoreFormatsTests {
    @Test("a Simulator .apns file's payload is the dienst update the app reads")
    func simulatorFilePush() throws {
        let file = PayloadFile.read(try coreFixture("dienst-update.apns"), fileName: "dienst-update.apns")
        #expect(KantineKoningPush.parse(file.payload) == .dienstUpdate(tenant: "vv-oranje", dienstID: "4711"))
    }

    @Test("a plain JSON file's payload is the cta push the app reads")
    func plainFilePush() throws {
        let file = PayloadFile.read(try coreFixture("cta.json"), fileName: "cta.json")
        #expect(
            KantineKoningPush.parse(file.payload)
                == .cta(token: "abc123", url: "kantinekoning://cta/shift-volunteer?token=abc123"))
    }

    @Test("Enrollment.parseDate still reads offsets and fractions (through Foundation)")
    func fallback() {
        #expect(Enrollment.parseDate("2027-01-15T10:30:00+01:00") == UTCTimestamp.parse("2027-01-15T09:30:00Z"))
        #expect(Enrollment.parseDate("2027-01-15T09:30:00.750Z") == UTCTimestamp.parse("2027-01-15T09:30:00Z"))
        #expect(Enrollment.parseDate("gisteren") == nil)
    }
}
