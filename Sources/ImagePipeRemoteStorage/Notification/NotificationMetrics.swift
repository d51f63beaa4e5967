// Notifications counted through swift-metrics' API: delivered or given up, and retried attempts.
import CoreMetrics

/// The notifier's counters (see the monitoring module's catalogue for their help).
enum NotificationMetrics {
    /// `imagepipe_notifications_total`: one notification delivered, or given up (`failed`).
    static func finished(delivered: Bool) {
        Counter(label: "imagepipe_notifications_total", dimensions: [("outcome", delivered ? "delivered" : "failed")]).increment()
    }

    /// `imagepipe_notification_retries_total`: one more attempt at a notification.
    static func retry() {
        Counter(label: "imagepipe_notification_retries_total").increment()
    }
}
