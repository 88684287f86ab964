import Foundation
import KKPushCore
import KantineKoning

/// Targets of KKPushCore: JSON, payloads and `.apns` files, device tokens, deep links, the APNs
/// request rules the mock applies to what clients send.
enum CoreTargets {
    static let all: [FuzzTarget] = [json, payload, apnsFile, deviceToken, link, apnsRequest]

    /// kkpush's strict JSON parser, and the promise that what it encodes parses back to the same value.
    static let json = FuzzTarget(
        name: "json", maxLength: 4096,
        summary: "JSONValue.parse (strict RFC 8259), encoded() parses back to the same value"
    ) { bytes in
        guard let value = try? JSONValue.parse(bytes) else { return }
        let encoded = value.encoded()
        let again: JSONValue
        do {
            again = try JSONValue.parse(encoded)
        } catch {
            fuzzFailure("the encoding of a parsed value does not parse: \(error)")
        }
        fuzzCheck(again == value, "encoding and parsing again changed the value")
        fuzzCheck(again.encoded() == encoded, "the encoding is not stable")
        _ = value.typeName
        _ = value.intValue
        _ = value.doubleValue
        _ = JSONValue.lenient(text(bytes))
    }

    /// The payload model, the Kantine Koning reading of a payload, and the payload rules (`payload lint`).
    static let payload = FuzzTarget(
        name: "payload", maxLength: 6144,
        summary: "Payload(parsing:), KantineKoningPush.parse, PayloadLint and pre-flight for every push type"
    ) { bytes in
        let parsed = try? Payload(parsing: bytes)
        if let payload = parsed {
            let encoded = payload.encoded()
            _ = payload.suggestedPushType
            _ = payload.jsonString
            // What kkpush sends, read back, must send the same bytes again.
            guard let reread = try? Payload(parsing: encoded) else {
                fuzzFailure("Payload.encoded() of a parsed payload does not parse as a payload")
            }
            let second = reread.encoded()
            guard let third = try? Payload(parsing: second) else {
                fuzzFailure("the second encoding does not parse as a payload")
            }
            fuzzCheck(third.encoded() == second, "Payload's encoding is not stable after one round trip")
        }
        _ = KantineKoningPush.parse(bytes)
        // With the parse made above, as `PayloadFile.read` hands it to the CLI's lint: seven lints no longer
        // parse the payload seven times more.
        var file = PayloadFile(payload: bytes)
        file.parsed = parsed
        for type in [nil, PushType.alert, .background, .voip, .liveactivity, .location, .widgets] {
            let result = PayloadLint.lint(file, pushType: type, topic: FuzzFixtures.bundleID)
            _ = result.isValid
        }
        let request = NotificationRequest(
            deviceToken: FuzzFixtures.deviceToken, topic: FuzzFixtures.bundleID, pushType: .alert, payload: bytes)
        _ = APNsRequestRules.preflight(request, authentication: .token)
        _ = APNsRequestRules.preflight(request, authentication: .certificate(topics: [FuzzFixtures.bundleID]))
    }

    /// A payload file (`--payload`, `payload lint`): plain JSON or an Xcode Simulator `.apns` file.
    static let apnsFile = FuzzTarget(
        name: "apns-file", maxLength: 6144,
        summary: "PayloadFile.read (.apns: Simulator Target Bundle), then PayloadLint on the result"
    ) { bytes in
        let file = PayloadFile.read(bytes, fileName: "Push.apns")
        if file.isSimulatorFile {
            guard let parsed = try? Payload(parsing: file.payload) else {
                fuzzFailure("an .apns file's payload (the file without its Simulator Target Bundle) does not parse")
            }
            fuzzCheck(
                parsed.custom(PayloadFile.simulatorTargetBundleKey) == nil,
                "the payload read from an .apns file still has 'Simulator Target Bundle'")
            // Every byte but the member's is kept, so the payload is never longer than the file.
            fuzzCheck(file.payload.count < bytes.count, "the payload read from an .apns file is not shorter than it")
        } else {
            // Kept byte for byte, but for one final line ending (an editor's or a shell redirect's, not part
            // of the payload).
            fuzzCheck(
                file.payload == PayloadFile.withoutFinalLineEnding(bytes),
                "a plain payload file was not kept byte for byte (but for one final line ending)")
        }
        _ = PayloadLint.lint(file)
        _ = PayloadLint.lint(file, pushType: .background, priority: 5)
    }

    /// Device tokens as people, logs and apps give them.
    static let deviceToken = FuzzTarget(
        name: "device-token", maxLength: 512,
        summary: "DeviceToken.normalize / formatErrors; a normalised token is well formed and stays as it is"
    ) { bytes in
        let raw = text(bytes)
        let normalization = DeviceToken.normalize(raw)
        if let token = normalization.token {
            fuzzCheck(DeviceToken.isWellFormed(token), "normalize returned a token that is not well formed")
            let again = DeviceToken.normalize(token)
            fuzzCheck(again.token == token && again.problems.isEmpty, "a normalised token is normalised again")
        } else {
            fuzzCheck(normalization.problems.hasErrors, "normalize refused a token without an error")
        }
        _ = DeviceToken.formatErrors(raw)
        _ = DeviceToken.redacted(raw)
        let request = NotificationRequest(
            deviceToken: raw, topic: FuzzFixtures.bundleID, payload: Array(#"{"aps":{}}"#.utf8))
        _ = APNsRequestRules.checkTopicAndToken(
            request, topicRequired: true, allowedTopics: nil, usingCertificate: false)
    }

    /// Deep links and QR payloads, and the promise that a parsed link's canonical URL parses back to it.
    static let link = FuzzTarget(
        name: "link", maxLength: 1024,
        summary: "KantineKoningLink.parse (deep links, QR data= nesting); link.url parses back to the same link"
    ) { bytes in
        let raw = text(bytes)
        switch KantineKoningLink.parse(raw) {
        case .success(let link):
            let url = link.url
            guard let again = try? KantineKoningLink(parsing: url) else {
                fuzzFailure("the canonical URL of a parsed link does not parse: \(url)")
            }
            fuzzCheck(again == link, "the canonical URL parses to another link: \(url)")
            _ = link.token
        case .failure(let error):
            _ = error.message
        }
    }

    /// What a client sends the mock: the request line, headers and body, judged by the shared rules.
    /// Input: `METHOD PATH` on the first line, then `name: value` header lines, an empty line, the body.
    static let apnsRequest = FuzzTarget(
        name: "apns-request", maxLength: 6144,
        summary: "APNsRequestRules.checkRequestLine + later stages on a request as the mock receives it"
    ) { bytes in
        var rest = bytes
        var lines: [String] = []
        while !rest.isEmpty {
            let (line, remainder) = splitFirstLine(rest)
            rest = remainder
            if line.isEmpty || line == [0x0D] { break }
            lines.append(text(line.last == 0x0D ? Array(line.dropLast()) : line))
        }
        guard let first = lines.first else { return }
        let requestLine = first.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let method = String(requestLine[0])
        let path = requestLine.count > 1 ? String(requestLine[1]) : ""
        let headers = lines.dropFirst().map { line -> (name: String, value: String) in
            let pair = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(pair[0]), pair.count > 1 ? String(pair[1]).trimmingWhitespace() : "")
        }
        let received = ReceivedRequest(method: method, path: path, headers: headers, body: rest)
        let (request, check) = APNsRequestRules.checkRequestLine(received)
        _ = check.isValid
        if let request {
            _ = APNsRequestRules.checkTopicAndToken(
                request, topicRequired: true, allowedTopics: nil, usingCertificate: false)
            _ = APNsRequestRules.checkTopicAndToken(
                request, topicRequired: false, allowedTopics: [FuzzFixtures.bundleID], usingCertificate: true)
            _ = APNsRequestRules.checkPayload(request)
            _ = APNsRequestRules.preflight(request, authentication: .token)
        }
    }
}
