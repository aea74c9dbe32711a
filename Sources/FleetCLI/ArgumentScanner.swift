/// Reads one command's arguments, for every command alike: an option's value follows it (`--set a=1`) or is
/// joined to it (`--set=a=1`), short options take the next word (`-q 1`), anything else is a positional word.
/// One scanner so that a form one command accepts, every command accepts.
///
///     var scanner = ArgumentScanner(arguments, command: "run", help: help)
///     while let option = try scanner.next() {
///         switch option {
///         case "--out": outputDirectory = try scanner.value()
///         default: try scanner.positional(into: &paths)
///         }
///     }
struct ArgumentScanner {
    let command: String
    let help: String
    /// Whether a bad value's message is followed by the command's whole help (false: by a pointer to it).
    var showsHelp: Bool
    private let arguments: [String]
    private var index = -1
    /// The value joined to the current option (`--set=a=1` → `a=1`), until read.
    private var joined: String?
    /// The current option's name (`--set` of `--set=a=1`), or the positional word, as `next()` returned it.
    private(set) var current = ""

    init(_ arguments: [String], command: String, help: String, showsHelp: Bool = true) {
        self.arguments = arguments
        self.command = command
        self.help = help
        self.showsHelp = showsHelp
    }

    /// The next option's name or positional word; nil after the last. A value joined to the previous option
    /// that nothing read (`--quiet=yes`) is an error rather than silently dropped.
    mutating func next() throws(UsageError) -> String? {
        if let joined { throw failure("\(current) takes no value, got '\(current)=\(joined)'") }
        index += 1
        guard index < arguments.count else { return nil }
        let argument = arguments[index]
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            current = String(argument[..<equals])
            joined = String(argument[argument.index(after: equals)...])
        } else {
            current = argument
        }
        return current
    }

    /// The current option's value: the joined one, or the next word whatever it looks like (`--floor -1ms`).
    mutating func value() throws(UsageError) -> String {
        if let joined {
            self.joined = nil
            return joined
        }
        guard index + 1 < arguments.count else { throw failure("\(current) needs a value") }
        index += 1
        return arguments[index]
    }

    /// The current option's value converted; `--lanes needs a whole number from 1 to 256, got 'x'` when it
    /// does not convert.
    /// Assigned to an optional property, say the type (`... as UInt64`): otherwise T is inferred as the optional
    /// itself and a value that does not convert becomes nil instead of an error.
    mutating func value<T>(_ expectation: String, _ convert: (String) -> T?) throws(UsageError) -> T {
        let text = try value()
        guard let converted = convert(text) else { throw failure("\(current) needs \(expectation), got '\(text)'") }
        return converted
    }

    /// A value the option may go without (`-C`, `-C false`, `--clean=false`): the joined one, else the next
    /// word when `accepts` it (and then consumed), else nil.
    mutating func optionalValue(where accepts: (String) -> Bool) -> String? {
        if let joined {
            self.joined = nil
            return joined
        }
        guard index + 1 < arguments.count, accepts(arguments[index + 1]) else { return nil }
        index += 1
        return arguments[index]
    }

    /// Whether the current word is an option (`-` alone is a positional word: standard input).
    var isOption: Bool { current.hasPrefix("-") && current != "-" }

    /// The current word as a positional argument, or the unknown-option error when it is an option.
    func positional(into words: inout [String]) throws(UsageError) {
        guard !isOption else { throw unknownOption() }
        words.append(current)
    }

    /// `unknown option '--qiuet' for run; did you mean '--quiet'?`, naming the word as given.
    func unknownOption() -> UsageError {
        UsageError.unknownOption(arguments[index], command: command, help: help)
    }

    /// A usage error about the command line, with or without the command's help after it (`showsHelp`).
    func failure(_ message: String) -> UsageError {
        var error = UsageError(message)
        error.showsHelp = showsHelp
        return error
    }
}
