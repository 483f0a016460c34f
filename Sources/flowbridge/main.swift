import Daemon
import Glibc

exit(await Commands.main(Array(CommandLine.arguments.dropFirst())))
