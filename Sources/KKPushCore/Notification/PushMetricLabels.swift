/// The `push_type` and `priority` labels of kkpush's Prometheus metrics (the mock's requests, `send-batch`'s pushes,
/// the backend's pushes): Apple's own breakdowns, on bounded label sets, so a client sending odd headers cannot
/// grow a metric without end.
///
/// - `push_type`: a push type Apple documents (``PushType/allCases``, `widgets` and `controls` included), `none`
///   when the header was not sent, `other` for any other value.
/// - `priority`: `10`, `5` or `1`, `none` when the header was not sent, `other` for any other value.
public enum PushMetricLabels {
    /// Every `push_type` label value, in a fixed order.
    public static let pushTypes: [String] = PushType.allCases.map(\.rawValue) + ["none", "other"]
    /// Every `priority` label value, in a fixed order.
    public static let priorities: [String] = ["10", "5", "1", "none", "other"]

    /// The position in ``pushTypes`` of the label of an `apns-push-type` header value (nil: not sent).
    public static func pushTypeIndex(_ header: String?) -> Int {
        guard let header else { return pushTypes.count - 2 }
        return PushType.allCases.firstIndex { $0.rawValue == header } ?? pushTypes.count - 1
    }

    /// The position in ``priorities`` of the label of an `apns-priority` header value (nil: not sent).
    public static func priorityIndex(_ header: String?) -> Int {
        switch header {
        case nil: 3
        case "10": 0
        case "5": 1
        case "1": 2
        default: 4
        }
    }

    /// The `push_type` label of an `apns-push-type` header value (nil: not sent).
    public static func pushType(_ header: String?) -> String { pushTypes[pushTypeIndex(header)] }

    /// The `priority` label of an `apns-priority` header value (nil: not sent).
    public static func priority(_ header: String?) -> String { priorities[priorityIndex(header)] }

    /// The `priority` label of a priority number (nil: none set).
    public static func priority(_ value: Int?) -> String { priority(value.map { String($0) }) }
}
