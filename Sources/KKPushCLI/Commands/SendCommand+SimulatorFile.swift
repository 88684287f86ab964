import KKPushAuth
import KKPushCLISupport
import KKPushCore

extension SendCommand {
    /// The `.apns` file codes of a push the Simulator's file cannot hold (``SimulatorPushFile/make(payload:topic:pushType:)``).
    static let simulatorFileCodes: Set<KKPushError.Code> = [
        .simulatorFileTooLarge, .simulatorFileNotObject, .simulatorFileNoAPS,
    ]

    /// `--apns-file`: writes the push's Simulator file before it is sent; returns the warnings to print.
    ///
    /// A push the file cannot hold (a payload over the Simulator's 4096 bytes, such as a voip payload APNs takes up to
    /// 5120, one that is not an object or has no `aps`) is two problems, judged apart. The push is judged by its own
    /// rules first: when the pre-flight (or the credential's scope) fails it, that is the verdict, exit 1 as without
    /// the flag, nothing is sent, and a warning says no file was written. A push that would go out is not sent at
    /// all: the file is an output the user asked for, and sending while leaving it unwritten would let a script see
    /// a success where half of the job did not happen, and sending first then failing would leave a push sent under
    /// an error. So it is a usage error (exit 64), naming --apns-file, before anything is sent or written.
    func writeSimulatorFile(
        _ path: String, request: NotificationRequest, environment: APNsEnvironment
    ) throws -> [Problem] {
        try writeSimulatorFile(path, payload: request.payload, topic: request.topic ?? "", pushType: request.pushType) {
            try ownVerdict(request, environment: environment)
        }
    }

    /// `send --channel --apns-file`: the same for a broadcast (a Live Activity payload up to 5120 bytes).
    func writeSimulatorFile(_ path: String, broadcast request: BroadcastRequest) throws -> [Problem] {
        try writeSimulatorFile(path, payload: request.payload, topic: request.bundleID, pushType: .liveactivity) {
            if connection.noPreflight { return .sendable }
            return BroadcastRules.preflight(request).contains { $0.severity == .error } ? .failsThrowing : .sendable
        }
    }

    private func writeSimulatorFile(
        _ path: String, payload: [UInt8], topic: String, pushType: PushType?, verdict: () throws -> OwnVerdict
    ) throws -> [Problem] {
        do {
            return try SimulatorFileWriter.write(payload: payload, topic: topic, pushType: pushType, to: path)
        } catch let error as KKPushError where Self.simulatorFileCodes.contains(error.code) {
            let fix = error.fix ?? "Give a payload the Simulator's file can hold."
            let notWritten = Problem(
                .warning, code: Problem.Code(error.code),
                message: "No --apns-file was written (\(path)): \(error.message)", fix: fix)
            switch try verdict() {
            case .fails:
                // The client's pre-flight fails the push without sending it; the warning goes with its outcome.
                return [notWritten]
            case .failsThrowing:
                // The push's own problem is thrown before sending (a scope problem, a broadcast's pre-flight), and
                // its report has no warnings: this one is printed now.
                for line in Output.lines([notWritten]) { Output.printError(line) }
                return []
            case .sendable:
                throw CLIError.usage(
                    error.code,
                    "--apns-file \(path): \(error.message) Nothing was sent: the push itself may go out, but the Simulator file asked for cannot be written.",
                    fix: "\(fix) Or leave out --apns-file to send the push without a Simulator file.")
            }
        }
    }

    /// What the push's own rules say before it is sent.
    private enum OwnVerdict {
        /// The client's pre-flight fails it (an outcome, exit 1).
        case fails
        /// Its problem is thrown before sending (exit 1).
        case failsThrowing
        /// It may go out.
        case sendable
    }

    /// The pre-flight `send` runs (unless --no-preflight), with the authentication the push will go out with, and
    /// with --credentials the scope of the credential that would serve it.
    private func ownVerdict(_ request: NotificationRequest, environment: APNsEnvironment) throws -> OwnVerdict {
        var certificate = connection.cert != nil
        if let set = try connection.credentialSet() {
            switch set.resolve(credential: credential, topic: request.topic, environment: environment) {
            case .failure: return .failsThrowing
            case .success(let chosen):
                if case .certificate = chosen.kind { certificate = true }
            }
        }
        if connection.noPreflight { return .sendable }
        // The certificate's topics are not known before it is loaded; its topic rule is the client's to apply.
        let check = APNsRequestRules.preflight(
            request, authentication: certificate ? .certificate(topics: nil) : .token)
        return check.errors.isEmpty ? .sendable : .fails
    }
}
