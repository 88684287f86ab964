import KKPushCore
import KKPushTestSupport
import KantineKoning
import PropertyBased
import Testing

/// One deep link or QR payload and what it must parse to (or the error code and the parameter named).
struct LinkCase: Sendable, CustomTestStringConvertible {
    var link: String
    var expected: KantineKoningLink?
    var errorCode: String? = nil
    var errorMentions: String? = nil
    var testDescription: String { link }
}

let linkCases: [LinkCase] = [
    LinkCase(link: "kantinekoning://device-enroll?token=abc123", expected: .deviceEnroll(token: "abc123", web: false)),
    LinkCase(
        link: "https://kantinekoning.com/app/device-enroll?token=abc123",
        expected: .deviceEnroll(token: "abc123", web: true)),
    LinkCase(
        link: "https://www.kantinekoning.com/nl/leden/device-enroll?token=x.y-z",
        expected: .deviceEnroll(token: "x.y-z", web: true)),
    LinkCase(
        link: "https://kantinekoning.com/device-enroll?token=t%2B1", expected: .deviceEnroll(token: "t+1", web: true)),
    LinkCase(link: "kantinekoning://cta/shift-volunteer?token=cta-42", expected: .ctaShiftVolunteer(token: "cta-42")),
    LinkCase(
        link: "kantinekoning://tenant?slug=vv-oranje&name=VV%20Oranje",
        expected: .tenant(slug: "vv-oranje", name: "VV Oranje")),
    LinkCase(link: "kantinekoning://tenant?slug=vv-oranje", expected: .tenant(slug: "vv-oranje", name: nil)),
    LinkCase(
        link: "kantinekoning://invite?tenant=hc-zuid&tenant_name=HC%20Zuid",
        expected: .invite(tenant: "hc-zuid", tenantName: "HC Zuid")),
    LinkCase(
        link:
            "https://kantinekoning.com/qr?data=kantinekoning%3A%2F%2Ftenant%3Fslug%3Dvv-oranje%26name%3DVV%2520Oranje",
        expected: .tenant(slug: "vv-oranje", name: "VV Oranje")),
    LinkCase(
        link: "kantinekoning://scan?data=kantinekoning%3A%2F%2Finvite%3Ftenant%3Dhc-zuid%26tenant_name%3DHC",
        expected: .invite(tenant: "hc-zuid", tenantName: "HC")),
    LinkCase(
        link: "  KantineKoning://device-enroll?token=abc  ", expected: .deviceEnroll(token: "abc", web: false)),
    // Errors name what is wrong.
    LinkCase(
        link: "kantinekoning://device-enroll", expected: nil, errorCode: "link-missing-parameter",
        errorMentions: "'token'"),
    LinkCase(
        link: "kantinekoning://device-enroll?token=", expected: nil, errorCode: "link-missing-parameter",
        errorMentions: "'token'"),
    LinkCase(
        link: "kantinekoning://cta/shift-volunteer?tok=1", expected: nil, errorCode: "link-missing-parameter",
        errorMentions: "'token'"),
    LinkCase(
        link: "kantinekoning://tenant?name=VV", expected: nil, errorCode: "link-missing-parameter",
        errorMentions: "'slug'"),
    LinkCase(
        link: "kantinekoning://invite?tenant_name=HC", expected: nil, errorCode: "link-missing-parameter",
        errorMentions: "'tenant'"),
    LinkCase(
        link: "https://kantinekoning.com/qr?data=kantinekoning%3A%2F%2Ftenant", expected: nil,
        errorCode: "link-missing-parameter", errorMentions: "data= parameter"),
    LinkCase(
        link: "https://kantinekoning.com/qr?data=", expected: nil, errorCode: "link-missing-parameter",
        errorMentions: "'data'"),
    LinkCase(link: "kantinekoning://cta/other?token=1", expected: nil, errorCode: "link-unknown"),
    LinkCase(link: "kantinekoning://settings", expected: nil, errorCode: "link-unknown"),
    LinkCase(link: "https://evil.example/device-enroll?token=1", expected: nil, errorCode: "link-wrong-host"),
    LinkCase(link: "https://notkantinekoning.com/device-enroll?token=1", expected: nil, errorCode: "link-wrong-host"),
    LinkCase(link: "http://kantinekoning.com/device-enroll?token=1", expected: nil, errorCode: "link-not-https"),
    LinkCase(link: "https://kantinekoning.com/login?token=1", expected: nil, errorCode: "link-unknown"),
    LinkCase(link: "mailto:info@kantinekoning.com", expected: nil, errorCode: "link-unknown-scheme"),
    LinkCase(link: "", expected: nil, errorCode: "link-empty"),
    LinkCase(link: "not a link at all", expected: nil, errorCode: "link-malformed"),
]

@Suite("Kantine Koning deep links, QR payloads and pushes")
struct KantineKoningTests {
    @Test("deep links and QR payloads", arguments: linkCases)
    func links(_ c: LinkCase) {
        switch KantineKoningLink.parse(c.link) {
        case .success(let link):
            #expect(link == c.expected)
            #expect(c.errorCode == nil)
            // The canonical URL parses back to the same link.
            #expect(KantineKoningLink.parse(link.url) == .success(link))
        case .failure(let error):
            #expect(c.expected == nil, "unexpected error \(error.code): \(error.message)")
            #expect(error.code.rawValue == c.errorCode)
            if let mention = c.errorMentions { #expect(error.message.contains(mention), "\(error.message)") }
            #expect(error.fix != nil)
        }
    }

    @Test("any token survives the CTA link and push round trip")
    func ctaRoundTrip() async throws {
        let tokens = Gen.unicodeScalar(in: "!"..."~").array(of: 1...40).map { String(String.UnicodeScalarView($0)) }
        await propertyCheck(input: tokens) { token in
            let payload = try KantineKoningPush.cta(token: token)
            let kind = KantineKoningPush.parse(payload.encoded())
            #expect(kind == .cta(token: token, url: KantineKoningLink.ctaShiftVolunteer(token: token).url))
        }
    }

    @Test("the dienst-update background push is exactly what the app reads, and APNs accepts it")
    func dienstUpdate() throws {
        let payload = try KantineKoningPush.dienstUpdate(tenant: "vv-oranje", dienstID: "4711")
        #expect(
            payload.jsonString
                == #"{"aps":{"content-available":1},"type":"dienst_update","tenant":"vv-oranje","dienst_id":"4711"}"#)
        #expect(KantineKoningPush.parse(payload.encoded()) == .dienstUpdate(tenant: "vv-oranje", dienstID: "4711"))
        let request = try KantineKoningPush.dienstUpdateRequest(
            deviceToken: token64, bundleID: bundleID, tenant: "vv-oranje", dienstID: "4711")
        let check = APNsRequestRules.preflight(request, authentication: .token)
        #expect(check.problems.isEmpty, "\(check.problems)")
        #expect(request.pushType == .background && request.priority == 5)
    }

    @Test("the alert variant carries the same keys and is an alert")
    func dienstUpdateAlert() throws {
        let payload = try KantineKoningPush.dienstUpdateAlert(
            tenant: "vv-oranje", dienstID: "12", title: "Dienst", body: "Nieuw")
        #expect(payload.suggestedPushType == .alert)
        #expect(KantineKoningPush.parse(payload.encoded()) == .dienstUpdate(tenant: "vv-oranje", dienstID: "12"))
    }

    @Test("bad tenants, dienst ids and CTA tokens are errors that name the field")
    func badInput() {
        for (tenant, dienst, code) in [
            ("", "1", "kk-bad-tenant"), ("VV Oranje", "1", "kk-bad-tenant"), ("vv", "", "kk-bad-dienst-id"),
            ("vv", "1 2", "kk-bad-dienst-id"),
        ] {
            do throws(KKPushError) {
                _ = try KantineKoningPush.dienstUpdate(tenant: tenant, dienstID: dienst)
                Issue.record("expected \(code)")
            } catch {
                #expect(error.code.rawValue == code)
            }
        }
        do throws(KKPushError) {
            _ = try KantineKoningPush.cta(token: "a b")
            Issue.record("expected kk-bad-cta-token")
        } catch {
            #expect(error.code == .kkBadCtaToken)
        }
    }

    @Test(
        "received payloads the app does not act on are unknown",
        arguments: [
            #"{"aps":{"alert":"Hoi"}}"#, #"{"type":"dienst_update","tenant":"vv"}"#,
            #"{"type":"dienst_update","tenant":"VV X","dienst_id":"1"}"#,
            #"{"type":"cta","deep_link":"kantinekoning://tenant?slug=x"}"#,
            "not json", "[]",
        ])
    func unknownPayloads(_ text: String) {
        #expect(KantineKoningPush.parse(Array(text.utf8)) == .unknown)
    }

    @Test("a numeric dienst_id is read as its digits")
    func numericDienstID() {
        let text = #"{"aps":{"content-available":1},"type":"dienst_update","tenant":"vv","dienst_id":4711}"#
        #expect(KantineKoningPush.parse(Array(text.utf8)) == .dienstUpdate(tenant: "vv", dienstID: "4711"))
    }
}
