/// A small command-line parser in the shape of swift-argument-parser (which we cannot depend
/// on): each command declares its options, flags and positionals; `--help` prints them.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ message: String) { description = message }
}

/// One option or flag a command accepts.
struct OptionSpec {
    var name: String
    var valueName: String?
    var help: String
    /// A one-letter alias, given as `-x` (e.g. `-o` for `--output`).
    var short: Character? = nil
    var isFlag: Bool { valueName == nil }
}

/// What a command declares about its arguments, and the parsed result.
struct ParsedArguments {
    var positionals: [String] = []
    private(set) var options: [String: String] = [:]
    private(set) var flags: Set<String> = []

    init(_ arguments: [String], spec: [OptionSpec], positionalNames: [String], minPositionals: Int) throws {
        var i = 0
        var onlyPositionals = false
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if !onlyPositionals, arg.count == 2, arg.hasPrefix("-"), let letter = arg.last,
               let option = spec.first(where: { $0.short == letter }) {
                guard option.isFlag || i < arguments.count else { throw UsageError("\(arg) needs a value (\(option.valueName ?? "VALUE"))") }
                if option.isFlag { flags.insert(option.name) } else { options[option.name] = arguments[i]; i += 1 }
                continue
            }
            if onlyPositionals || !arg.hasPrefix("--") || arg == "-" || isNegativeNumber(arg) {
                positionals.append(arg)
                continue
            }
            if arg == "--" { onlyPositionals = true; continue }
            var name = String(arg.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = spec.first(where: { $0.name == name }) else {
                throw UsageError("unknown option --\(name)")
            }
            if option.isFlag {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else if let inlineValue {
                options[name] = inlineValue
            } else {
                guard i < arguments.count else { throw UsageError("--\(name) needs a value (\(option.valueName ?? "VALUE"))") }
                options[name] = arguments[i]
                i += 1
            }
        }
        if positionals.count < minPositionals {
            let missing = positionalNames.dropFirst(positionals.count).first ?? "argument"
            throw UsageError("missing \(missing)")
        }
        if positionals.count > positionalNames.count {
            throw UsageError("unexpected argument '\(positionals[positionalNames.count])'")
        }
    }

    private func isNegativeNumber(_ s: String) -> Bool {
        s.hasPrefix("-") && Double(s) != nil
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func option(_ name: String) -> String? { options[name] }

    func double(_ name: String) throws -> Double? {
        guard let v = options[name] else { return nil }
        guard let d = Double(v), d.isFinite, d >= 0 else { throw UsageError("--\(name) expects a non-negative number, got '\(v)'") }
        return d
    }

    func int(_ name: String) throws -> Int? {
        guard let v = options[name] else { return nil }
        guard let d = Int(v) else { throw UsageError("--\(name) expects a whole number, got '\(v)'") }
        return d
    }

    /// Seconds as a Duration; up to about 31 years, so the conversion cannot overflow.
    func seconds(_ name: String) throws -> Duration? {
        guard let s = try double(name) else { return nil }
        guard s <= 1e9 else { throw UsageError("--\(name) is too large (at most 1000000000 seconds)") }
        return .milliseconds(Int64((s * 1000).rounded()))
    }
}

/// Options every command takes.
let commonOptions: [OptionSpec] = [
    OptionSpec(name: "hci", valueName: "SPEC", help: "controller: virtual (in-process radio with demo peripherals), tcp:HOST:PORT, serial:PATH[@BAUD], hci0 / hci:N (default: $BLE_HCI, else the first Linux adapter that opens)"),
    OptionSpec(name: "capture", valueName: "FILE", help: "write every HCI packet, both directions, to FILE (btsnoop)"),
    OptionSpec(name: "verbose", valueName: nil, help: "log what the stack drops or ignores to stderr"),
    OptionSpec(name: "help", valueName: nil, help: "show this help"),
]

/// For commands that connect: the ATT MTU to ask for.
let mtuOption = OptionSpec(name: "mtu", valueName: "N", help: "ATT MTU to ask for after connecting, 23...517 (default 517)")

/// One `ble` subcommand.
protocol BLECommand: Sendable {
    static var name: String { get }
    static var abstract: String { get }
    static var usage: String { get }
    static var positionalNames: [String] { get }
    static var minPositionals: Int { get }
    static var options: [OptionSpec] { get }
    static var discussion: String { get }
    init(_ arguments: ParsedArguments) throws
    func run() async throws
}

extension BLECommand {
    static var discussion: String { "" }

    static var help: String {
        var lines = ["\(abstract)", "", "USAGE: ble \(usage)", "", "OPTIONS:"]
        for o in options + commonOptions {
            let left = "  " + (o.short.map { "-\($0), " } ?? "") + "--\(o.name)" + (o.valueName.map { " \($0)" } ?? "")
            lines.append(left.padding(max(28, left.count + 2)) + o.help)
        }
        if !discussion.isEmpty { lines += ["", discussion] }
        return lines.joined(separator: "\n")
    }
}
