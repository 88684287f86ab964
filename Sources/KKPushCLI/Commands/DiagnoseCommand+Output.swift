import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushBuild
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KantineKoning

/// `kkpush diagnose`'s output: the verdict and findings as text or as one JSON object.
extension DiagnoseCommand {
    func print(_ diagnoses: [(label: String?, diagnosis: Diagnosis)], reconciliation: [Finding] = []) {
        // The rules name inputs by API name, `(keyID)`; the user reads this command line's flags.
        let diagnoses = diagnoses.map { (label: $0.label, diagnosis: Self.inFlagWords($0.diagnosis)) }
        let reconciliation = reconciliation.map(Self.inFlagWords)
        func findingValue(_ f: Finding) -> JSONValue {
            [
                "severity": .string(f.severity.rawValue), "code": .string(f.code), "message": .string(f.message),
                "fix": .string(f.fix), "why": .string(f.why), "confirmed": .bool(f.confirmed),
            ]
        }
        if json {
            func object(_ d: Diagnosis) -> [String: JSONValue] {
                [
                    "verdict": d.verdict.map {
                        [
                            "code": .string($0.code), "message": .string($0.message), "fix": .string($0.fix),
                            "why": .string($0.why),
                        ]
                    } ?? .null,
                    "findings": .array(
                        d.findings.map {
                            [
                                "severity": .string($0.severity.rawValue), "code": .string($0.code),
                                "message": .string($0.message), "fix": .string($0.fix), "why": .string($0.why),
                                "confirmed": .bool($0.confirmed),
                            ]
                        }),
                    "push_environment": JSONValue(d.pushEnvironment?.rawValue),
                    "token_environment": JSONValue(d.tokenEnvironment?.rawValue),
                    "blocks_delivery": .bool(d.blocksDelivery),
                    "inconclusive": .bool(d.inconclusive),
                ]
            }
            if diagnoses.count == 1 {
                var top = object(diagnoses[0].diagnosis)
                if !reconciliation.isEmpty { top["reconciliation"] = .array(reconciliation.map(findingValue)) }
                Output.printJSON(.object(top))
            } else {
                // Several enrollments: the first blocking verdict on top, then one entry per enrollment.
                let first = diagnoses.first { $0.diagnosis.hasVerdict }?.diagnosis ?? diagnoses[0].diagnosis
                var top = object(first)
                top["enrollments"] = .array(
                    diagnoses.map { entry in
                        var o = object(entry.diagnosis)
                        o["enrollment"] = .string(entry.label ?? "")
                        return .object(o)
                    })
                if !reconciliation.isEmpty { top["reconciliation"] = .array(reconciliation.map(findingValue)) }
                Output.printJSON(.object(top))
            }
            return
        }
        for (label, d) in diagnoses {
            if let label { KKPushCLI.print("== \(label)") }
            if let v = d.verdict, d.inconclusive {
                KKPushCLI.print("Verdict: the path could not be checked (\(v.code)): \(v.message)")
                KKPushCLI.print("  why: \(v.why)")
                KKPushCLI.print("  fix: \(v.fix)")
            } else if let v = d.verdict {
                KKPushCLI.print("Verdict: \(v.code): \(v.message)")
                KKPushCLI.print("  why: \(v.why)")
                KKPushCLI.print("  fix: \(v.fix)")
            } else {
                KKPushCLI.print("Verdict: nothing found that blocks delivery.")
            }
            let env = [
                d.pushEnvironment.map { "pushes go to \($0)" }, d.tokenEnvironment.map { "the token is a \($0) token" },
            ]
            .compactMap { $0 }
            if !env.isEmpty {
                KKPushCLI.print(
                    "Routing: \(env.joined(separator: "; "))\(d.inconclusive ? " (unconfirmed: from the configuration)" : "")"
                )
            }
            let rest = d.findings.filter { $0 != d.verdict }
            if !rest.isEmpty {
                KKPushCLI.print("Findings:")
                for f in rest {
                    let mark = f.confirmed ? " (probe)" : d.inconclusive ? " (unconfirmed: from the configuration)" : ""
                    KKPushCLI.print("  \(f.severity.rawValue) \(f.code)\(mark): \(f.message)")
                    KKPushCLI.print("    fix: \(f.fix)")
                }
            }
        }
        for f in reconciliation {
            KKPushCLI.print("== Enrollment reconciliation")
            KKPushCLI.print("  \(f.severity.rawValue) \(f.code): \(f.message)")
            KKPushCLI.print("    why: \(f.why)")
            KKPushCLI.print("    fix: \(f.fix)")
        }
    }

    static func inFlagWords(_ f: Finding) -> Finding {
        FlagWords.common.apply(f)
    }

    static func inFlagWords(_ d: Diagnosis) -> Diagnosis {
        var d = d
        d.findings = d.findings.map(inFlagWords)
        d.verdict = d.verdict.map(inFlagWords)
        return d
    }
}
