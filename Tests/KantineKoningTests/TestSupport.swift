import KKPushTestSupport

/// The bytes of one of KKPushCoreTests' payload fixtures.
func coreFixture(_ name: String) throws -> [UInt8] {
    try Repository.bytes("Tests/KKPushCoreTests/.fixtures/" + name)
}
