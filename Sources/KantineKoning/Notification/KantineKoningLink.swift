import Foundation
public import KKPushCore

/// A Kantine Koning deep link or QR payload, as the app's README lists them.
///
/// - `kantinekoning://device-enroll?token=…` and its web variant
///   `https://(www.)kantinekoning.com/…/device-enroll?token=…` (the magic link);
/// - `kantinekoning://cta/shift-volunteer?token=…` (the CTA push's link);
/// - `kantinekoning://tenant?slug=…&name=…` and `kantinekoning://invite?tenant=…&tenant_name=…` (QR codes);
/// - any of them percent-encoded in a `data=` query parameter of another URL (QR codes), up to
///   three levels deep.
///
/// Parameters are percent-decoded. Required: `token`, `slug`, `tenant` (missing or empty is an error
/// naming the parameter); the club names are optional (display only).
public enum KantineKoningLink: Sendable, Hashable, CustomStringConvertible {
    /// The magic link that registers the device; `web` when it came as the https variant.
    case deviceEnroll(token: String, web: Bool)
    /// The call to action to volunteer for a shift.
    case ctaShiftVolunteer(token: String)
    /// A club QR code: its slug and display name.
    case tenant(slug: String, name: String?)
    /// An invitation QR code: the club's slug and display name.
    case invite(tenant: String, tenantName: String?)

    /// The app's URL scheme, `kantinekoning`.
    public static let scheme = "kantinekoning"
    /// The web host of the https variant, `kantinekoning.com` (and its subdomains such as `www.`).
    public static let webHost = "kantinekoning.com"

    /// Parses a link or QR payload; the error names what is missing or wrong.
    public static func parse(_ string: String) -> Result<KantineKoningLink, KKPushError> {
        do throws(KKPushError) {
            return .success(try parse(string, depth: 0))
        } catch {
            return .failure(error)
        }
    }

    /// Parses a link or QR payload, throwing the error ``parse(_:)`` returns.
    public init(parsing string: String) throws(KKPushError) {
        self = try Self.parse(string, depth: 0)
    }

    /// The canonical link (custom scheme; `deviceEnroll(web: true)` as `https://kantinekoning.com/device-enroll`).
    public var url: String {
        switch self {
        case .deviceEnroll(let token, let web):
            return (web ? "https://\(Self.webHost)/device-enroll" : "\(Self.scheme)://device-enroll")
                + "?token=" + Self.encode(token)
        case .ctaShiftVolunteer(let token):
            return "\(Self.scheme)://cta/shift-volunteer?token=" + Self.encode(token)
        case .tenant(let slug, let name):
            return "\(Self.scheme)://tenant?slug=" + Self.encode(slug) + (name.map { "&name=" + Self.encode($0) } ?? "")
        case .invite(let tenant, let name):
            return "\(Self.scheme)://invite?tenant=" + Self.encode(tenant)
                + (name.map { "&tenant_name=" + Self.encode($0) } ?? "")
        }
    }

    /// The canonical link.
    public var description: String { url }

    /// The token the link carries (device-enroll and CTA links).
    public var token: String? {
        switch self {
        case .deviceEnroll(let token, _), .ctaShiftVolunteer(let token): token
        default: nil
        }
    }

    /// Percent-encodes a query value (everything but unreserved characters).
    public static func encode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        // `alphanumerics` includes non-ASCII letters; restrict to ASCII.
        return value.unicodeScalars.map { scalar -> String in
            if scalar.isASCII, allowed.contains(scalar) { return String(scalar) }
            return String(scalar).utf8.map { String(format: "%%%02X", $0) }.joined()
        }.joined()
    }

    static func parse(_ raw: String, depth: Int) throws(KKPushError) -> KantineKoningLink {
        let string = raw.trimmingWhitespace()
        guard !string.isEmpty else {
            throw KKPushError(
                code: .linkEmpty, message: "The link is empty.",
                fix: "Pass a kantinekoning:// link or a https://kantinekoning.com/... link.")
        }
        guard let components = URLComponents(string: string), let scheme = components.scheme?.lowercased() else {
            throw KKPushError(
                code: .linkMalformed, message: "'\(shortened(string))' is not a URL.",
                fix: "Pass a link such as kantinekoning://tenant?slug=<slug>&name=<club>.")
        }
        let items = components.queryItems ?? []
        // Nested QR payload: data=<percent-encoded link>.
        if let data = items.first(where: { $0.name == "data" }) {
            guard depth < 3 else {
                throw KKPushError(
                    code: .linkNestedTooDeep,
                    message: "The link nests data= parameters more than three levels deep.",
                    fix: "Put the kantinekoning:// link directly in the data= parameter.")
            }
            guard let inner = data.value, !inner.isEmpty else { throw missing("data", in: string) }
            do throws(KKPushError) {
                return try parse(inner, depth: depth + 1)
            } catch {
                throw KKPushError(
                    code: error.code, message: "In the data= parameter: " + error.message, fix: error.fix,
                    underlying: error.underlying)
            }
        }
        let host = (components.host ?? "").lowercased()
        let path = components.path
        switch scheme {
        case scheme where scheme == Self.scheme:
            switch (host, path) {
            case ("device-enroll", ""), ("device-enroll", "/"):
                return .deviceEnroll(token: try required("token", items, string), web: false)
            case ("cta", "/shift-volunteer"), ("cta", "/shift-volunteer/"):
                return .ctaShiftVolunteer(token: try required("token", items, string))
            case ("tenant", ""), ("tenant", "/"):
                return .tenant(slug: try required("slug", items, string), name: optional("name", items))
            case ("invite", ""), ("invite", "/"):
                return .invite(
                    tenant: try required("tenant", items, string), tenantName: optional("tenant_name", items))
            default:
                throw KKPushError(
                    code: .linkUnknown,
                    message: "'\(shortened(string))' is not a Kantine Koning link the app handles.",
                    fix:
                        "Use kantinekoning://device-enroll, cta/shift-volunteer, tenant or invite, or wrap one in data=."
                )
            }
        case "https", "http":
            guard host == Self.webHost || host.hasSuffix("." + Self.webHost) else {
                throw KKPushError(
                    code: .linkWrongHost, message: "'\(host)' is not kantinekoning.com.",
                    fix: "Magic links are https://kantinekoning.com/.../device-enroll?token=….")
            }
            guard path.split(separator: "/").last == "device-enroll" else {
                throw KKPushError(
                    code: .linkUnknown, message: "The web link's path '\(path)' does not end in /device-enroll.",
                    fix: "Magic links are https://kantinekoning.com/.../device-enroll?token=….")
            }
            guard scheme == "https" else {
                throw KKPushError(
                    code: .linkNotHttps, message: "The magic link uses http, not https.",
                    fix: "Use https://kantinekoning.com/.../device-enroll?token=….")
            }
            return .deviceEnroll(token: try required("token", items, string), web: true)
        default:
            throw KKPushError(
                code: .linkUnknownScheme, message: "The link's scheme is '\(scheme)', not kantinekoning or https.",
                fix: "Use a kantinekoning:// link or the https://kantinekoning.com web variant.")
        }
    }

    static func required(_ name: String, _ items: [URLQueryItem], _ link: String) throws(KKPushError) -> String {
        guard let value = items.first(where: { $0.name == name })?.value?.trimmingWhitespace(), !value.isEmpty else {
            throw missing(name, in: link)
        }
        return value
    }

    static func optional(_ name: String, _ items: [URLQueryItem]) -> String? {
        guard let value = items.first(where: { $0.name == name })?.value?.trimmingWhitespace(), !value.isEmpty else {
            return nil
        }
        return value
    }

    static func missing(_ name: String, in link: String) -> KKPushError {
        KKPushError(
            code: .linkMissingParameter,
            message: "The link '\(shortened(link))' has no '\(name)' parameter (or it is empty).",
            fix: "Add \(name)=<value> to the link's query.")
    }

    static func shortened(_ text: String) -> String {
        text.count <= 80 ? text : String(text.prefix(80)) + "…"
    }
}
