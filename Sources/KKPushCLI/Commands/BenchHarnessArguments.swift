import KKPushBench

/// The command lines the bench harnesses (KKPushBench's fault matrix and soak) run this binary with.
enum BenchHarnessArguments {
    /// One `send-batch` run.
    static func sendBatch(_ run: SendBatchInvocation) -> [String] {
        [
            "send-batch", "--tokens", run.tokens, "--topic", run.topic, "--url", run.url, "--ca-file", run.caFile,
            "--key", run.key.file, "--key-id", run.key.keyID, "--team-id", run.key.teamID, "--title", run.title,
            "--body", run.body, "--request-timeout", String(run.requestTimeout), "--connect-timeout", "5",
        ]
    }

    /// `mock serve` on free ports, its first stdout line saying where it listens.
    static func mock(certificates: String) -> [String] {
        [
            "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0", "--json",
            "--certificates", certificates, "--log-capacity", "100000",
            // As bench faults' mock: the soak measures the faults it injects, not the mock's guards against
            // silent clients, which on a loaded machine could close a connection opened and not yet used.
            "--handshake-timeout", "120", "--first-request-timeout", "120",
        ]
    }
}
