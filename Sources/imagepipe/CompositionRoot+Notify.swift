// Builds the notifier of --notify-url, with the secret from IMAGEPIPE_NOTIFY_SECRET.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import Logging

extension CompositionRoot {
    /// The environment variable holding the notifications' signing secret.
    static let notifySecretVariable = "IMAGEPIPE_NOTIFY_SECRET"

    /// The notifier when `--notify-url` is given, else nil.
    ///
    /// - Throws: `configuration` when the URL is not http(s) or the secret is missing: a worker
    ///   that would send unsigned notifications stops before its first job.
    static func notifier(
        _ options: NotifyOptions, environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger
    ) throws(ImagePipeError) -> WebhookNotifier? {
        guard let url = options.notifyURL else { return nil }
        return try WebhookNotifier(
            configuration: .init(
                url: url, secret: environment[notifySecretVariable] ?? "", deadline: options.deadline,
                attemptTimeout: options.timeout),
            logger: logger)
    }
}
