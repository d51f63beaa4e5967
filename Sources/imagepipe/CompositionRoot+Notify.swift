// Builds the notifier of --notify-url, with the secret from IMAGEPIPE_NOTIFY_SECRET.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import Logging

extension CompositionRoot {
    /// The environment variable holding the notifications' signing secret.
    static let notifySecretVariable = "IMAGEPIPE_NOTIFY_SECRET"

    /// What `imagepipe config` checks of `--notify-url`, as the run does before its first job; returns
    /// what only the receiver can tell.
    static func checkNotifier(
        _ options: NotifyOptions, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ImagePipeError) -> [String] {
        guard let url = options.notifyURL else { return [] }
        try WebhookNotifier.check(url: url, secret: environment[notifySecretVariable] ?? "")
        return ["that the --notify-url receiver answers and accepts the signature"]
    }

    /// The notifier when `--notify-url` is given, else nil.
    ///
    /// - Throws: `configuration` when the URL is not http(s) or the secret is missing: a worker
    ///   that would send unsigned notifications stops before its first job.
    static func notifier(
        _ options: NotifyOptions, environment: [String: String] = ProcessInfo.processInfo.environment, tracer: Tracer? = nil,
        logger: Logger
    ) throws(ImagePipeError) -> WebhookNotifier? {
        guard let url = options.notifyURL else { return nil }
        var configuration = WebhookNotifier.Configuration(
            url: url, secret: environment[notifySecretVariable] ?? "", deadline: options.deadline, attemptTimeout: options.timeout)
        configuration.tracer = tracer
        return try WebhookNotifier(configuration: configuration, logger: logger)
    }
}
