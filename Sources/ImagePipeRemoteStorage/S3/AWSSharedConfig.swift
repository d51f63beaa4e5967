// AWS settings the way the AWS CLI finds them: environment variables, then the shared credentials and config files.
import Foundation
public import ImagePipe

/// Credentials, region, endpoint and attempts resolved from the environment and `~/.aws`.
///
/// Order, as in the AWS CLI: `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`(/`AWS_SESSION_TOKEN`),
/// then the profile (`AWS_PROFILE`, else `default`) in the credentials file
/// (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), then the same profile in the
/// config file (`AWS_CONFIG_FILE`, else `~/.aws/config`, sections `[profile NAME]`). Region:
/// `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`. Endpoint: `AWS_ENDPOINT_URL_S3`,
/// `AWS_ENDPOINT_URL`, the profile's `endpoint_url`. Attempts: `AWS_MAX_ATTEMPTS`, `max_attempts`.
public struct AWSSharedConfig: Sendable {
    /// The credentials, when any source had them.
    public var credentials: AWSCredentials?
    /// Where the credentials came from, for messages (never the values).
    public var credentialSource: String?
    /// The region, when set.
    public var region: String?
    /// The endpoint URL, when set.
    public var endpoint: String?
    /// The retry attempts, when set.
    public var maxAttempts: Int?

    /// Resolves every setting from `environment` and the files it points to.
    public static func resolve(environment: [String: String]) throws(ImagePipeError) -> AWSSharedConfig {
        func env(_ name: String) -> String? {
            environment[name].flatMap { $0.isEmpty ? nil : $0 }
        }
        let explicitProfile = env("AWS_PROFILE") ?? env("AWS_DEFAULT_PROFILE")
        let profile = explicitProfile ?? "default"
        let home = env("HOME") ?? NSHomeDirectory()
        let credentialsPath = env("AWS_SHARED_CREDENTIALS_FILE").map(expandTilde(home)) ?? home + "/.aws/credentials"
        let configPath = env("AWS_CONFIG_FILE").map(expandTilde(home)) ?? home + "/.aws/config"

        let credentialsFile = try INIFile.load(credentialsPath)
        let configFile = try INIFile.load(configPath)
        let fromCredentials = credentialsFile?.sections[profile]
        let fromConfig =
            configFile?.sections[profile == "default" ? "default" : "profile \(profile)"]
            ?? configFile?.sections["profile \(profile)"]
        if let explicitProfile, fromCredentials == nil, fromConfig == nil {
            throw .configuration("AWS profile '\(explicitProfile)' not found in \(credentialsPath) or \(configPath)")
        }

        var result = AWSSharedConfig()
        let envKey = env("AWS_ACCESS_KEY_ID"), envSecret = env("AWS_SECRET_ACCESS_KEY")
        if envKey != nil || envSecret != nil {
            guard let envKey, let envSecret else {
                throw .configuration("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together")
            }
            result.credentials = AWSCredentials(
                accessKeyID: envKey, secretAccessKey: envSecret,
                sessionToken: env("AWS_SESSION_TOKEN"))
            result.credentialSource = "environment"
        } else {
            for (section, path) in [(fromCredentials, credentialsPath), (fromConfig, configPath)] {
                guard let section, let key = section["aws_access_key_id"] else { continue }
                guard let secret = section["aws_secret_access_key"] else {
                    throw .configuration("profile '\(profile)' in \(path) has aws_access_key_id but no aws_secret_access_key")
                }
                result.credentials = AWSCredentials(
                    accessKeyID: key, secretAccessKey: secret,
                    sessionToken: section["aws_session_token"])
                result.credentialSource = "profile '\(profile)' in \(path)"
                break
            }
        }

        result.region = env("AWS_REGION") ?? env("AWS_DEFAULT_REGION") ?? fromConfig?["region"]
        result.endpoint = env("AWS_ENDPOINT_URL_S3") ?? env("AWS_ENDPOINT_URL") ?? fromConfig?["endpoint_url"]
        if let text = env("AWS_MAX_ATTEMPTS") ?? fromConfig?["max_attempts"] {
            guard let attempts = Int(text), attempts >= 1 else {
                throw .configuration("AWS max attempts must be a positive whole number, not '\(text)'")
            }
            result.maxAttempts = attempts
        }
        return result
    }

    private static func expandTilde(_ home: String) -> (String) -> String {
        { path in path.hasPrefix("~/") ? home + path.dropFirst() : path }
    }
}

/// The INI dialect of the AWS files: `[section]`, `key = value`, `#`/`;` comments. Indented lines
/// belong to nested service blocks (`s3 =`), which imagepipe does not read.
package struct INIFile {
    package var sections: [String: [String: String]] = [:]

    /// The longest file read, 1 MiB: the AWS CLI's files hold a few profiles, and a path set to the
    /// wrong file (a log, /dev/zero) is refused rather than read until memory runs out.
    static let maxBytes = 1 << 20

    /// Parses the file at `path`; nil when there is none.
    static func load(_ path: String) throws(ImagePipeError) -> INIFile? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let file = FileHandle(forReadingAtPath: path), let data = try? file.read(upToCount: maxBytes + 1) ?? Data() else {
            throw .configuration("cannot read \(path)")
        }
        guard data.count <= maxBytes else {
            throw .configuration("\(path) is longer than the \(maxBytes) bytes an AWS config or credentials file may have")
        }
        return INIFile(parsing: String(decoding: data, as: UTF8.self))
    }

    package init(parsing text: String) {
        var current: String?
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                let name = line.dropFirst().dropLast().split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
                current = name
                if sections[name] == nil { sections[name] = [:] }
                continue
            }
            guard let current, let first = rawLine.first, !first.isWhitespace,
                let equals = line.firstIndex(of: "=")
            else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if !value.isEmpty { sections[current]?[key] = value }
        }
    }
}
