import Foundation

/// A 32-byte token as APNs issues them (64 lowercase hex digits).
let token64 = "5f0c1b6d9e2a47f3b8c0d1e2f3a4b5c6d7e8f90112233445566778899aabbccd"
/// The Kantine Koning bundle id used in tests.
let bundleID = "com.kantinekoning.app"

/// The bytes of one of KKPushCoreTests' payload fixtures.
func coreFixture(_ name: String) throws -> [UInt8] {
    let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("KKPushCoreTests/.fixtures")
    return [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
}
