import Foundation
import KKPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Seeded mutation without coverage feedback: the fuzz slice a normal (uninstrumented) build can run.
///
/// `KKPushFuzz --mutate --target NAME [--seconds S] [--runs N] [--seed X] [--crash-file F] SEEDS...` reads the
/// seed files, then until `S` seconds or `N` executions have passed runs the seeds and inputs made from them by
/// one to four stacked edits: bit flips, bytes set to values parsers treat specially (quotes, brackets, digits,
/// 0x00, 0xFF), ranges inserted, erased, duplicated or spliced from another seed, numbers written in their edge
/// forms. The same seed gives the same inputs. A trap (a broken invariant or a crash) writes the input being run
/// to the crash file from the signal handler, as libFuzzer does, so it can be replayed
/// (`KKPushFuzz --target NAME FILE`). It prints one line: `NAME seconds executions execs/s`.
///
/// libFuzzer's coverage-guided runs (`.ci/fuzz` with `-sanitize=fuzzer`) find deeper inputs; this is the slice
/// that needs no instrumented build of its own, so CI runs it on the debug build the tests already made.
enum Mutation {
    static func run(_ arguments: [String]) -> Int32 {
        var targetName: String?
        var seconds = 3.0
        var runs = Int.max
        var seed: UInt64 = 1
        var crashFile: String?
        var paths: [String] = []
        var index = 0
        func value(_ flag: String) -> String? {
            guard index + 1 < arguments.count else {
                fail("\(flag) needs a value")
                return nil
            }
            index += 2
            return arguments[index - 1]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--target":
                guard let v = value("--target") else { return 2 }
                targetName = v
            case "--seconds":
                guard let v = value("--seconds"), let s = Double(v), s.isFinite, s > 0, s <= 86_400 else {
                    fail("--seconds needs a number of seconds, 0 < S <= 86400")
                    return 2
                }
                seconds = s
            case "--runs":
                guard let v = value("--runs"), let n = Int(v), n >= 1 else {
                    fail("--runs needs a whole number >= 1")
                    return 2
                }
                runs = n
            case "--seed":
                guard let v = value("--seed"), let s = UInt64(v) else {
                    fail("--seed needs a whole number >= 0")
                    return 2
                }
                seed = s
            case "--crash-file":
                guard let v = value("--crash-file") else { return 2 }
                crashFile = v
            default:
                paths.append(arguments[index])
                index += 1
            }
        }
        guard let targetName, let target = FuzzTargets.named(targetName) else {
            let names = FuzzTargets.all.map(\.name).joined(separator: ", ")
            fail((targetName.map { "no target '\($0)'" } ?? "--mutate needs --target NAME") + "; targets: " + names)
            return 2
        }
        var seeds: [[UInt8]] = []
        for path in paths {
            for file in Replay.files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    fail("cannot read \(file)")
                    return 2
                }
                seeds.append(Array(data.prefix(target.maxLength)))
            }
        }
        if seeds.isEmpty { seeds = [[]] }

        CrashCapture.install(file: crashFile ?? "crash-\(target.name)")
        let start = ContinuousClock.now
        let limit = Duration.milliseconds(Int64(seconds * 1000))
        var rng = SeededRandom(seed: seed)
        var executions = 0
        // Every seed as it is first, then mutants of seeds picked in turn.
        while executions < runs {
            let input: [UInt8]
            if executions < seeds.count {
                input = seeds[executions]
            } else {
                input = Mutator.mutate(
                    seeds[executions % seeds.count], others: seeds, maxLength: target.maxLength, rng: &rng)
            }
            CrashCapture.arm(input)
            target.run(input)
            executions += 1
            if executions % 16 == 0, ContinuousClock.now - start >= limit { break }
        }
        CrashCapture.disarm()
        let took = (ContinuousClock.now - start).components
        let elapsed = Double(took.seconds) + Double(took.attoseconds) / 1e18
        let rate = elapsed > 0 ? Int(Double(executions) / elapsed) : executions
        print("\(target.name) \(String(format: "%.1f", elapsed)) \(executions) \(rate)")
        return 0
    }

    private static func fail(_ message: String) {
        FileHandle.standardError.write(Data("KKPushFuzz --mutate: \(message)\n".utf8))
    }
}

/// The edits ``Mutation`` stacks on a seed.
enum Mutator {
    /// Bytes the parsers here treat specially: JSON and property-list punctuation, escapes, digits and signs,
    /// line ends, base64url's alphabet edges, and the byte-range ends.
    static let interestingBytes: [UInt8] = Array("\"{}[],:\\\n\r\t .-+eE019=_/<>&".utf8) + [0x00, 0x7F, 0x80, 0xFF]
    /// Numbers in the forms that break number handling.
    static let interestingNumbers: [[UInt8]] = [
        "0", "-0", "1e999", "-1e999", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
        "4294967296", "1.7976931348623157e308", "5e-324", "NaN", "Infinity", "0x7fffffff", "00", "1.", ".5",
    ].map { Array($0.utf8) }

    static func mutate(
        _ seed: [UInt8], others: [[UInt8]], maxLength: Int, rng: inout SeededRandom
    ) -> [UInt8] {
        var bytes = seed
        let edits = 1 + Int(rng.next() % 4)
        for _ in 0..<edits { edit(&bytes, others: others, rng: &rng) }
        if bytes.count > maxLength { bytes.removeLast(bytes.count - maxLength) }
        return bytes
    }

    private static func edit(_ bytes: inout [UInt8], others: [[UInt8]], rng: inout SeededRandom) {
        func position(_ count: Int) -> Int { count == 0 ? 0 : Int(rng.next() % UInt64(count)) }
        func range() -> Range<Int> {
            let a = position(bytes.count + 1)
            let length = Int(rng.next() % 16)
            return a..<min(bytes.count, a + length)
        }
        switch rng.next() % 10 {
        case 0 where !bytes.isEmpty:  // flip a bit
            bytes[position(bytes.count)] ^= UInt8(1) << (rng.next() % 8)
        case 1 where !bytes.isEmpty:  // a byte set to a special value
            bytes[position(bytes.count)] = interestingBytes[position(interestingBytes.count)]
        case 2:  // a special byte inserted
            bytes.insert(interestingBytes[position(interestingBytes.count)], at: position(bytes.count + 1))
        case 3 where !bytes.isEmpty:  // a range erased
            bytes.removeSubrange(range())
        case 4 where !bytes.isEmpty:  // a range duplicated in place
            let r = range()
            bytes.insert(contentsOf: bytes[r], at: r.upperBound)
        case 5:  // a range of another seed spliced in
            let other = others[position(others.count)]
            guard !other.isEmpty else { return }
            let a = position(other.count)
            let slice = other[a..<min(other.count, a + 1 + Int(rng.next() % 64))]
            bytes.insert(contentsOf: slice, at: position(bytes.count + 1))
        case 6 where !bytes.isEmpty:  // truncated
            bytes.removeLast(bytes.count - position(bytes.count))
        case 7:  // a number in an edge form, over a digit run or inserted
            let number = interestingNumbers[position(interestingNumbers.count)]
            let from = position(bytes.count)
            var found: Int?
            for step in 0..<bytes.count where (0x30...0x39).contains(bytes[(from + step) % bytes.count]) {
                found = (from + step) % bytes.count
                break
            }
            if let digit = found {
                var end = digit
                while end < bytes.count, (0x30...0x39).contains(bytes[end]) || bytes[end] == 0x2E { end += 1 }
                var begin = digit
                while begin > 0, (0x30...0x39).contains(bytes[begin - 1]) { begin -= 1 }
                bytes.replaceSubrange(begin..<end, with: number)
            } else {
                bytes.insert(contentsOf: number, at: position(bytes.count + 1))
            }
        case 8:  // random bytes inserted
            let count = 1 + Int(rng.next() % 8)
            let insert = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            bytes.insert(contentsOf: insert, at: position(bytes.count + 1))
        case 9 where bytes.count > 1:  // two bytes swapped
            bytes.swapAt(position(bytes.count), position(bytes.count))
        default:
            bytes.append(UInt8(truncatingIfNeeded: rng.next()))
        }
    }
}

/// Writes the input being run to a file when the process traps, from the signal handler (only `open`, `write` and
/// `close`, which are async-signal-safe), then lets the signal end the process as it would have.
enum CrashCapture {
    nonisolated(unsafe) private static var path: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) private static var buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    nonisolated(unsafe) private static var capacity = 1
    nonisolated(unsafe) private static var count = 0
    nonisolated(unsafe) private static var armed: Int32 = 0

    /// What the handler says on standard error, made before any signal.
    nonisolated(unsafe) private static var note: UnsafeMutablePointer<CChar>?

    static func install(file: String) {
        path = strdup(file)
        note = strdup("KKPushFuzz --mutate: the input that crashed is in \(file)\n")
        for signal in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
            // signal(2), not sigaction(2): Swift code reads no glibc structure (see CKKPushSystem). The handler puts
            // the default back itself before raising again.
            _ = Glibc.signal(signal) { sig in
                if CrashCapture.armed != 0, let path = CrashCapture.path {
                    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                    if fd >= 0 {
                        _ = write(fd, CrashCapture.buffer, CrashCapture.count)
                        close(fd)
                    }
                    if let note = CrashCapture.note { _ = write(STDERR_FILENO, note, strlen(note)) }
                }
                Glibc.signal(sig, SIG_DFL)
                raise(sig)
            }
        }
    }

    /// Keeps a copy of `input` for the handler.
    static func arm(_ input: [UInt8]) {
        armed = 0
        if input.count > capacity {
            buffer.deallocate()
            capacity = max(input.count, capacity * 2)
            buffer = .allocate(capacity: capacity)
        }
        input.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { buffer.update(from: base, count: input.count) }
        }
        count = input.count
        armed = 1
    }

    static func disarm() { armed = 0 }
}
