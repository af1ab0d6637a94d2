/// The `ble serve` options that only some profiles take, as the command read them: the library
/// does not parse command lines, so a profile is configured from these values and says in a
/// `ServeOptionError` what it cannot use.
public struct ServeProfileOptions: Sendable, Equatable {
    /// `--source sim|FILE|-`: where `accel` takes its samples (nil: simulated motion).
    public var source: String?
    /// `--files DIR`: the directory whose regular files `echo` serves to file:// URLs (nil:
    /// file:// is refused).
    public var files: String?

    /// Options as given; both nil is a profile's defaults.
    public init(source: String? = nil, files: String? = nil) {
        self.source = source
        self.files = files
    }
}

/// An option a serve profile cannot use (a `--source` file that does not open, a `--files` path
/// that is not a directory). The message names the option, so the tool can show it as a usage
/// error before anything starts.
public struct ServeOptionError: Error, Equatable, CustomStringConvertible {
    /// "--files: cannot serve the files of 'x': not a directory".
    public let description: String

    /// An error with the message shown to the user.
    public init(_ message: String) {
        description = message
    }
}
