import FleetCLI

// Everything lives in FleetCLI so that it can be tested; this file only hands over the arguments.
FleetCommandLine.main(arguments: Array(CommandLine.arguments.dropFirst()))
