import Foundation
import KKPushBackend
import KKPushClient
import KKPushCore
import KKPushStore
import KantineKoning

/// Targets of KKPushBackend: device JWTs, token-update bodies, the simulated backend's routes.
enum BackendTargets {
    static let all: [FuzzTarget] = [deviceJWT, tokenUpdate, backend, storeLocation]

    /// A `--db`/`--store` value or DATABASE_URL (libpq's `postgres://...` URLs and `key=value` strings) and a `--schema-map` file: parsed or
    /// refused with a KKPushError, never a crash; a URL's password never in its redacted form or its error.
    static let storeLocation = FuzzTarget(
        name: "store-location", maxLength: 4096,
        summary: "EnrollmentStoreLocation.parse / PostgresURL (libpq connection strings), EnrollmentTableMapping.parse"
    ) { bytes in
        let value = text(bytes)
        if let location = try? EnrollmentStoreLocation.parse(value, origin: "--db"),
            case .postgres(let url) = location.kind
        {
            // The redacted form, read by libpq again, holds no password but the mask (a check for the password's
            // text in it would misfire when the database name happened to hold the same text).
            if let again = try? PostgresURL(parsing: url.redacted, origin: "--db") {
                fuzzCheck(again.password == nil || again.password == "•••", "the redacted URL shows the password")
            }
            fuzzCheck(url.port >= 1 && url.port <= 65535 && !url.host.isEmpty, "a bad URL parsed")
        }
        if let mapping = try? EnrollmentTableMapping.parse(Data(bytes), source: "fuzz") {
            let names = EnrollmentTableMapping.logicalColumns.map(mapping.column)
            fuzzCheck(Set(names).count == names.count, "two kkpush columns map to one column")
            for name in names {
                // Byte by byte: `"`, then the name's bytes with every `"` doubled, then `"`.
                let quoted = Array(EnrollmentTableMapping.quote(name).utf8)
                var expected: [UInt8] = [34]
                for byte in name.utf8 { expected += byte == 34 ? [34, 34] : [byte] }
                expected.append(34)
                fuzzCheck(quoted == expected, "an identifier quoted wrongly")
            }
        }
    }

    static let jwt: DeviceJWT = {
        do {
            return try DeviceJWT(secret: FuzzFixtures.deviceSecret, clock: FuzzFixtures.clock)
        } catch {
            fatalError("the fixed device-JWT secret is refused: \(error)")
        }
    }()

    /// A bearer token as the backend and `token verify` read it, with the fixed secret and clock.
    static let deviceJWT = FuzzTarget(
        name: "device-jwt", maxLength: 2048,
        summary:
            "DeviceJWT.verify (HS256, fixed secret and clock), decodeUnverified, TokenUpdateVerifier.bearerProblems"
    ) { bytes in
        let token = text(bytes)
        // A verifier of its own per input: the verified-token cache must not carry one input into the next.
        guard let verifier = try? DeviceJWT(secret: FuzzFixtures.deviceSecret, clock: FuzzFixtures.clock) else {
            fuzzFailure("the fixed device-JWT secret is refused")
        }
        if let claims = try? verifier.verify(token) {
            // A token that verifies, signed again, verifies to the same claims.
            guard let signed = try? verifier.sign(claims), let again = try? verifier.verify(signed) else {
                fuzzFailure("the claims of a verified token cannot be signed and verified again")
            }
            fuzzCheck(again == claims, "signing verified claims again changed them")
            for enrollment in FuzzFixtures.enrollments() { _ = claims.problems(against: enrollment) }
        }
        _ = try? verifier.verify(token, tenant: "vvwilhelmus")
        _ = try? DeviceJWT.decodeUnverified(token)
        _ = TokenUpdateVerifier(jwt: verifier).bearerProblems("Bearer " + token, expectedTenant: "vvwilhelmus")
        _ = TokenUpdateVerifier(jwt: nil, clock: FuzzFixtures.clock).bearerProblems(token, expectedTenant: "agovv")
    }

    /// The contexts a token-update body is judged in: none known; the backend's (enrollment and claims);
    /// a known environment with server overrides; a test user.
    static let contexts: [TokenUpdateContext] = {
        let enrollment = FuzzFixtures.enrollments()[0]
        let claims = DeviceClaims(enrollment: enrollment, issuedAt: FuzzFixtures.now, lifetime: 3600)
        return [
            TokenUpdateContext(),
            TokenUpdateContext(enrollment: enrollment, claims: claims),
            TokenUpdateContext(
                knownEnvironment: .sandbox, claims: claims,
                settings: ServerAPNsSettings(forceEnv: "production", legacyAPNSEnv: "sandbox"), expectedBundleID: nil),
            TokenUpdateContext(knownEnvironment: .production, isTestUser: true),
        ]
    }()

    /// A token-update body (`POST /api/mobile/v1/device/apns-token`, `token verify`): the JSON decode and
    /// every check, in each context; a body that passes is checked again as the typed update.
    static let tokenUpdate = FuzzTarget(
        name: "token-update", maxLength: 4096,
        summary: "TokenUpdateRules.check(body:) in four contexts (the backend's JSON decode + checks)"
    ) { bytes in
        let body = Data(bytes)
        for context in contexts {
            let report = TokenUpdateRules.check(body: body, context: context)
            _ = report.codes
            _ = report.resolvedEnvironment
            if let update = report.update {
                _ = try? update.jsonData()
                _ = TokenUpdateRules.check(update, context: context)
            }
        }
    }

    /// Answers pushes without a network: accepted, except tokens starting with `0` (410 Unregistered)
    /// and `f` (a failure), so the fan-out's clearing and reporting run too.
    struct FakeSender: PushSender {
        func send(_ request: NotificationRequest, to environment: APNsEnvironment) async -> PushDelivery {
            switch request.deviceToken.first {
            case "0": .rejected(status: 410, reason: .unregistered, timestamp: FuzzFixtures.now)
            case "f": .failed(message: "connection: fuzz")
            default: .accepted(apnsID: "F6A1A5C4-0E4B-4C3D-9F2A-1B2C3D4E5F60")
            }
        }
    }

    /// A few diensten of the seed (two teams of vvwilhelmus, one of agovv).
    static let diensten: [Dienst] = DienstStore.seed(now: FuzzFixtures.now).filter {
        ["vvwilhelmus-jo11-3-4", "vvwilhelmus-jo11-3-5", "vvwilhelmus-jo11-5-5", "agovv-jo10-5-5"].contains($0.id)
    }

    /// One request to the simulated backend's router, on a fresh store. Input: `METHOD TARGET` on the
    /// first line, the `Authorization` header value on the second (empty: none), the body after it.
    static let backend = FuzzTarget(
        name: "backend", maxLength: 4096,
        summary: "BackendRouter.handle: app API (token update, diensten) and admin API, query strings and bodies"
    ) { bytes in
        let (line, afterLine) = splitFirstLine(bytes)
        let (authorization, body) = splitFirstLine(afterLine)
        let requestLine = text(line)
        let space = requestLine.firstIndex(of: " ") ?? requestLine.endIndex
        let method = String(requestLine[..<space])
        let target = space < requestLine.endIndex ? String(requestLine[requestLine.index(after: space)...]) : "/"
        let request = BackendRequest(
            method: method, target: target, authorization: authorization.isEmpty ? nil : text(authorization),
            body: Data(body))
        let response = runBlocking {
            let router = BackendRouter(
                store: InMemoryEnrollmentStore(FuzzFixtures.enrollments()), diensten: DienstStore(diensten), jwt: jwt,
                sender: FakeSender(), clock: FuzzFixtures.clock)
            return await router.handle(request)
        }
        fuzzCheck((200..<600).contains(response.status), "the backend answered status \(response.status)")
        fuzzCheck(
            (try? JSONValue.parse(Array(response.body))) != nil,
            "the backend answered a body that is not JSON (status \(response.status))")
    }
}
