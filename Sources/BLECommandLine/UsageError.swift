/// The command line is wrong: the tool prints the message and the command's usage line and exits
/// with EX_USAGE (64). The parser's own findings have a `Kind` tests and callers can match;
/// commands checking their values (a number out of range, say) give a message.
public struct UsageError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// An option the command does not declare, as typed: `-x`, `--xyz`.
        case unknownOption(String)
        /// An option that takes one value, given again.
        case repeatedOption(String)
        /// An option that takes a value, last on the line.
        case missingValue(option: String, valueName: String)
        /// A flag given a value with `--flag=value`.
        case unexpectedValue(option: String)
        /// A required positional (by name) or required option (by synopsis) not given.
        case missingArgument(String)
        /// A positional beyond the last one declared.
        case unexpectedArgument(String)
        /// Any other mistake, said in words by whoever found it.
        case invalid(String)
    }

    public let kind: Kind

    public init(_ kind: Kind) { self.kind = kind }

    public init(_ message: String) { kind = .invalid(message) }

    public var description: String {
        switch kind {
        case let .unknownOption(option): return "unknown option \(option)"
        case let .repeatedOption(option): return "\(option) given more than once (it takes one value)"
        case let .missingValue(option, valueName): return "\(option) needs a value (\(valueName))"
        case let .unexpectedValue(option): return "\(option) takes no value"
        case let .missingArgument(name): return "missing \(name)"
        case let .unexpectedArgument(word): return "unexpected argument '\(word)'"
        case let .invalid(message): return message
        }
    }
}
