extension Duration {
    /// The duration in seconds, as a `Double` (for reports and rates: "12.3 s", rows per second).
    ///
    /// kkpush measures elapsed time one way: `ContinuousClock` (monotonic) in Swift code, `NIODeadline` inside NIO
    /// handlers (their scheduling API), and the APNs client's injectable `LoopClock` for its virtual-time tests.
    public var seconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}
