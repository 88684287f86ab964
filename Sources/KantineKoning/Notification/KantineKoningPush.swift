public import KKPushCore

/// The pushes the Kantine Koning app acts on, and how to read them back.
///
/// Custom top-level keys (the simulated app reads exactly these):
/// - `type`: `"dienst_update"` or `"cta"`;
/// - `tenant`: the club's slug (lowercase letters, digits, `-`, `_`);
/// - `dienst_id`: the shift's id (a string);
/// - `deep_link`: the CTA link, `kantinekoning://cta/shift-volunteer?token=…`.
///
/// The dienst update is a background push (`{"aps":{"content-available":1},"type":"dienst_update",
/// "tenant":"<slug>","dienst_id":"<id>"}`, push type background, priority 5), which the app answers by
/// refreshing its diensten; its alert variant adds a title and body (push type alert) and the app
/// refreshes as well when it is opened. The CTA push is an alert carrying the deep link.
public enum KantineKoningPush {
    /// The custom key naming the kind of push.
    public static let typeKey = "type"
    /// The custom key with the club's slug.
    public static let tenantKey = "tenant"
    /// The custom key with the shift's id.
    public static let dienstIDKey = "dienst_id"
    /// The custom key with the CTA deep link.
    public static let deepLinkKey = "deep_link"
    /// The `type` of a dienst update.
    public static let dienstUpdateType = "dienst_update"
    /// The `type` of a CTA push.
    public static let ctaType = "cta"

    /// The dienst-update background push: `content-available: 1` and the tenant and dienst id.
    /// Throws `kk-bad-tenant` or `kk-bad-dienst-id` for an empty or malformed value.
    public static func dienstUpdate(tenant: String, dienstID: String) throws(KKPushError) -> Payload {
        try validate(tenant: tenant, dienstID: dienstID)
        return Payload.background(custom: [
            JSONMember(typeKey, .string(dienstUpdateType)), JSONMember(tenantKey, .string(tenant)),
            JSONMember(dienstIDKey, .string(dienstID)),
        ])
    }

    /// The alert variant of the dienst update: the same custom keys, with a visible title and body.
    public static func dienstUpdateAlert(
        tenant: String, dienstID: String, title: String = "Dienst gewijzigd",
        body: String = "Er is een wijziging in je diensten."
    ) throws(KKPushError) -> Payload {
        try validate(tenant: tenant, dienstID: dienstID)
        var payload = Payload.alert(title: title, body: body)
        payload.aps?.sound = .default
        payload.setCustom(typeKey, .string(dienstUpdateType))
        payload.setCustom(tenantKey, .string(tenant))
        payload.setCustom(dienstIDKey, .string(dienstID))
        return payload
    }

    /// The CTA push: an alert with `deep_link` = `kantinekoning://cta/shift-volunteer?token=<token>`.
    /// Throws `kk-bad-cta-token` for an empty token or one with white space.
    public static func cta(
        token: String, title: String = "Vrijwilligers gezocht", body: String = "Kun jij een dienst draaien?"
    ) throws(KKPushError) -> Payload {
        guard !token.isEmpty, !token.contains(where: \.isWhitespace) else {
            throw KKPushError(
                code: .kkBadCtaToken, message: "The CTA token '\(token)' is empty or contains white space.",
                fix: "Pass the CTA token the backend issued (ctaToken), e.g. abc123.")
        }
        var payload = Payload.alert(title: title, body: body)
        payload.aps?.sound = .default
        payload.setCustom(typeKey, .string(ctaType))
        payload.setCustom(deepLinkKey, .string(KantineKoningLink.ctaShiftVolunteer(token: token).url))
        return payload
    }

    /// The request for a dienst-update background push: push type background, priority 5, topic the bundle id.
    public static func dienstUpdateRequest(
        deviceToken: String, bundleID: String, tenant: String, dienstID: String
    ) throws(KKPushError) -> NotificationRequest {
        NotificationRequest(
            deviceToken: deviceToken, topic: bundleID, pushType: .background, priority: 5,
            payload: try dienstUpdate(tenant: tenant, dienstID: dienstID).encoded())
    }

    /// Reads a received payload as the app would.
    public static func parse(_ payload: [UInt8]) -> KantineKoningPushKind {
        guard let parsed = try? Payload(parsing: payload) else { return .unknown }
        return kind(of: parsed)
    }

    /// Reads a payload as the app would: a dienst update (`type` dienst_update with `tenant` and
    /// `dienst_id`, background or alert), a CTA (a `deep_link` that parses as a shift-volunteer link),
    /// or unknown.
    public static func kind(of payload: Payload) -> KantineKoningPushKind {
        let type = payload.custom(typeKey)?.stringValue
        if type == dienstUpdateType || (type == nil && payload.custom(dienstIDKey) != nil) {
            guard let tenant = payload.custom(tenantKey)?.stringValue,
                let dienst = payload.custom(dienstIDKey).flatMap(idString),
                (try? validate(tenant: tenant, dienstID: dienst)) != nil
            else { return .unknown }
            return .dienstUpdate(tenant: tenant, dienstID: dienst)
        }
        if type == ctaType || type == nil, let link = payload.custom(deepLinkKey)?.stringValue,
            case .success(.ctaShiftVolunteer(let token)) = KantineKoningLink.parse(link)
        {
            return .cta(token: token, url: link)
        }
        return .unknown
    }

    static func idString(_ value: JSONValue) -> String? {
        if let text = value.stringValue { return text }
        if case .int(let number) = value { return String(number) }
        return nil
    }

    /// Checks a tenant slug and a dienst id.
    public static func validate(tenant: String, dienstID: String) throws(KKPushError) {
        let slugOK =
            !tenant.isEmpty
            && tenant.unicodeScalars.allSatisfy { scalar in
                switch scalar.value {
                case 0x30...0x39, 0x61...0x7A, 0x2D, 0x5F: true
                default: false
                }
            }
        guard slugOK else {
            throw KKPushError(
                code: .kkBadTenant,
                message: "The tenant slug '\(tenant)' is empty or not lowercase letters, digits, '-' and '_'.",
                fix:
                    "Pass the club's slug (tenant) as in its QR code (kantinekoning://tenant?slug=<slug>), e.g. vv-oranje."
            )
        }
        guard !dienstID.isEmpty, !dienstID.contains(where: \.isWhitespace) else {
            throw KKPushError(
                code: .kkBadDienstId, message: "The dienst id '\(dienstID)' is empty or contains white space.",
                fix: "Pass the shift's id from the backend (dienstID), e.g. 4711.")
        }
    }
}

/// What a received payload means to the Kantine Koning app.
public enum KantineKoningPushKind: Sendable, Equatable {
    /// Refresh the diensten of `tenant` (changed: `dienstID`).
    case dienstUpdate(tenant: String, dienstID: String)
    /// Show the shift-volunteer call to action with this token (`url` is the deep link as received).
    case cta(token: String, url: String)
    /// Not a push the app acts on.
    case unknown
}
