import Foundation
import KKPushCore

/// Rule 2: the device token (format, missing, the enrollment revoked).
extension Diagnoser {
    static func tokenFindings(_ f: DiagnosisFacts) -> [Finding] {
        var out: [Finding] = []
        if let e = f.enrollment, e.status == .revoked {
            out.append(
                Finding(
                    .error, DiagnosisCode.enrollmentRevoked,
                    message: "The enrollment \(e.tenantSlug)/\(e.deviceID) is revoked.",
                    why: "The backend sends pushes to active enrollments only.",
                    fix:
                        "Re-enroll the device (scan the club's QR code again); if the hardware identifier changed (TestFlight ↔ App Store), that is expected."
                ))
        }
        guard let given = f.deviceToken else {
            if let e = f.enrollment {
                out.append(
                    Finding(
                        .error, DiagnosisCode.tokenMissing,
                        message: "The enrollment \(e.tenantSlug)/\(e.deviceID) has no apns_token.",
                        why:
                            "With no token the backend has nowhere to push (a token cleared after a 410, or never sent).",
                        fix:
                            "Open the app so it sends its token update (check notification permission); re-enroll if it stays empty."
                    ))
            }
            return out
        }
        // The one judgement of a token (DeviceToken.judge): uppercase is a warning from any source, as in
        // `audit`, `send` and the mock; a decorated stored value is an error (the backend sends it as stored).
        let n = DeviceToken.judge(given.value)
        guard let token = n.token else {
            let detail = n.problems.filter { $0.severity == .error }.map(\.message).joined(separator: " ")
            out.append(
                Finding(
                    .error, DiagnosisCode.tokenFormat,
                    message: "The device token from \(given.source.rawValue) is not usable: \(detail)",
                    why: "APNs answers 400 BadDeviceToken to a token that is not the app's hex token.",
                    fix:
                        "Send the token as lowercase hex of the raw bytes (deviceToken.map { String(format: \"%02x\", $0) }.joined()); re-enroll the device."
                ))
            return out
        }
        if n.form == .uppercase {
            let problem = DeviceToken.uppercaseProblem
            out.append(
                Finding(
                    .warning, DiagnosisCode(problem.code),
                    message:
                        "The device token from \(given.source.rawValue) (\(DeviceToken.redacted(given.value))): \(problem.message)",
                    why:
                        "Not a delivery failure: the client sends it lowercased, and APNs is reported to accept either case.",
                    fix: problem.fix))
        } else if token != given.value {
            if given.source == .flag {
                out.append(
                    Finding(
                        .info, DiagnosisCode.tokenFormat,
                        message:
                            "The device token given (token) was normalised to \(DeviceToken.redacted(token)) (\(n.problems.map(\.message).joined(separator: " "))).",
                        why: "The client sends the normalised form; a backend that stores the raw form would fail.",
                        fix: "Store and send the token as plain lowercase hex."))
            } else {
                out.append(
                    Finding(
                        .error, DiagnosisCode.tokenFormat,
                        message:
                            "The device token in \(given.source.rawValue) is \"\(String(given.value.prefix(24)))…\", not plain lowercase hex (\(n.problems.map(\.message).joined(separator: " "))).",
                        why:
                            "The backend puts the token into /3/device/<token> as stored; APNs answers BadDeviceToken.",
                        fix:
                            "Make the app send hex (deviceToken.map { String(format: \"%02x\", $0) }.joined(), not the description string), then re-enroll."
                    ))
            }
        }
        return out
    }
}
