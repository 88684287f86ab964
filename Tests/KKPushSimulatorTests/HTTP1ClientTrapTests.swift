import Testing

@testable import KKPushHTTP

/// Issue #15: a peer's Content-Length never traps the app's HTTP client (`headerEnd + length` overflowed
/// for a length near Int.max, and a negative one made an inverted range).
@Suite("The app's HTTP client (HTTP1Client): Content-Length from the peer")
struct HTTP1ClientTrapTests {
    static func head(_ length: String) -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Length: \(length)\r\n\r\n{}".utf8)
    }

    @Test(
        "Lengths that are negative, huge or not numbers count as none",
        arguments: [
            "-5", "9223372036854775807", "9223372036854775808", "16777217", "x", "",
        ])
    func refused(length: String) {
        #expect(HTTP1Client.headerInfo(Self.head(length)) == nil)
    }

    @Test("A length from 0 to 16 MB is read")
    func accepted() throws {
        let info = try #require(HTTP1Client.headerInfo(Self.head("2")))
        #expect(info.1 == 2)
        #expect(HTTP1Client.headerInfo(Self.head("0"))?.1 == 0)
        #expect(HTTP1Client.headerInfo(Self.head("16777216"))?.1 == 16_777_216)
    }
}
