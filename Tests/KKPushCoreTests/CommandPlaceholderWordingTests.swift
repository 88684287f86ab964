import KKPushCore
import Testing

@Suite("Library wording: command placeholders")
struct CommandPlaceholderWordingTests {
    @Test("plain drops the command placeholders and keeps the API names")
    func plain() {
        #expect(
            Wording.plain("Check the key id (keyID); decoding the provider token shows kid and iss (jwtDecodeCommand).")
                == "Check the key id (keyID); decoding the provider token shows kid and iss.")
        #expect(
            Wording.plain("Create it first (channelCreateCommand), or POST /1/apps/<bundleId>/channels.")
                == "Create it first, or POST /1/apps/<bundleId>/channels.")
        #expect(Wording.plain("nothing to drop (port 2197)") == "nothing to drop (port 2197)")
    }
}
