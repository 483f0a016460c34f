import Commands
import Glibc

exit(await Commands.main(Array(CommandLine.arguments.dropFirst())).rawValue)
